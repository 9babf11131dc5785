package messages

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Calls written as text. When a request declares tools, a text block that
// no tool_use block comes before is read for calls written in the formats
// models emit (ladder.Exchange.ReadTextCalls), streamed or not; thinking is
// never read. The calls found go up the ladder like tool_use blocks: the
// text left around them stays in its block (an emptied block is dropped),
// the calls follow as tool_use blocks of toolguard's after the content's
// last block, and stop_reason says tool_use. Each text block is read on its
// own, and every call of every block counts: a reply whose text blocks hold
// calls in two of them gets them all. A call's id is
// toolu_text_<block>_<n>, in Anthropic's form.

// textID turns the ladder's id of a call written as text into Anthropic's
// form.
func textID(id string) string {
	if rest, ok := strings.CutPrefix(id, "call_"); ok {
		return "toolu_" + rest
	}
	return id
}

// textCalls reads the text blocks of a content (an array) that come before
// any tool_use block for calls written as text. It returns the calls and,
// by block index, the text left around the calls of each block that held
// some.
func textCalls(x *ladder.Exchange, content gjson.Result) ([]ladder.Sent, map[int]string) {
	if !x.ReadsTextCalls() || !content.IsArray() {
		return nil, nil
	}
	var sent []ladder.Sent
	var rests map[int]string
	i := -1
	content.ForEach(func(_, b gjson.Result) bool {
		i++
		switch b.Get("type").Str {
		case "tool_use":
			return false
		case "text":
		default:
			return true
		}
		text := b.Get("text")
		if text.Type != gjson.String || len(text.Str) > wire.MaxTextScanned {
			return true
		}
		found := x.ReadTextCalls(text.Str, i)
		if found.Sent == nil {
			return true
		}
		for _, s := range found.Sent {
			s.ID = textID(s.ID)
			sent = append(sent, s)
		}
		if rests == nil {
			rests = map[int]string{}
		}
		rests[i] = textAround(text.Str, found)
		return true
	})
	return sent, rests
}

// textAround is the text of a block left around its calls: what came
// before them, and what came after on a line of its own.
func textAround(text string, found ladder.TextCallsFound) string {
	before := strings.TrimRightFunc(text[:found.Start], unicode.IsSpace)
	if after := strings.TrimSpace(text[found.End:]); after != "" {
		if before == "" {
			return after
		}
		return before + "\n" + after
	}
	return before
}

// convertedContent is the content of a reply whose text held calls, for a
// re-ask's assistant turn: each text block with what was left of it, and
// the calls as tool_use blocks at the end (their inputs are written by the
// re-ask from the calls).
func convertedContent(content gjson.Result, rests map[int]string, calls []*ladder.Call) string {
	var blocks []string
	i := -1
	content.ForEach(func(_, b gjson.Result) bool {
		i++
		rest, ok := rests[i]
		switch {
		case !ok:
			blocks = append(blocks, b.Raw)
		case rest != "":
			blocks = append(blocks, textBlock(rest))
		}
		return true
	})
	for _, c := range calls {
		blocks = append(blocks, `{"type":"tool_use","id":`+wire.Quote(c.ID)+`,"name":`+wire.Quote(c.Name)+`,"input":{}}`)
	}
	return "[" + strings.Join(blocks, ",") + "]"
}

// rewriteConverted returns the content array of a reply whose text held
// calls, as the ladder made it: each text block with what was left of it
// (dropped when nothing was), then the valid calls as tool_use blocks. When
// no call is valid, the content stays as the model sent it: text.
func rewriteConverted(first []byte, tt *ladder.Turn) ([]byte, int, bool, error) {
	t := turnOf(tt)
	var calls []string
	keep, _ := tt.Kept(t.first)
	for _, c := range t.first {
		if keep[c] && c.Valid() {
			s, err := block(c)
			if err != nil {
				return nil, 0, false, err
			}
			calls = append(calls, s)
		}
	}
	for _, c := range tt.Added() {
		s, err := block(c)
		if err != nil {
			return nil, 0, false, err
		}
		calls = append(calls, s)
	}
	if len(calls) == 0 {
		return nil, 0, false, nil
	}
	var blocks []string
	i := -1
	var err error
	gjson.ParseBytes(first[t.start:t.end]).ForEach(func(_, b gjson.Result) bool {
		i++
		rest, ok := t.rests[i]
		switch {
		case !ok:
			blocks = append(blocks, b.Raw)
		case rest != "":
			var s []byte
			if s, err = wire.Patch([]byte(b.Raw), "text", wire.Quote(rest)); err != nil {
				return false
			}
			blocks = append(blocks, string(s))
		}
		return true
	})
	if err != nil {
		return nil, 0, false, err
	}
	blocks = append(blocks, calls...)
	return []byte("[" + strings.Join(blocks, ",") + "]"), len(calls), true, nil
}

