package repair

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// benchKinds are the argumentsCases benchmarked, one per kind of edit.
var benchKinds = []string{
	"valid", "object-arguments", "fence", "tokens", "prose-before-and-after", "single-quotes",
	"python-literals", "trailing-comma", "click-truncated", "double-encoded",
	"concatenated-identical", "string-for-integer", "click-bare-string", "click-other-case-key", "click-element-key",
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

// BenchmarkTextCallsPlainText is the common case: content that holds no
// call must cost next to nothing.
func BenchmarkTextCallsPlainText(b *testing.B) {
	prose := strings.Repeat("The weather in Paris is mild today, with a light breeze from the west and some clouds. ", 24)
	b.SetBytes(int64(len(prose)))
	b.ReportAllocs()
	for b.Loop() {
		TextCalls(prose, textTools, allTextFormats)
		TextCallHold(prose, textTools, allTextFormats)
	}
}

// BenchmarkTextCallsMarkupAndBrackets: content with many '<' and '['
// (markup, links, or a hostile reply's 1 MiB of them) is compared with the
// markers that start with its first two bytes only.
//
//	go test -run '^$' -bench TextCallsMarkup ./repair
func BenchmarkTextCallsMarkupAndBrackets(b *testing.B) {
	prose := strings.Repeat("The weather in Paris is <b>mild</b> today; see [the forecast](https://x.test/a) and `code`. ", 200)
	for _, c := range []struct{ name, text string }{
		{"prose-18KB", prose},
		{"lt-1MiB", strings.Repeat("<", maxTextScan)},
		{"bracket-1MiB", strings.Repeat("[", maxTextScan)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				TextCalls(c.text, textTools, allTextFormats)
				TextCallHold(c.text, textTools, allTextFormats)
			}
		})
	}
}

func BenchmarkTextCallsHermes(b *testing.B) {
	text := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"
	b.ReportAllocs()
	for b.Loop() {
		TextCalls(text, textTools, allTextFormats)
	}
}
