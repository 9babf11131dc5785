package responses

import (
	"errors"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// The text under a JSON text.format in a stream: it is the structured value
// itself, so each message item is held whole from its output_item.added
// until the response ends, then checked (and mended or re-asked) and
// released: as the events it came in when it needed no change, else as
// events of toolguard's carrying the whole text at once.

// addMessage starts holding a message item.
func (r *stream) addMessage(ev []byte, e wire.Value) {
	idx, ok := plainIndex(e.Get("output_index"))
	if !ok {
		r.fail(wire.MalformedReply(errors.New("a message item's output_index is not a non-negative integer")))
		return
	}
	if _, emitted := r.index[idx]; r.calls[idx] != nil || emitted {
		r.fail(wire.MalformedReply(errors.New("an output_index is added twice")))
		return
	}
	if len(r.messages) >= maxStreamCalls {
		r.fail(tooLarge("messages"))
		return
	}
	hc := &heldCall{index: idx, id: strings.Clone(e.Get("item.id").Str), waits: true}
	r.calls[idx] = hc
	r.messages = append(r.messages, hc)
	r.holdEvent(hc, ev, e)
}

// settleText checks the text of a response that made no calls.
func (r *stream) settleText(resp gjson.Result) {
	x := r.X
	items := make([]string, 0, len(r.messages))
	for _, hc := range r.messages {
		if hc.item == "" {
			hc.item = itemAt(resp, hc.index)
		}
		if hc.item == "" {
			items = append(items, "null")
		} else {
			items = append(items, hc.item)
		}
	}
	at, shape := readText(gjson.Parse("[" + strings.Join(items, ",") + "]"))
	switch shape {
	case unreadText:
		r.fail(wire.MalformedReply(errUnreadText))
		return
	case noText, refusalOnly:
		for _, hc := range r.messages {
			r.releaseHeld(hc)
		}
		return
	}
	hc := r.messages[at.item]
	c := x.Check(ladder.Sent{Name: ladder.OutputTool, Tool: r.output, Args: wire.Quote(at.text)}, 0, true, cutOff(resp))
	x.Calls = append(x.Calls, c)
	r.anyCalls = true
	t := &turn{output: true, lastText: at.text, first: []*ladder.Call{c}}
	t.Turn = ladder.Turn{Calls: []*ladder.Call{c}, Last: []*ladder.Call{c}, Wire: t}
	if err := x.Settle(r.Ctx, []*ladder.Turn{&t.Turn}, r.Ask); err != nil {
		r.Abort, r.Done = err, true
		return
	}
	if t.Invalid() {
		r.failed = true
		if x.Failure(&t.Turn) != policy.FailPassthrough {
			r.fail(x.FailureError([]*ladder.Turn{&t.Turn}, r.Redact))
			return
		}
	}
	c = t.Calls[0]
	// The text checked is the item's; the events that carry it again (its
	// deltas, which clients join, and its done events) must say the same,
	// or it goes out as events of toolguard's.
	same := copiesAgree(hc, at.part, at.text)
	for _, m := range r.messages {
		switch {
		case m != hc || t.Invalid() || (!c.Changed() && c.Attempt == 0 && same):
			r.releaseHeld(m)
		default:
			r.releaseText(m, at.part, string(c.Args))
		}
		if r.Done {
			return
		}
	}
}

// copiesAgree reports whether every copy of a message's text that its
// events carry is text, at the part the item holds it: the deltas joined
// (as clients join them), the output_text.done, the content_part.done; and
// no event carries another part or a refusal.
func copiesAgree(hc *heldCall, part int, text string) bool {
	var joined strings.Builder
	for _, ev := range hc.events {
		data, _ := wire.EventData(ev)
		e := wire.Parse(data)
		typ := e.Get("type").Str
		if strings.HasPrefix(typ, "response.refusal.") {
			return false
		}
		if !strings.HasPrefix(typ, "response.output_text.") && !strings.HasPrefix(typ, "response.content_part.") {
			continue
		}
		if ci, ok := plainIndex(e.Get("content_index")); !ok || ci != int64(part) {
			return false
		}
		switch typ {
		case "response.output_text.delta":
			d := e.Get("delta")
			if d.Type != gjson.String || joined.Len()+len(d.Str) > len(text) {
				return false
			}
			joined.WriteString(d.Str)
		case "response.output_text.done":
			if t := e.Get("text"); t.Type != gjson.String || t.Str != text {
				return false
			}
		case "response.content_part.added", "response.content_part.done":
			p := e.Get("part")
			if p.Get("type").Str != "output_text" || typ == "response.content_part.done" && p.Get("text").Str != text {
				return false
			}
		}
	}
	return joined.String() == text
}

// releaseText sends a message item as events of toolguard's, its text
// part replaced by text.
func (r *stream) releaseText(hc *heldCall, part int, text string) {
	r.changed = true
	full, err := sjson.Set(hc.item, "content."+strconv.Itoa(part)+".text", text)
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	ci := r.next
	r.next++
	r.index[hc.index] = ci
	r.upstream = append(r.upstream, hc.index)
	r.final[hc.index] = full
	hc.events, hc.released = nil, true
	added, err := sjson.SetRaw(full, "content", "[]")
	if err == nil {
		added, err = sjson.Set(added, "status", "in_progress")
	}
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	id := gjson.Get(full, "id").Str
	at := `,"output_index":` + strconv.FormatInt(ci, 10)
	item := `,"item_id":` + wire.Quote(id)
	ct := `,"content_index":` + strconv.Itoa(part)
	seq := func() string { s := strconv.FormatInt(r.seq, 10); r.seq++; return `,"sequence_number":` + s }
	p := `{"type":"output_text","annotations":[],"text":` + wire.Quote(text) + `}`
	r.write("response.output_item.added", []byte(`{"type":"response.output_item.added"`+seq()+at+`,"item":`+added+`}`))
	r.write("response.content_part.added", []byte(`{"type":"response.content_part.added"`+seq()+item+at+ct+`,"part":{"type":"output_text","annotations":[],"text":""}}`))
	r.write("response.output_text.delta", []byte(`{"type":"response.output_text.delta"`+seq()+item+at+ct+`,"delta":`+wire.Quote(text)+`}`))
	r.write("response.output_text.done", []byte(`{"type":"response.output_text.done"`+seq()+item+at+ct+`,"text":`+wire.Quote(text)+`}`))
	r.write("response.content_part.done", []byte(`{"type":"response.content_part.done"`+seq()+item+at+ct+`,"part":`+p+`}`))
	r.write("response.output_item.done", []byte(`{"type":"response.output_item.done"`+seq()+at+`,"item":`+full+`}`))
}
