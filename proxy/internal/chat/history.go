package chat

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/repair"
)

// MendHistory mends the form of the tool calls of the assistant messages a
// client sends back (see ladder.HistoryMender). It returns the body
// unchanged, byte for byte, when nothing needed mending.
func MendHistory(body []byte) ([]byte, []repair.Edit, error) {
	m := ladder.NewHistoryMender()
	readTop(body).messages.ForEach(func(_, msg gjson.Result) bool {
		// One pass over each message's members: a lookup each would walk
		// its content again.
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
			return true
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
		return true
	})
	return m.Body(body)
}
