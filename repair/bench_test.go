package repair

import (
	"testing"

	"github.com/tidwall/gjson"
)

// benchKinds are the argumentsCases benchmarked, one per kind of edit.
var benchKinds = []string{
	"valid", "object-arguments", "fence", "tokens", "prose-before-and-after", "single-quotes",
	"python-literals", "trailing-comma", "click-truncated", "double-encoded",
	"concatenated-identical", "string-for-integer", "click-bare-string", "click-element-key",
	"camel-case-key", "enum-case", "scalar-for-array", "drop-unknown", "envelope-name-arguments",
	"missing-required",
}

// BenchmarkArguments measures each kind of mending; "valid" is the common
// case and must cost about what BenchmarkValidateJSON does.
func BenchmarkArguments(b *testing.B) {
	byName := map[string]argumentsCase{}
	for _, tt := range argumentsCases {
		byName[tt.name] = tt
	}
	for _, name := range benchKinds {
		tt, ok := byName[name]
		if !ok {
			b.Fatalf("no case %q", name)
		}
		s := compile(b, tt.schema)
		raw := []byte(tt.give)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Arguments(raw, s, mendAll)
			}
		})
	}
}

// BenchmarkValidateJSON is the floor for BenchmarkArguments/valid: the
// validation of the same arguments alone.
func BenchmarkValidateJSON(b *testing.B) {
	s := compile(b, clickSchema)
	text := []byte(gjson.Parse(argumentsCases[0].give).Str)
	b.ReportAllocs()
	for b.Loop() {
		s.ValidateJSON(text)
	}
}
