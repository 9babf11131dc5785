package responses

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Calls written as text in a stream, as in a chat stream: the events of the
// response's message item pass as they come unless its text so far may be
// the start of a call (ladder.Exchange.TextCallHold); from the event where
// it may, they are held, and released as they came the moment the text
// cannot be a call, or past the bounds (wire.MaxTextHold and the rest). An
// event is held or released whole: the text before a call that shares its
// delta waits with it. At the response's end, when it made no other call,
// the text is read for calls: those found go out as function_call items of
// toolguard's after the message, which keeps the text left around them
// (and is left out when none is left and none of it went out).

// textMsg is the message item whose text is read for calls.
type textMsg struct {
	hc   *heldCall // its index, and the events held
	text strings.Builder
	// sent: its events have started going out (its index is the
	// client's); emitted is the text the client has.
	sent    bool
	emitted int
	holding bool
	since   time.Time
	work    int
	// passing: the message is no longer read (bounds, another shape);
	// its events go as any other item's.
	passing bool
	done    bool // its output_item.done is held
}

// readsText reports whether a message item added now is read for calls.
func (r *stream) readsText() bool {
	return r.output == nil && !r.textOff && len(r.order) == 0 && r.X.ReadsTextCalls()
}

// addTextMessage starts reading a message item for calls; a second
// message ends the reading (which message the calls would be in is a
// guess).
func (r *stream) addTextMessage(ev []byte, e wire.Value, typ string) bool {
	if r.msg != nil {
		r.stopText()
		return false
	}
	idx, ok := plainIndex(e.Get("output_index"))
	if _, emitted := r.index[idx]; !ok || emitted || r.calls[idx] != nil {
		return false // the usual checks refuse it
	}
	r.msg = &textMsg{hc: &heldCall{index: idx, id: strings.Clone(e.Get("item.id").Str)}}
	r.textEvent(ev, e, typ)
	return true
}

// stopText releases what is held of the message and reads it no more.
func (r *stream) stopText() {
	r.textOff = true
	if m := r.msg; m != nil && !m.passing {
		r.flushText(m)
		m.passing = true
	}
}

// textEvent handles an event of the message read for calls, of the type
// typ. Most go out at once (flushText), as they came: only an event still
// held after it is copied out of the stream's buffer.
func (r *stream) textEvent(ev []byte, e wire.Value, typ string) {
	hc := r.msg.hc
	n := len(hc.events)
	hc.events = append(hc.events, ev)
	r.handled, r.handledEv, r.handledType = e, ev, typ
	r.readTextEvent(ev, e, typ)
	r.handled, r.handledEv, r.handledType = wire.Value{}, nil, ""
	if len(hc.events) == n+1 {
		hc.events[n] = bytes.Clone(ev)
	}
}

func (r *stream) readTextEvent(ev []byte, e wire.Value, typ string) {
	m := r.msg
	r.total += int64(len(ev))
	if r.total > r.maxBytes {
		r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_response_too_large",
			Msg: "the stream's text held is larger than TOOLGUARD_MAX_RESPONSE_BYTES"})
		return
	}
	if strings.HasPrefix(typ, "response.refusal.") || strings.HasPrefix(typ, "response.content_part.") && e.Get("part.type").Str != "output_text" {
		r.stopText()
		return
	}
	if ci := e.Get("content_index"); ci.Exists() {
		if n, ok := plainIndex(ci); !ok || n != 0 {
			r.stopText() // a second part: not the one text the calls are read in
			return
		}
	}
	switch typ {
	case "response.output_text.delta":
		d := e.Get("delta")
		if d.Type != gjson.String {
			r.stopText()
			return
		}
		m.text.WriteString(d.Str)
		r.textHold(m)
		return
	case "response.output_item.done":
		m.done = true
		m.hc.item = strings.Clone(e.Get("item").Raw)
	}
	if m.sent && !m.holding || m.done && !m.holding {
		r.flushText(m)
	}
}

// textHold decides what of the message's text may go out now.
func (r *stream) textHold(m *textMsg) {
	text := m.text.String()
	m.work += len(text)
	if len(text) > wire.MaxTextScanned || m.work > wire.MaxTextHoldWork {
		r.stopText()
		return
	}
	hold := r.X.TextCallHold(text)
	if hold >= len(text) || hold < m.emitted {
		m.holding = false
		r.flushText(m)
		return
	}
	if !m.holding {
		m.holding, m.since = true, time.Now()
	}
	if len(text)-hold > wire.MaxTextHold || time.Since(m.since) > wire.MaxTextHoldTime {
		r.stopText()
	}
}

