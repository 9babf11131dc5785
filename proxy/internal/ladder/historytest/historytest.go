// Package historytest holds what the tests of every format's history
// mending share: the mending compared both ways, and the first turn's
// benchmark.
package historytest

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// Mend is a format's MendHistory.
type Mend func(m *wire.Members, t *ladder.HistoryUse) ([]byte, []repair.Edit, error)

// BothWays mends the history of m, a request read strictly, without a
// history cache (every item walked with gjson) and through a new one (the
// calls found where the strict reading recorded them), fails t unless the
// bodies and the edits are the same, and returns them.
func BothWays(t testing.TB, m *wire.Members, mend Mend) ([]byte, []repair.Edit) {
	t.Helper()
	once, onceEdits, err := mend(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	cached, cachedEdits, err := mend(m, ladder.NewHistoryCache().Use(1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cached, once) || !reflect.DeepEqual(cachedEdits, onceEdits) {
		t.Fatalf("%s mended through the cache:\n%s %v\nwithout:\n%s %v", m.Body(), cached, cachedEdits, once, onceEdits)
	}
	return once, onceEdits
}

// Conversation is a request's body after 49 turns of calls and their
// results: head (up to the items' array's '['), then first, then each
// turn's items (from a ',').
func Conversation(head, first string, turn func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(first)
	for i := range 49 {
		b.WriteString(turn(i))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// Result is a tool's result as a turn of Conversation holds it, in a JSON
// string: 594 bytes of HTML, its quotes escaped.
var Result = strings.Repeat(`<div class=\"row\">clicked</div> `, 18)

// FirstTurn benchmarks the reading of body, a conversation toolguard has
// not seen, by read (read), and the reading and the mending of its history
// through a history cache that does not know it (read+mend): a new
// conversation's first turn, on the request's side.
func FirstTurn(b *testing.B, body []byte, read func([]byte) (*wire.Members, error), mend Mend) {
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := read(body)
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
			m, err := read(body)
			if err != nil {
				b.Fatal(err)
			}
			scope++ // a scope the cache has not seen: nothing known
			if _, _, err := mend(m, c.Use(scope)); err != nil {
				b.Fatal(err)
			}
			m.Release()
		}
	})
}
