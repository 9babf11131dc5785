package chat

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestRoleIsTheLookups checks that a message's role read from its first
// bytes is the role a lookup reads, for messages written as clients write
// them and for every other way of writing one.
func TestRoleIsTheLookups(t *testing.T) {
	for _, msg := range []string{
		`{"role":"assistant","content":null}`,
		`{"role":"tool","tool_call_id":"a","content":"<a href=\"/\">x</a>"}`,
		`{"role":"user"}`,
		`{"role":""}`,
		`{"role":"developer","content":"x"}`,
		`{"role":"assistantassistant","content":"x"}`,
		`{"role":"Assistant"}`,
		`{"role":"assist\u0061nt"}`,
		`{"role":"as sistant"}`,
		`{"role":"assistant`,
		`{"role":"assistant}`,
		`{ "role":"assistant"}`,
		`{"role" : "assistant"}`,
		`{"content":"{\"role\":\"tool\"}","role":"assistant"}`,
		`{"r\u006fle":"assistant"}`,
		`{"role":7}`,
		`{"role":null}`,
		`{}`,
		`[{"role":"assistant"}]`,
		`"role"`,
	} {
		m := gjson.Parse(msg)
		if got, want := role(m), m.Get("role").Str; got != want {
			t.Errorf("%s: role %q, the lookup %q", msg, got, want)
		}
	}
}
