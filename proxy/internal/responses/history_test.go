package responses

import (
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/ladder/historytest"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// FuzzHistory checks the mending of a request's input items where the
// strict reading recorded their calls (through a history cache) against
// the walk of every item with gjson (without one): the same body and
// edits. The seeds hold calls to mend and not, without arguments, with
// arguments that are not strings, types that are not strings or are
// escaped, escaped member names and items that are not objects.
func FuzzHistory(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"click","arguments":"{\"selector\": \"#a\""},{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
		`{"input":[{"type":"function_call","name":"f"},{"name":"g","type":"function_call","arguments":{"a":1}},{"arguments":"{'a':1}","type":"function_c\u0061ll"},{"t\u0079pe":"function_call","\u0061rguments":"{'b':2}"}]}`,
		`{"input":[{"type":7,"arguments":"{'a':1}"},{"type":"message","arguments":"{'a':1}"},"function_call",[{"type":"function_call"}],null,{"type":"function_call","arguments":"` + "```json\\n{}```" + `"}]}`,
		`{"input":"hi"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Read(in, nil, nil, wire.Repeats{})
		if err != nil {
			return
		}
		defer m.Release()
		historytest.BothWays(t, m, MendHistory)
	})
}