// flushText sends the held events of the message as they came,
// renumbered.
func (r *stream) flushText(m *textMsg) {
	hc := m.hc
	if !m.sent && len(hc.events) > 0 {
		if hc.index != r.next {
			r.changed = true
		}
		r.index[hc.index] = r.next
		r.upstream = append(r.upstream, hc.index)
		r.next++
		m.sent = true
	}
	for _, ev := range hc.events {
		r.total -= int64(len(ev))
		var e wire.Value
		var typ string
		if len(ev) > 0 && len(ev) == len(r.handledEv) && &ev[0] == &r.handledEv[0] {
			e, typ = r.handled, r.handledType // the event being handled: its members recorded
		} else {
			data, _ := wire.EventData(ev)
			e = wire.Value{Result: wire.Parse(data)} // held: no members recorded
			typ = e.Get("type").Str
		}
		if typ == "response.output_item.done" {
			r.final[hc.index] = strings.Clone(e.Get("item").Raw)
		}
		r.emit(ev, e, hc.index)
		if r.Done {
			return
		}
	}
	clear(hc.events)
	hc.events = hc.events[:0] // for the next events, without a new slice each
	m.emitted = m.text.Len()
}

// settleTextCalls reads the calls written in the held text of a response
// that made no other call, at its end. It reports whether it converted
// any; if not, the text goes out as it came.
func (r *stream) settleTextCalls(resp gjson.Result) bool {
	m := r.msg
	if m == nil || m.passing || len(m.hc.events) == 0 {
		return false
	}
	text := m.text.String()
	if m.hc.item == "" {
		m.hc.item = itemAt(resp, m.hc.index)
	}
	at, shape := readText(gjson.Parse("[" + orNull(m.hc.item) + "]"))
	if shape != oneText || at.part != 0 || at.text != text || !heldCopiesAgree(m.hc, text) {
		r.stopText()
		return false
	}
	found := r.X.ReadTextCalls(text, 0)
	if found.Sent == nil || found.Start < m.emitted {
		r.stopText() // no call, or part of it went out as text
		return false
	}
	x := r.X
	var calls []*ladder.Call
	for k, s := range found.Sent {
		s.Raw = `{"id":"fc_text_` + strconv.Itoa(k) + `","type":"function_call","status":"completed","arguments":` + s.Args +
			`,"call_id":` + wire.Quote(s.ID) + `,"name":` + wire.Quote(s.Name) + `}`
		calls = append(calls, x.Check(s, 0, true, cutOff(resp)))
	}
	r.anyCalls = true
	r.textCalls = true
	m.passing = true
	r.total = 0
	if m.sent {
		// The client has the message and some of its text: it ends with
		// the text before the calls and the text after them.
		client := text[:m.emitted] + strings.TrimRightFunc(text[m.emitted:found.Start], unicode.IsSpace)
		if after := strings.TrimSpace(text[found.End:]); after != "" {
			client += "\n" + after
		}
		r.closeText(m, client[m.emitted:], client)
	} else if strings.TrimSpace(found.Rest) != "" {
		r.releaseText(m.hc, 0, found.Rest)
	} else {
		r.changed = true // the message had nothing but the calls
	}
	if r.Done {
		return true
	}
	r.settle(calls, map[*ladder.Call]bool{}, nil)
	return true
}

func orNull(item string) string {
	if item == "" {
		return "null"
	}
	return item
}

// heldCopiesAgree reports whether the held events that carry the
// message's whole text again carry text.
func heldCopiesAgree(hc *heldCall, text string) bool {
	for _, ev := range hc.events {
		data, _ := wire.EventData(ev)
		e := wire.Parse(data)
		switch e.Get("type").Str {
		case "response.output_text.done":
			if t := e.Get("text"); t.Type != gjson.String || t.Str != text {
				return false
			}
		case "response.content_part.done":
			if e.Get("part.text").Str != text {
				return false
			}
		}
	}
	return true
}

// closeText ends a message item the client has started: the rest of its
// text in one delta, then its done events, carrying the text the client
// has (client), as events of toolguard's.
func (r *stream) closeText(m *textMsg, delta, client string) {
	r.changed = true
	hc := m.hc
	full, err := sjson.Set(hc.item, "content.0.text", client)
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	r.final[hc.index] = full
	hc.events = nil
	at := `,"output_index":` + strconv.FormatInt(r.index[hc.index], 10)
	item := `,"item_id":` + wire.Quote(gjson.Get(full, "id").Str)
	ct := `,"content_index":0`
	seq := func() string { s := strconv.FormatInt(r.seq, 10); r.seq++; return `,"sequence_number":` + s }
	if delta != "" {
		r.write("response.output_text.delta", []byte(`{"type":"response.output_text.delta"`+seq()+item+at+ct+`,"delta":`+wire.Quote(delta)+`}`))
	}
	part := `{"type":"output_text","annotations":[],"text":` + wire.Quote(client) + `}`
	r.write("response.output_text.done", []byte(`{"type":"response.output_text.done"`+seq()+item+at+ct+`,"text":`+wire.Quote(client)+`}`))
	r.write("response.content_part.done", []byte(`{"type":"response.content_part.done"`+seq()+item+at+ct+`,"part":`+part+`}`))
	r.write("response.output_item.done", []byte(`{"type":"response.output_item.done"`+seq()+at+`,"item":`+full+`}`))
}
