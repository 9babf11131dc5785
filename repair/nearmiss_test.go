package repair

import (
	"fmt"
	"strings"
	"testing"
)

// nearMisses are names a model writes for a declared one that differ from
// it by a word, however close in spelling: each means something else, or
// may, and is never mended.
var nearMisses = []struct{ declared, sent string }{
	{"max_price", "min_price"},
	{"is_enabled", "is_disabled"},
	{"to_account", "from_account"},
	{"set_user", "get_user"},
	{"unlock_door", "lock_door"},
	{"known_tool", "unknown_tool"},
	{"include_archived", "exclude_archived"},
	{"allow_list", "disallow_list"},
	{"start_time", "end_time"},
	{"selector", "element"},
	{"query", "qeury"},
	{"get_weather", "get_wether"},
}

// styleVariants are the same words written in another style: these are
// mended.
var styleVariants = []struct{ declared, sent string }{
	{"max_price", "maxPrice"},
	{"max_price", "Max-Price"},
	{"max_price", "MAX_PRICE"},
	{"get_user", "getUser"},
	{"list_files", "list_file"},
	{"selector", "Selector"},
}

func TestToolNameNearMisses(t *testing.T) {
	for _, nm := range nearMisses {
		declared := []string{nm.declared, "other_tool"}
		if got, ok := ToolName(nm.sent, declared); ok {
			t.Errorf("ToolName(%q, %q) = %q, want no match: it is another word", nm.sent, declared, got)
		}
	}
	for _, sv := range styleVariants {
		declared := []string{sv.declared, "other_tool"}
		if got, ok := ToolName(sv.sent, declared); !ok || got != sv.declared {
			t.Errorf("ToolName(%q, %q) = %q, %v; want %q", sv.sent, declared, got, ok, sv.declared)
		}
	}
	if got, ok := ToolName("functions.getUser", []string{"get_user"}); !ok || got != "get_user" {
		t.Errorf("ToolName(functions.getUser) = %q, %v; want get_user", got, ok)
	}
}

// TestKeyNearMisses calls a tool with its one required key written as
// another word, with the schema open and closed: the call is left for the
// re-ask, and its errors name what the tool declares. The same key in
// another style is renamed.
func TestKeyNearMisses(t *testing.T) {
	for _, closed := range []bool{false, true} {
		for _, nm := range nearMisses {
			t.Run(fmt.Sprintf("%s-closed-%v", nm.sent, closed), func(t *testing.T) {
				s := compile(t, keySchema(nm.declared, closed))
				got := Arguments(quoteJSON(t, fmt.Sprintf(`{%q: "x"}`, nm.sent)), s, Options{Syntax: true, SchemaGuided: true, Tool: "do_it"})
				if got.Valid() {
					t.Fatalf("mended {%q} to %s with edits %v, want a re-ask", nm.sent, got.Args, got.Edits)
				}
				want := fmt.Sprintf(`unknown property %q; tool "do_it" declares %q`, nm.sent, nm.declared)
				if !hasMessage(got, want) {
					t.Errorf("errors %v, want one saying %s", got.Errors, want)
				}
			})
		}
		for _, sv := range styleVariants {
			t.Run(fmt.Sprintf("%s-closed-%v", sv.sent, closed), func(t *testing.T) {
				s := compile(t, keySchema(sv.declared, closed))
				got := Arguments(quoteJSON(t, fmt.Sprintf(`{%q: "x"}`, sv.sent)), s, mendAll)
				if want := fmt.Sprintf(`{%q:"x"}`, sv.declared); !got.Valid() || string(got.Args) != want {
					t.Errorf("Arguments({%q}) = %s, errors %v; want %s", sv.sent, got.Args, got.Errors, want)
				}
			})
		}
	}
}

// TestNearMissNotDropped: under additionalProperties false an unknown key
// that resembles a declared one is kept for the re-ask, not dropped, even
// when the call would then validate: {"min_price": 10} may have meant a
// bound the tool does not have.
func TestNearMissNotDropped(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{"query":{"type":"string"},"max_price":{"type":"number"}},"required":["query"],"additionalProperties":false}`)
	got := Arguments(quoteJSON(t, `{"query": "shoes", "min_price": 10}`), s, mendAll)
	if got.Valid() {
		t.Fatalf("mended to %s with edits %v, want a re-ask", got.Args, got.Edits)
	}
	// A key unlike every declared name is still dropped.
	got = Arguments(quoteJSON(t, `{"query": "shoes", "page_token": "abc"}`), s, mendAll)
	if !got.Valid() || string(got.Args) != `{"query":"shoes"}` {
		t.Errorf("got %s, errors %v; want the unknown key dropped", got.Args, got.Errors)
	}
}

func TestUnknownKeysHint(t *testing.T) {
	nested := `{"type":"object","properties":{"filter":{"type":"object","properties":{"lang":{"type":"string"}},"required":["lang"]}},"required":["filter"]}`
	tests := []struct {
		name, schema, give, tool, want string
	}{
		{"root", keySchema("max_price", false), `{"min_price": 10}`, "search", `/: unknown property "min_price"; tool "search" declares "max_price"`},
		{"no-tool", keySchema("max_price", false), `{"min_price": 10}`, "", `/: unknown property "min_price"; the schema declares "max_price"`},
		{"two-keys", keySchema("a_b", true), `{"x": 1, "y": 2}`, "t", `/: unknown properties "x", "y"; tool "t" declares "a_b"`},
		{"nested", nested, `{"filter": {"language": "en"}}`, "t", `/filter: unknown property "language"; the object at /filter declares "lang"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Arguments(quoteJSON(t, tt.give), compile(t, tt.schema), Options{Syntax: true, SchemaGuided: true, Tool: tt.tool})
			var lines []string
			for _, e := range got.Errors {
				if e.Keyword == KeywordUnknown {
					lines = append(lines, e.String())
				}
			}
			if len(lines) != 1 || lines[0] != tt.want {
				t.Errorf("hints %q, want [%q]", lines, tt.want)
			}
		})
	}

	// A hint is bounded however many keys and names there are.
	var props, keys []string
	for i := range 200 {
		props = append(props, fmt.Sprintf("%q:{}", strings.Repeat("p", 100)+fmt.Sprint(i)))
		keys = append(keys, fmt.Sprintf("%q:1", strings.Repeat("k", 100)+fmt.Sprint(i)))
	}
	s := compile(t, `{"type":"object","properties":{`+strings.Join(props, ",")+`},"required":["`+strings.Repeat("p", 100)+`0"]}`)
	got := Arguments(quoteJSON(t, "{"+strings.Join(keys, ",")+"}"), s, Options{Tool: strings.Repeat("t", 1000)})
	hints := 0
	for _, e := range got.Errors {
		if e.Keyword != KeywordUnknown {
			continue
		}
		hints++
		if len(e.Message) > 3000 || !strings.Contains(e.Message, "and 192 more") || !strings.Contains(e.Message, "and 180 more") {
			t.Errorf("hint of %d bytes: %.300s", len(e.Message), e.Message)
		}
	}
	if hints != 1 {
		t.Errorf("%d hints, want 1: %v", hints, got.Errors)
	}
}

func keySchema(name string, closed bool) string {
	return fmt.Sprintf(`{"type":"object","properties":{%q:{"type":["string","number"]}},"required":[%q],"additionalProperties":%v}`, name, name, !closed)
}

func hasMessage(r Result, msg string) bool {
	for _, e := range r.Errors {
		if e.Message == msg {
			return true
		}
	}
	return false
}
