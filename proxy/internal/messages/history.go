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
	return ladder.MendHistory(mb, t, mendMessage, mendBlocks)
}

// mendMessage hands the inputs of one message's tool_use blocks to m.
func mendMessage(m *ladder.HistoryMender, msg gjson.Result) {
	if ladder.Role(msg) != "assistant" {
		return
	}
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.IsObject() && b.Get("type").Str == "tool_use" {
			m.Input(b.Get("input"))
		}
		return true
	})
}

// mendBlocks is mendMessage for a message whose blocks' places the strict
// reading recorded (historyBlocks): each tool_use block's input is found
// there, with no lookup. Input mends only a string, so only a string is
// read.
func mendBlocks(m *ladder.HistoryMender, mb *wire.Members, msg gjson.Result, blocks []wire.Call) {
	if ladder.Role(msg) != "assistant" {
		return
	}
	for _, b := range blocks {
		if b.Args.End == 0 || mb.Body()[b.Args.Start] != '"' || mb.TypeOf(b).Str != "tool_use" {
			continue
		}
		in := mb.Unparsed(b.Args)
		in.Type = gjson.String
		m.Input(in)
	}
}
