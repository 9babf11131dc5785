package ladder

import (
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// TextCalls is the ladder's step for tool calls written as text: it reads
// the calls a reply's content holds (repair.TextCalls) when the rules allow
// it, and returns them as calls the model sent, each with a text-call edit,
// and the content left around them. It returns nil when the content holds
// no call, when the global mode does not repair, or when the setting of a
// call's tool (TOOLGUARD_TEXT_CALLS, the text_calls key) does not allow its
// written form: all or nothing, as the parser decides. turn numbers the
// calls' ids.
func (x *Exchange) TextCalls(content string, turn int) ([]Sent, string) {
	t := x.ReadTextCalls(content, turn)
	return t.Sent, t.Rest
}

// TextCallsFound is what ReadTextCalls found in a content.
type TextCallsFound struct {
	Sent []Sent
	Rest string // the content left around the calls
	// Start and End are where the first call starts and the last ends.
	Start, End int
}

// ReadTextCalls is TextCalls, with where the calls are in the content.
func (x *Exchange) ReadTextCalls(content string, turn int) TextCallsFound {
	none := TextCallsFound{Rest: content}
	global := x.globalRules()
	if !global.Mode.Repairs() || global.TextCalls == policy.TextCallsOff || x.Tools.Len() == 0 {
		return none
	}
	f := repair.TextFormats{Marked: global.TextCalls.Marked(), BareJSON: global.TextCalls.BareJSON(), ReAct: global.TextCalls.ReAct(), Quota: x.quota()}
	found := repair.TextCalls(content, x.Tools.Names, f)
	if found == nil {
		return none
	}
	sent := make([]Sent, len(found))
	for i, tc := range found {
		written := content[tc.Start:tc.End]
		rules := x.Policy.Rules(tc.Name)
		if !rules.Mode.Repairs() || textGroup(tc, written).Cap(rules.TextCalls) != textGroup(tc, written) {
			return none
		}
		sent[i] = Sent{
			ID:    "call_text_" + strconv.Itoa(turn) + "_" + strconv.Itoa(i),
			Name:  tc.Name,
			Args:  wire.Quote(string(tc.Arguments)),
			Edits: []repair.Edit{{Kind: repair.KindTextCall, Before: wire.Clip(written, 200), After: tc.Name}},
		}
		if tc.Unread {
			// The arguments are the text written, a JSON string: the call
			// as it stands is invalid, and is re-asked.
			sent[i].Args = string(tc.Arguments)
			sent[i].Unread = "the call was written as text, and its arguments could not be read as one JSON object; call the tool again with its arguments as a JSON object"
		}
	}
	return TextCallsFound{Sent: sent, Rest: repair.TextContent(content, found), Start: found[0].Start, End: found[len(found)-1].End}
}

// textGroup is the setting that a call's written form needs.
func textGroup(tc repair.TextCall, written string) policy.TextCalls {
	switch {
	case tc.Format == "react":
		return policy.TextCallsAll
	case tc.InProse, tc.Format == "fenced-json", tc.Format == "json-list",
		tc.Format == "llama3-json" && !strings.HasPrefix(strings.TrimSpace(written), "<|python_tag|>"):
		return policy.TextCallsJSON
	}
	return policy.TextCallsMarked
}

// ReadsTextCalls reports whether the rules convert any call written as
// text: when not, text passes untouched.
func (x *Exchange) ReadsTextCalls() bool {
	global := x.globalRules()
	return global.Mode.Repairs() && global.TextCalls != policy.TextCallsOff && x.Tools.Len() > 0
}

// TextCallHold is how much of a streamed content, from its start, may go
// to the client now: the rest may be the start of a call written as text
// (repair.TextCallHold). All of it when the rules convert none.
func (x *Exchange) TextCallHold(content string) int {
	if !x.ReadsTextCalls() {
		return len(content)
	}
	global := x.globalRules()
	f := repair.TextFormats{Marked: global.TextCalls.Marked(), BareJSON: global.TextCalls.BareJSON(), ReAct: global.TextCalls.ReAct(), Quota: x.quota()}
	return repair.TextCallHold(content, x.Tools.Names, f)
}
