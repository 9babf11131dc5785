package validate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validate"
)

// Hostile schemas from clients: each is answered, quickly and within
// bounded memory, with a compile error (the proxy then passes that tool's
// calls unvalidated) or with a working schema. None hangs or crashes.
func TestHostileSchemas(t *testing.T) {
	nested := func(depth int) string {
		return strings.Repeat(`{"type":"object","properties":{"a":`, depth) + `{"type":"string"}` + strings.Repeat(`}}`, depth)
	}
	enum := make([]string, 100000)
	for i := range enum {
		enum[i] = fmt.Sprintf("%q", fmt.Sprint("v", i))
	}
	for _, tc := range []struct {
		name    string
		schema  string
		args    string
		compile bool // whether it compiles
		valid   bool // whether args validate, when it compiles
		refused bool // whether compiling failed because a URL was refused
	}{
		{"deeply-nested", nested(10000), `{"a":{}}`, false, false, false},
		{"nested-within-limits", nested(20), `{"a":{"a":{}}}`, true, true, false},
		{"over-size-limit", `{"type":"object","description":"` + strings.Repeat("x", validate.MaxSchemaBytes) + `"}`, `{}`, false, false, false},
		{"huge-enum", `{"type":"object","properties":{"e":{"enum":[` + strings.Join(enum[:20000], ",") + `]}}}`, `{"e":"v19999"}`, true, true, false},
		{"huge-enum-miss", `{"type":"object","properties":{"e":{"enum":[` + strings.Join(enum[:20000], ",") + `]}}}`, `{"e":"nope"}`, true, false, false},
		{"recursive-ref-root", `{"$ref":"#"}`, `{}`, false, false, false},
		{"recursive-ref-through-properties", `{"type":"object","properties":{"child":{"$ref":"#"}}}`, `{"child":{"child":{"child":{}}}}`, true, true, false},
		{"mutual-refs", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `{}`, false, false, false},
		{"catastrophic-pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"^(a+)+$"}}}`, `{"s":"` + strings.Repeat("a", 100000) + `b"}`, true, false, false},
		{"lookahead-pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"(?=a)a"}}}`, `{"s":"a"}`, false, false, false},
		{"huge-repeat-pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"a{1000}{1000}"}}}`, `{"s":"a"}`, false, false, false},
		{"remote-ref", `{"$ref":"https://example.com/schema.json"}`, `{}`, false, false, true},
		{"file-ref", `{"$ref":"file:///etc/passwd"}`, `{}`, false, false, true},
		{"unknown-draft", `{"$schema":"https://example.com/my-draft","type":"object"}`, `{}`, false, false, true},
		{"id-elsewhere", `{"$id":"https://example.com/root.json","type":"object","properties":{"x":{"$ref":"other.json"}}}`, `{}`, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := validate.Compile([]byte(tc.schema))
			if (err == nil) != tc.compile {
				t.Fatalf("compile error %v, want compiles=%v", err, tc.compile)
			}
			if err != nil {
				if tc.refused != errors.Is(err, validate.ErrURLRefused) {
					t.Errorf("error %v: refused URL %v, want %v", err, !tc.refused, tc.refused)
				}
				return
			}
			_, errs := s.ValidateJSON([]byte(tc.args))
			if (errs == nil) != tc.valid {
				t.Errorf("errors %v, want valid=%v", errs, tc.valid)
			}
		})
	}
}

func TestDraftsAreHonouredAsDeclared(t *testing.T) {
	for _, tc := range []struct {
		name, schema, args string
		valid              bool
	}{
		// draft-04: exclusiveMaximum is a boolean modifier of maximum.
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","maximum":5,"exclusiveMaximum":true}}}`, `{"n":5}`, false},
		// draft-07 (the Vercel AI SDK): additionalProperties false.
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, `{"a":"x","b":1}`, false},
		// 2020-12 (LangChain JS): prefixItems exists only from this draft.
		{"draft-2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"string"}]}}}`, `{"p":[1]}`, false},
		// Without $schema, 2020-12 is assumed.
		{"no-schema-keyword", `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"string"}]}}}`, `{"p":["ok"]}`, true},
		{"arguments-must-be-an-object", `{}`, `"a string"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := validate.Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			_, errs := s.ValidateJSON([]byte(tc.args))
			if (errs == nil) != tc.valid {
				t.Errorf("errors %v, want valid=%v", errs, tc.valid)
			}
		})
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := validate.NewCache(10)
	for i := range 100 {
		if _, err := c.Get(fmt.Appendf(nil, `{"type":"object","title":"t%d"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.Size != 10 || st.Misses != 100 {
		t.Errorf("stats %+v, want size 10 and 100 misses", st)
	}
	broken := []byte(`{"type":12}`)
	calls := 0
	c.OnCompileError = func([]byte, error) { calls++ }
	for range 3 {
		if _, err := c.Get(broken); err == nil {
			t.Fatal("broken schema compiled")
		}
	}
	if st := c.Stats(); calls != 1 || st.CompileErrors != 1 || st.Hits < 2 {
		t.Errorf("compile error reported %d times (stats %+v), want once and cached", calls, st)
	}
}
