package messages

import (
	"fmt"
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/ladder/historytest"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// conversation is a Messages request after 49 turns of calls and their
// results, about 41 KB: most of its bytes are the tool results.
func conversation() []byte {
	return historytest.Conversation(`{"model":"m","max_tokens":100,"tools":[{"name":"click","input_schema":{"type":"object","properties":{"selector":{"type":"string"}}}}],"messages":[`, `{"role":"user","content":"Click the login button."}`, func(i int) string {
		return fmt.Sprintf(`,{"role":"assistant","content":[{"type":"text","text":"I will click it."},{"type":"tool_use","id":"toolu_%d","name":"click","input":{"selector":"#button-%d"}}]}`+
			`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}`, i, i, i, historytest.Result)
	})
}

// BenchmarkFirstTurn is a new conversation's first turn, on the request's
// side (see historytest.FirstTurn).
func BenchmarkFirstTurn(b *testing.B) {
	historytest.FirstTurn(b, conversation(), func(body []byte) (*wire.Members, error) {
		return Read(body, nil, nil, wire.Repeats{})
	}, MendHistory)
}
