package responses

import (
	"fmt"
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/ladder/historytest"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// conversation is a Responses request after 49 turns of calls and their
// outputs, about 42 KB: most of its bytes are the outputs.
func conversation() []byte {
	return historytest.Conversation(`{"model":"m","tools":[{"type":"function","name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}}}}],"input":[`, `{"role":"user","content":"Click the login button."}`, func(i int) string {
		return fmt.Sprintf(`,{"type":"message","role":"assistant","content":[{"type":"output_text","text":"I will click it."}]},{"type":"function_call","call_id":"call_%d","name":"click","arguments":"{\"selector\":\"#button-%d\"}"}`+
			`,{"type":"function_call_output","call_id":"call_%d","output":"%s"}`, i, i, i, historytest.Result)
	})
}

// BenchmarkFirstTurn is a new conversation's first turn, on the request's
// side (see historytest.FirstTurn).
func BenchmarkFirstTurn(b *testing.B) {
	historytest.FirstTurn(b, conversation(), func(body []byte) (*wire.Members, error) {
		return Read(body, nil, nil, wire.Repeats{})
	}, MendHistory)
}
