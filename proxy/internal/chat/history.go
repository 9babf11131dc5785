package chat

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// MendHistory mends the form of the tool calls of the assistant messages a
// client sends back (see ladder.HistoryMender), skipping the messages of a
// prefix that the history cache knows needs nothing (t: the request's use
// of the cache, if not nil; see ladder.MendHistory). It returns the body unchanged, byte for byte, when
// nothing needed mending.
//
// m is where the body's members are (see Read).
func MendHistory(m *wire.Members, t *ladder.HistoryUse) ([]byte, []repair.Edit, error) {
	return ladder.MendHistory(m, t, mendMessage)
}

// mendMessage hands the calls of one message to m.
func mendMessage(m *ladder.HistoryMender, msg gjson.Result) {
	// The role by a lookup, not one ForEach over every member: ForEach
	// reads each value, unescaping each string (a tool result's whole
	// content), where a lookup skips the values it passes. Most messages
	// are not an assistant's, and their role comes first. An assistant's
	// members are then read in one pass. (A name given twice was refused
	// by the strict reading.)
	if msg.Get("role").Str != "assistant" {
		return
	}
	var tcs, fc gjson.Result
	msg.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "tool_calls":
			tcs = v
		case "function_call":
			fc = v
		}
		return true
	})
	if tcs.IsArray() {
		tcs.ForEach(func(_, c gjson.Result) bool {
			if c.IsObject() {
				fn := c.Get("function")
				m.Call(fn.Get("arguments"), fn)
			}
			return true
		})
	}
	if fc.IsObject() {
		m.Call(fc.Get("arguments"), fc)
	}
}
