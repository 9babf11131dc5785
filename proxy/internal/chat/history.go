package chat

import (
	"strings"

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
	return ladder.MendHistory(m, t, mendMessage, mendCalls)
}

// historyCalls are the members of a message that hold its calls, whose
// places the strict reading records (see wire.Members.Calls), each at the
// index a wire.Call names it by.
var historyCalls = []wire.CallMember{
	toolCalls:    {Name: "tool_calls", Args: []string{"function", "arguments"}},
	functionCall: {Name: "function_call", One: true, Args: []string{"arguments"}},
}

const (
	toolCalls = iota
	functionCall
)

// toolCallArgs is the path to a tool call's arguments that the walk of a
// message looks up, the one the strict reading records (historyCalls).
var toolCallArgs = strings.Join(historyCalls[toolCalls].Args, ".")

// mendCalls is mendMessage for a message whose calls' places the strict
// reading recorded: those of its tool_calls, then its function_call, as
// mendMessage hands them over.
func mendCalls(m *ladder.HistoryMender, mb *wire.Members, msg gjson.Result, calls []wire.Call) {
	if ladder.Role(msg) != "assistant" {
		return
	}
	for _, c := range calls {
		// A value of tool_calls that is not an object is no call.
		if c.Member == toolCalls && mb.Body()[c.Start] == '{' {
			m.CallAt(mb, c, historyCalls[toolCalls].Args[0])
		}
	}
	for _, c := range calls {
		if c.Member == functionCall {
			m.CallAt(mb, c, "")
		}
	}
}

// mendMessage hands the calls of one message to m.
func mendMessage(m *ladder.HistoryMender, msg gjson.Result) {
	// The role by a lookup, not one ForEach over every member: ForEach
	// reads each value, unescaping each string (a tool result's whole
	// content), where a lookup skips the values it passes. Most messages
	// are not an assistant's, and their role comes first. An assistant's
	// members are then read in one pass. (A name given twice was refused
	// by the strict reading.)
	if ladder.Role(msg) != "assistant" {
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
				mendCall(m, c)
			}
			return true
		})
	}
	if fc.IsObject() {
		m.Call(fc.Get("arguments"), fc)
	}
}

// mendCall hands the arguments of c, an object of a message's tool_calls,
// to m: found by one lookup, not one for the function and another in it;
// the function object only when they are missing, for Call to add them.
func mendCall(m *ladder.HistoryMender, c gjson.Result) {
	args, fn := c.Get(toolCallArgs), gjson.Result{}
	if !args.Exists() {
		fn = c.Get(historyCalls[toolCalls].Args[0])
	}
	m.Call(args, fn)
}
