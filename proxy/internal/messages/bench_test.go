package messages

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// conversation is a request after 49 turns of calls and their results,
// about 41 KB: most of its bytes are the tool results, with escaped quotes.
func conversation() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":100,"tools":[{"name":"click","input_schema":{"type":"object","properties":{"selector":{"type":"string"}}}}],"messages":[`)
	b.WriteString(`{"role":"user","content":"Click the login button."}`)
	for i := range 49 {
		fmt.Fprintf(&b, `,{"role":"assistant","content":[{"type":"text","text":"I will click it."},{"type":"tool_use","id":"toolu_%d","name":"click","input":{"selector":"#button-%d"}}]}`, i, i)
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}`, i, strings.Repeat(`<div class=\"row\">clicked</div> `, 18))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkFirstTurn reads a conversation toolguard has not seen (read),
// and mends its history through a history cache that does not know it
// (read+mend): a new conversation's first turn, on the request's side.
func BenchmarkFirstTurn(b *testing.B) {
	body := conversation()
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := Read(body, nil, nil, wire.Repeats{})
			if err != nil {
				b.Fatal(err)
			}
			m.Release()
		}
	})
	b.Run("read+mend", func(b *testing.B) {
		b.ReportAllocs()
		c := ladder.NewHistoryCache()
		scope := uint64(0)
		for b.Loop() {
			m, err := Read(body, nil, nil, wire.Repeats{})
			if err != nil {
				b.Fatal(err)
			}
			scope++ // a scope the cache has not seen: nothing known
			if _, _, err := MendHistory(m, c.Use(scope)); err != nil {
				b.Fatal(err)
			}
			m.Release()
		}
	})
}
