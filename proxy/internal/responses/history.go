package responses

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// MendHistory mends the form of the function_call items of the input a
// client sends back (see ladder.HistoryMender), skipping the items of a
// prefix that the history cache knows needs nothing (t: the request's use
// of the cache, if not nil; see ladder.MendHistory). It returns the body unchanged, byte for byte, when
// nothing needed mending.
//
// m is where the body's members are (see Read).
func MendHistory(m *wire.Members, t *ladder.HistoryUse) ([]byte, []repair.Edit, error) {
	return ladder.MendHistory(m, t, func(m *ladder.HistoryMender, item gjson.Result) {
		if item.IsObject() && item.Get("type").String() == "function_call" {
			m.Call(item.Get("arguments"), item)
		}
	})
}
