package validate_test

import (
	"testing"

	"github.com/toolguard/toolguard/internal/bfcl"
	"github.com/toolguard/toolguard/validate"
)

// FuzzCompile compiles client-sent schemas and validates arguments against
// them: no panic, no hang, and the same schema always gives the same answer.
func FuzzCompile(f *testing.F) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		f.Fatal(err)
	}
	for i, c := range cases {
		if i%50 != 0 {
			continue
		}
		for _, fn := range c.Functions {
			f.Add([]byte(fn.Parameters), []byte(`{}`))
		}
	}
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{}`))
	f.Add([]byte(`{"type":"object","properties":{"s":{"pattern":"^(a+)+$"}}}`), []byte(`{"s":"aaaa!"}`))
	f.Add([]byte(`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"maximum":1,"exclusiveMaximum":true}}}`), []byte(`{"n":1}`))
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		s, err := validate.Compile(schema)
		if err != nil {
			return
		}
		_, first := s.ValidateJSON(args)
		_, again := s.ValidateJSON(args)
		if (first == nil) != (again == nil) {
			t.Fatalf("validation is not deterministic")
		}
	})
}
