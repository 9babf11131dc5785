package ladder

import (
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// objectTextSeeds are arguments as the body holds them: strings whose text
// is an object or not, with escapes of every kind, lone and paired
// surrogates, invalid UTF-8 and escapes, and values that are not strings.
var objectTextSeeds = []string{
	`"{\"selector\":\"#a\"}"`,
	`" \n{\"a\":[1,{\"b\":null}]}\t"`,
	`"{}"`,
	`"{"`,
	`"[1]"`,
	`"\"{}\""`,
	`"{\"a\":\"\\u00e9\"}"`,
	`"{\"a\":\"\u00e9\"}"`,
	`"{\"\ud83d\ude00\":1}"`,
	`"{\"\ud800\":1}"`,
	`"{\"a\":1}\ud800"`,
	`"\ud800{}"`,
	"\"{\\\"a\\\":\\\"\xff\\\"}\"",
	`"{\"a\":1}\x"`,
	`"{\"a\":1}`,
	`"{\"a\":1,}"`,
	`"{\u0022a\u0022:1}"`,
	`"{'a':1}"`,
	`{"a":1}`,
	`null`,
	`12`,
	`""`,
	`"`,
	``,
}

// TestObjectTextIsGjsons: arguments read by objectText are an object's
// text exactly when gjson's unescaped string is valid JSON and an object,
// as the mender read them before.
func TestObjectTextIsGjsons(t *testing.T) {
	for _, raw := range objectTextSeeds {
		checkObjectText(t, raw)
	}
}

func FuzzObjectText(f *testing.F) {
	for _, raw := range objectTextSeeds {
		f.Add(raw)
	}
	f.Fuzz(checkObjectText)
}

func checkObjectText(t *testing.T, raw string) {
	m := NewHistoryMender()
	args := gjson.Parse(raw)
	want := args.Type == gjson.String && gjson.Valid(args.Str) && gjson.Parse(args.Str).IsObject()
	if got := m.objectText(args); got != want {
		t.Fatalf("%q: objectText %v, gjson %v", raw, got, want)
	}
	// Unparsed, as the chat reading hands them over: its text alone.
	unparsed := wire.Parse([]byte(raw))
	unparsed.Type, unparsed.Str = gjson.Null, ""
	if got := m.objectText(unparsed); got != want && unparsed.Raw == raw {
		t.Fatalf("%q unparsed: objectText %v, gjson %v", raw, got, want)
	}
}

// TestRoleIsTheLookups checks that an item's role read from its first
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
		if got, want := Role(m), m.Get("role").Str; got != want {
			t.Errorf("%s: role %q, the lookup %q", msg, got, want)
		}
	}
}
