package chat

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// BenchmarkStreamEventRead is what every data event of a stream costs
// before toolguard decides anything about it: its data taken out, its lines
// looked at for a byte order mark, its JSON read strictly (duplicate and
// case-variant names refused).
func BenchmarkStreamEventRead(b *testing.B) {
	envelope := func(delta string) string {
		return `data: {"id":"chatcmpl-C4GmNWjg23NFd2DxEgJ1aMbICfhdA","object":"chat.completion.chunk","created":1755133847,` +
			`"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c",` +
			`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":null}],"obfuscation":"a1b2"}` + "\n\n"
	}
	for _, bm := range []struct{ name, event string }{
		{"text", envelope(`{"content":"word "}`)},
		{"call-delta", envelope(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"loca"}}]}`)},
		{"text-4KiB", envelope(`{"content":"` + strings.Repeat("word ", 820) + `"}`)},
	} {
		b.Run(bm.name, func(b *testing.B) {
			ev := []byte(bm.event)
			b.SetBytes(int64(len(ev)))
			b.ReportAllocs()
			for b.Loop() {
				if wire.BOMAtLineStart(ev) {
					b.Fatal("byte order mark")
				}
				data, _ := wire.EventData(ev)
				if err := wire.Strict(data, chunkShape); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