// readsText reports whether the stream's text blocks are read for calls
// written as text: the rules convert some, and no tool_use block of the
// upstream's came before.
func (r *stream) readsText() bool {
	if !r.X.ReadsTextCalls() {
		return false
	}
	for _, b := range r.calls {
		if b.written == nil {
			return false
		}
	}
	return true
}

// openText sends a text block's content_block_start if it is still kept.
func (r *stream) openText(b *heldBlock) {
	if b.pendingStart == nil {
		return
	}
	ev := b.pendingStart
	b.pendingStart, r.pendingText = nil, nil
	data, _ := wire.EventData(ev)
	r.pass(b, ev, wire.Value{Result: wire.Parse(data)})
	r.flushQueued()
}

// flushQueued sends the events that waited behind a kept start.
func (r *stream) flushQueued() {
	for _, ev := range r.queued {
		r.out.Write(ev)
	}
	r.queued = nil
}

// textHold decides what of a text block's text may go out now: all of it,
// unless its end may be the start of a call written as text
// (ladder.Exchange.TextCallHold), which is held, within the bounds of
// wire.MaxTextHold and the rest. It writes the text released, and reports
// whether the event being handled must not go out as it came (its text is
// held, or went out in a delta of toolguard's).
func (r *stream) textHold(b *heldBlock) bool {
	text := b.text.String()
	r.holdWork += len(text)
	if !r.readsText() || len(text) > wire.MaxTextScanned || r.holdWork > wire.MaxTextHoldWork {
		return r.releaseText(b)
	}
	hold := max(r.X.TextCallHold(text), b.emitted)
	if hold == len(text) {
		if !b.holding {
			b.emitted = len(text)
			return false
		}
		return r.releaseText(b)
	}
	if !b.holding {
		b.holding, b.holdSince = true, time.Now()
	}
	if len(text)-hold > wire.MaxTextHold || time.Since(b.holdSince) > wire.MaxTextHoldTime {
		return r.releaseText(b)
	}
	r.writeText(b, text[b.emitted:hold])
	b.emitted = hold
	return true
}

// releaseText sends what is held of a text block, and reports whether the
// event being handled must not go out as it came.
func (r *stream) releaseText(b *heldBlock) bool {
	text := b.text.String()
	if !b.holding {
		b.emitted = len(text)
		return false
	}
	r.writeText(b, text[b.emitted:])
	b.emitted, b.holding = len(text), false
	return true
}

// writeText sends text as a text_delta of toolguard's.
func (r *stream) writeText(b *heldBlock, text string) {
	if text == "" {
		return
	}
	r.openText(b)
	r.out.WriteString("event: content_block_delta\n")
	wire.WriteData(r.out, []byte(`{"type":"content_block_delta","index":`+strconv.FormatInt(b.client, 10)+
		`,"delta":{"type":"text_delta","text":`+wire.Quote(text)+`}}`))
}

// settleText reads a finished text block for calls written as text. Those
// found become calls of the message, checked at once and settled with the
// others at the message_delta; the text around them goes out, what is held
// of the rest as text.
func (r *stream) settleText(b *heldBlock) {
	text := b.text.String()
	if b.holding {
		r.holdWork += len(text) // the read below, bounded with the holds
	}
	if !b.holding || !r.readsText() || len(text) > wire.MaxTextScanned || r.holdWork > wire.MaxTextHoldWork {
		r.releaseText(b)
		r.openText(b)
		return
	}
	found := r.X.ReadTextCalls(text, int(b.index))
	if found.Sent == nil || found.Start < b.emitted {
		// No call, or part of one went out as text: it stays text.
		r.releaseText(b)
		r.openText(b)
		return
	}
	if len(r.calls)+len(found.Sent) > maxStreamCalls {
		r.fail(invalidEvent(fmt.Sprintf("more than %d tool calls", maxStreamCalls)))
		return
	}
	sent := text[:b.emitted]
	rest := sent + strings.TrimRightFunc(text[b.emitted:found.Start], unicode.IsSpace)
	if after := strings.TrimSpace(text[found.End:]); after != "" {
		if rest != "" && strings.TrimRightFunc(rest, unicode.IsSpace) == rest {
			rest += "\n"
		}
		rest += after
	}
	r.writeText(b, rest[len(sent):])
	b.rest, b.hasRest, b.holding, b.emitted = rest, true, false, len(text)
	r.converted, r.anyCalls = true, true
	for _, s := range found.Sent {
		s.ID = textID(s.ID)
		c := &heldBlock{index: -1, client: -1, typ: "tool_use", stopped: true, written: &s}
		c.call = r.X.Check(s, 0, false, false)
		r.calls = append(r.calls, c)
	}
}
