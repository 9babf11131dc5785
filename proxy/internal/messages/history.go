package messages

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// MendHistory mends the tool_use blocks of the assistant turns a client
// sends back (see ladder.HistoryMender.Input): an input the client kept as
// a string, as a server that could not parse the call sent it, becomes the
// object the API wants. The messages of a prefix that the history cache
// knows needs nothing are skipped (t: the request's use of the cache, if
// not nil; see ladder.MendHistory). It returns the body unchanged, byte for
// byte, when nothing needed mending.
//
// mb is where the body's members are (see Read).
func MendHistory(mb *wire.Members, t *ladder.HistoryUse) ([]byte, []repair.Edit, error) {
	return ladder.MendHistory(mb, t, func(m *ladder.HistoryMender, msg gjson.Result) {
		if msg.Get("role").Str != "assistant" {
			return
		}
		msg.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.IsObject() && b.Get("type").Str == "tool_use" {
				m.Input(b.Get("input"))
			}
			return true
		})
	})
}
