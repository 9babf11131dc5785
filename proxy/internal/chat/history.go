package chat

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// MendHistory mends the form of the tool calls of the assistant messages a
// client sends back (see ladder.HistoryMender), skipping the messages of a
// prefix that cache c (if not nil) knows needs nothing for scope (see
// ladder.HistoryCache.Scope and ladder.MendHistory). It returns the body unchanged, byte for byte, when
// nothing needed mending.
//
// m is where the body's members are (see Read).
func MendHistory(m *wire.Members, c *ladder.HistoryCache, scope uint64) ([]byte, []repair.Edit, error) {
	return ladder.MendHistory(m, c, scope, mendMessage)
}

// mendMessage hands the calls of one message to m.
func mendMessage(m *ladder.HistoryMender, msg gjson.Result) {
	// One pass over the message's members: a lookup each would walk its
	// content again.
	var role, tcs, fc gjson.Result
	msg.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			role = v
		case "tool_calls":
			tcs = v
		case "function_call":
			fc = v
		}
		return true
	})
	if role.Str != "assistant" {
		return
	}
	if tcs.IsArray() {
		tcs.ForEach(func(_, c gjson.Result) bool {
			if c.IsObject() {
				m.Call(c.Get("function.arguments"), c.Get("function"))
			}
			return true
		})
	}
	if fc.IsObject() {
		m.Call(fc.Get("arguments"), fc)
	}
}
