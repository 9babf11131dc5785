package responses

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// What a stream may hold, whatever the upstream sends.
const (
	maxStreamCalls = 256  // function_call items held at once
	maxStreamItems = 4096 // output items numbered
)

// stream handles the events of a streamed response (wire.Events). Events
// pass as they come, renumbered when they must be, except those of
// function_call items: each is held from its output_item.added until its
// output_item.done, then checked. A call valid as received goes out at
// once as the events it came in, when every call before it has gone out;
// the others wait for the response's end, where the ladder settles them
// (mending, re-asking without streaming) and they go out as events of
// toolguard's. The terminal event (response.completed, .incomplete) is
// rewritten to hold exactly the items the client was sent, with the usage
// summed over every attempt.
//
// What the client sees stays consistent: its sequence_number values
// increase by one from the first, and output_index values are given in the
// order items are emitted (clients check that an added item is the next
// of the output).
type stream struct {
	ladder.Session
	maxBytes int64
	// output stands for the text under a JSON text.format: message items
	// are then held whole until the response ends (messages), checked,
	// and released.
	output   *ladder.Tool
	messages []*heldCall
	// msg is the message whose text is read for calls written as text
	// (see textcalls.go); textOff is set once none is read any more, and
	// textCalls once calls were read from it.
	msg       *textMsg
	textOff   bool
	textCalls bool
	out       *bytes.Buffer
	wire.Ending

	seq      int64           // the next sequence_number the client sees
	next     int64           // the next output_index the client sees
	index    map[int64]int64 // upstream output_index to the client's, for items emitted
	upstream []int64         // for each client index, the upstream one (-1: an item of a re-ask)
	final    map[int64]string
	calls    map[int64]*heldCall // function_call items by upstream output_index
	order    []*heldCall         // the calls, in the order they were added
	named    bool                // the upstream names its events (event: lines)
	// changed is set once what the client sees differs from what the
	// upstream sent (renumbered, held past another item, mended, dropped):
	// the terminal event is then rewritten.
	changed  bool
	anyCalls bool
	failed   bool
	finished bool  // the terminal event has gone out
	total    int64 // bytes held
	// event is where the members of the event being handled are, as its
	// strict reading recorded them, so each lookup does not read the
	// event again from its start.
	event *wire.Members
	// events reads each event strictly; one that repeats the last read in
	// full with other text is not tokenised again.
	events *wire.EventReader
	// handled is the event being handled (handledEv, of the type
	// handledType), read with its members, while it is the last of the
	// message's held events (textEvent): flushText reads it so, not again
	// from its bytes.
	handled     wire.Value
	handledEv   []byte
	handledType string
}

// heldCall is a function_call item of the stream and its events.
type heldCall struct {
	index    int64 // upstream output_index
	id       string
	events   [][]byte
	item     string // the item as its output_item.done gave it ("" before)
	args     string // the arguments of its function_call_arguments.done
	call     *ladder.Call
	released bool
	// waits: the call could not go out early (not valid as received, or
	// a call before it waits); it waits for the response's end.
	waits bool
	// mixed: its item and its arguments' done event disagree (see sent).
	mixed bool
}

var _ wire.Events = (*stream)(nil)

// NewStream returns the format's handling of a stream's events. What it
// holds is bounded by maxBytes.
func (q *Request) NewStream(s ladder.Session, maxBytes int64) wire.Events {
	return &stream{Session: s, maxBytes: maxBytes, output: q.output, index: map[int64]int64{}, final: map[int64]string{}, calls: map[int64]*heldCall{}, event: wire.NewMembers(""), events: wire.NewEventReader(eventShape, s.Starts)}
}

// MayWait implements wire.Events: the terminal events settle calls and may
// re-ask. Their types, response.completed and response.incomplete, are
// found with one search, for the word they share; each occurrence is then
// checked for either (an item's "status":"completed" is neither).
func (r *stream) MayWait(ev []byte) bool {
	for at := 0; ; {
		i := bytes.Index(ev[at:], []byte("complete"))
		if i < 0 {
			return false
		}
		i += at
		before, after := ev[:i], ev[i+len("complete"):]
		if bytes.HasSuffix(before, []byte("response.in")) ||
			bytes.HasSuffix(before, []byte("response.")) && bytes.HasPrefix(after, []byte("d")) {
			return true
		}
		at = i + 1
	}
}

// End implements wire.Events: a stream must end after its terminal event
// (what follows it, an Open Responses [DONE], passes).
func (r *stream) End() *wire.Error {
	if r.finished {
		return nil
	}
	return &wire.Error{Type: "upstream_error", Code: "upstream_stream_truncated",
		Msg: "the upstream's stream ended before its response.completed"}
}

// Fail implements wire.Events: the stream ends with an error event, as the
// Responses API sends one.
func (r *stream) Fail(out *bytes.Buffer, ae *wire.Error) {
	if r.anyCalls || ae.Code == "tool_call_invalid" {
		r.X.Outcome = ladder.OutcomeFailed
		fmt.Fprintf(out, ": toolguard outcome=%s reasks=%d\n\n", ladder.OutcomeFailed, r.X.Reasks)
	}
	data := `{"type":"error","code":` + wire.Quote(ae.Code) + `,"message":` + wire.Quote(ae.Msg) + `,"param":null,"sequence_number":` + strconv.FormatInt(r.seq, 10) + `}`
	if ae.Details != nil {
		if d, err := sjson.Set(data, "details", ae.Details); err == nil {
			data = d
		}
	}
	r.seq++
	out.WriteString("event: error\n")
	wire.WriteData(out, []byte(data))
}

func (r *stream) fail(ae *wire.Error) { r.Failure, r.Done = ae, true }

// Handle implements wire.Events.
func (r *stream) Handle(ev []byte, out *bytes.Buffer) (bool, error) {
	r.out = out
	r.handle(ev)
	r.out = nil // out goes back to a pool once the client has it
	return r.Result()
}

func (r *stream) handle(ev []byte) {
	if wire.BOMAtLineStart(ev) {
		r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_invalid_event",
			Msg: "a line of the upstream's stream starts with a byte order mark, which clients read differently"})
		return
	}
	data, ok := wire.EventData(ev)
	if !ok {
		r.out.Write(ev) // comments and other fields pass through
		return
	}
	if string(data) == "[DONE]" {
		// Open Responses ends a stream so; the terminal event came before.
		r.out.Write(ev)
		return
	}
	if err := r.events.Read(data, r.event); err != nil {
		r.fail(invalidEvent(err.Error()))
		return
	}
	// Read in place: ev is the stream's buffer, valid only until Handle
	// returns (wire.Events), so what is kept of it is copied (strings.Clone,
	// holdEvent, textEvent). Its members are looked up where the strict
	// reading found them.
	e := wire.Value{Result: wire.Parse(data), M: r.event}
	typ := e.Get("type").Str
	if name, ok := wire.EventName(ev); ok {
		r.named = true
		if string(name) != typ {
			// Some clients dispatch on the event's name, others on its
			// type: an event whose two differ is read differently.
			r.fail(invalidEvent(fmt.Sprintf("an event named %q has the type %q", wire.Clip(string(name), 64), wire.Clip(typ, 64))))
			return
		}
	}
	switch typ {
	case "response.completed", "response.incomplete":
		r.finish(ev, e)
		return
	case "response.failed", "error":
		// The upstream's own failure ends the stream: it goes on as it
		// is, and the calls held with it are dropped; text held goes
		// before it, as it came.
		r.stopText()
		if r.Done {
			return
		}
		r.emit(ev, e, -1)
		r.finished = true
		return
	case "response.output_item.added":
		if e.Get("item.type").Str == "function_call" {
			r.stopText() // a real call: the text is no call
			if !r.Done {
				r.addCall(ev, e)
			}
			return
		}
		if r.output != nil && e.Get("item.type").Str == "message" {
			r.addMessage(ev, e)
			return
		}
		if e.Get("item.type").Str == "message" && r.readsText() && r.addTextMessage(ev, e, typ) {
			return
		}
	}
	oi := e.Get("output_index")
	if !oi.Exists() {
		if e.Get("item").Exists() || strings.HasPrefix(typ, "response.output_item.") || strings.HasPrefix(typ, "response.function_call_arguments.") {
			// An item, or its arguments, that clients would file at an
			// index of their own guessing: toolguard could not tell
			// whether it is a call it must check.
			r.fail(wire.MalformedReply(fmt.Errorf("a %s event without an output_index", wire.Clip(typ, 64))))
			return
		}
		r.emit(ev, e, -1)
		return
	}
	idx, ok := plainIndex(oi)
	if !ok {
		r.fail(wire.MalformedReply(fmt.Errorf("an output_index is %s, not a non-negative integer", wire.Clip(oi.Raw, 32))))
		return
	}
	if hc := r.calls[idx]; hc != nil && !hc.released {
		r.holdEvent(hc, ev, e)
		return
	}
	if m := r.msg; m != nil && !m.passing && m.hc.index == idx {
		r.textEvent(ev, e, typ)
		return
	}
	if r.output != nil && (strings.HasPrefix(typ, "response.output_text.") || strings.HasPrefix(typ, "response.content_part.")) {
		// Text of no message this stream added: clients would show it,
		// and it was not held to be checked.
		r.fail(wire.MalformedReply(fmt.Errorf("%s for output_index %d, which is not a message added before", wire.Clip(typ, 64), idx)))
		return
	}
	if typ == "response.output_item.done" {
		if _, added := r.index[idx]; !added {
			r.fail(wire.MalformedReply(fmt.Errorf("an item is done at output_index %d, which was never added", idx)))
			return
		}
		if e.Get("item.type").Str == "function_call" {
			// Added as another type: clients read the call the done event
			// carries, which toolguard has not held and checked.
			r.fail(wire.MalformedReply(fmt.Errorf("the item at output_index %d is done as a function_call, but was added as another type", idx)))
			return
		}
		r.final[idx] = strings.Clone(e.Get("item").Raw)
	}
	if typ == "response.output_item.added" {
		if len(r.upstream) >= maxStreamItems {
			r.fail(tooLarge("output items"))
			return
		}
		r.index[idx] = r.next
		r.upstream = append(r.upstream, idx)
		r.next++
	}
	if strings.HasPrefix(typ, "response.function_call_arguments.") {
		// Arguments of no function_call item this stream added: a client
		// may still assemble a call from them.
		r.fail(wire.MalformedReply(fmt.Errorf("%s for output_index %d, which is not a function_call added before", typ, idx)))
		return
	}
	r.emit(ev, e, idx)
}

// plainIndex returns an index written as every client reads it: a JSON
// number of digits only.
func plainIndex(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	return n, err == nil && n >= 0
}

func invalidEvent(why string) *wire.Error {
	return &wire.Error{Type: "upstream_error", Code: "upstream_invalid_event",
		Msg: "the upstream sent a stream event that cannot be read unambiguously (" + wire.Clip(why, 200) + ")"}
}

func tooLarge(what string) *wire.Error {
	return &wire.Error{Type: "upstream_error", Code: "upstream_stream_too_large",
		Msg: "the upstream's stream holds too many " + what}
}

// emit sends an event on, with its sequence_number and output_index (of
// the upstream item idx, -1 for none) as the client counts them: as the
// upstream sent it (ev) when they are the same, else rewritten from e (ev
// nil: always rewritten).
func (r *stream) emit(ev []byte, e wire.Value, idx int64) {
	patches := r.renumber(e, idx)
	if len(patches) == 0 && ev != nil {
		r.out.Write(ev)
		return
	}
	r.changed = true
	data := []byte(e.Raw)
	var err error
	for i := 0; i < len(patches); i += 2 {
		if data, err = wire.Patch(data, patches[i], patches[i+1]); err != nil {
			r.fail(wire.WriteFailed(err))
			return
		}
	}
	r.write(e.Get("type").Str, data)
}

// renumber returns the patches (path, value) that give an event the
// client's numbers, and counts it.
func (r *stream) renumber(e wire.Value, idx int64) []string {
	var patches []string
	if sn := e.Get("sequence_number"); sn.Exists() {
		if n, ok := plainIndex(sn); !ok || n != r.seq {
			patches = append(patches, "sequence_number", strconv.FormatInt(r.seq, 10))
		}
		r.seq++
	}
	if idx >= 0 {
		if ci, ok := r.index[idx]; ok && ci != idx {
			patches = append(patches, "output_index", strconv.FormatInt(ci, 10))
		}
	}
	return patches
}

// write sends an event of toolguard's, named if the upstream names its
// events.
func (r *stream) write(typ string, data []byte) {
	if r.named {
		r.out.WriteString("event: " + typ + "\n")
	}
	wire.WriteData(r.out, data)
}

// addCall starts holding a function_call item.
func (r *stream) addCall(ev []byte, e wire.Value) {
	idx, ok := plainIndex(e.Get("output_index"))
	if !ok {
		r.fail(wire.MalformedReply(errors.New("a function_call item's output_index is not a non-negative integer")))
		return
	}
	if _, emitted := r.index[idx]; r.calls[idx] != nil || emitted {
		r.fail(wire.MalformedReply(fmt.Errorf("output_index %d is added twice", idx)))
		return
	}
	if len(r.order) >= maxStreamCalls {
		r.fail(tooLarge("function calls"))
		return
	}
	r.anyCalls = true
	hc := &heldCall{index: idx, id: strings.Clone(e.Get("item.id").Str)}
	r.calls[idx] = hc
	r.order = append(r.order, hc)
	r.holdEvent(hc, ev, e)
}

// holdEvent keeps an event of a held call; at the call's output_item.done,
// the call is complete and may go out.
func (r *stream) holdEvent(hc *heldCall, ev []byte, e wire.Value) {
	hc.events = append(hc.events, append([]byte(nil), ev...))
	r.total += int64(len(ev))
	if r.total > r.maxBytes {
		r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_response_too_large",
			Msg: "the stream's function calls held are larger than TOOLGUARD_MAX_RESPONSE_BYTES"})
		return
	}
	switch e.Get("type").Str {
	case "response.function_call_arguments.done":
		hc.args = strings.Clone(e.Get("arguments").Raw)
	case "response.output_item.done":
		hc.item = strings.Clone(e.Get("item").Raw)
		r.releaseReady()
	}
}

// sent is a complete held call as the ladder reads it: the item of its
// output_item.done, whose arguments are authoritative (some models stream
// no argument deltas), else the arguments of its .done event.
//
// When the two disagree, or the item has no arguments, clients that read
// one or the other would run different calls: the call cannot go out as
// the events it came in (mixed is set), and the item it goes out as
// carries the arguments checked.
func (hc *heldCall) sent() (ladder.Sent, error) {
	item := gjson.Parse(hc.item)
	s, _, a, err := sentItem(item)
	if err != nil {
		return s, err
	}
	if hc.args != "" && (!a.Exists() || a.Raw != hc.args) {
		hc.mixed = true
		if !a.Exists() {
			s.Args = hc.args
			if s.Raw, err = sjson.SetRaw(s.Raw, "arguments", hc.args); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// releaseReady sends on, in order, the complete calls valid as received,
// as the events they came in, until one that is not.
func (r *stream) releaseReady() {
	for _, hc := range r.order {
		if hc.released {
			continue
		}
		if hc.item == "" || hc.waits {
			return
		}
		s, err := hc.sent()
		if err != nil {
			r.fail(wire.MalformedReply(err))
			return
		}
		c := r.X.Check(s, 0, false, false)
		if !c.Valid() || c.Changed() || c.Unchecked || hc.mixed {
			hc.waits = true
			return
		}
		hc.call = c
		r.releaseHeld(hc)
		if r.Done {
			return
		}
	}
}

// releaseHeld sends a call as the events it came in, renumbered.
func (r *stream) releaseHeld(hc *heldCall) {
	if hc.index != r.next {
		r.changed = true
	}
	r.index[hc.index] = r.next
	r.upstream = append(r.upstream, hc.index)
	r.next++
	for _, ev := range hc.events {
		data, _ := wire.EventData(ev)
		r.emit(ev, wire.Value{Result: wire.Parse(data)}, hc.index)
		if r.Done {
			return
		}
	}
	hc.events, hc.released = nil, true
	r.final[hc.index] = hc.item
}

// finish settles the calls still held when the response ends, sends the
// valid ones, and sends the terminal event rewritten to hold exactly what
// the client was sent.
func (r *stream) finish(ev []byte, e wire.Value) {
	x := r.X
	resp := e.Get("response")
	if len(r.order) > 0 || !r.settleTextCalls(resp) {
		r.stopText()
	}
	if r.Done {
		return
	}
	var calls []*ladder.Call
	released := map[*ladder.Call]bool{}
	var waiting []*heldCall
	for _, hc := range r.order {
		if hc.released {
			calls = append(calls, hc.call)
			released[hc.call] = true
			continue
		}
		if hc.item == "" {
			// Never completed: its item in the response, if any.
			hc.item = itemAt(resp, hc.index)
			if hc.item == "" {
				r.fail(wire.MalformedReply(fmt.Errorf("the function_call at output_index %d never completed", hc.index)))
				return
			}
		}
		s, err := hc.sent()
		if err != nil {
			r.fail(wire.MalformedReply(err))
			return
		}
		hc.call = x.Check(s, 0, true, cutOff(resp))
		calls = append(calls, hc.call)
		waiting = append(waiting, hc)
	}
	if len(r.messages) > 0 {
		// The text under a JSON text.format: checked when the response
		// made no calls, released as it came otherwise.
		if len(r.order) == 0 {
			r.settleText(resp)
		} else {
			for _, hc := range r.messages {
				r.releaseHeld(hc)
			}
		}
		if r.Done {
			return
		}
	}
	if len(waiting) > 0 {
		r.settle(calls, released, waiting)
		if r.Done {
			return
		}
	} else {
		x.Calls = append(x.Calls, calls...)
	}
	if !r.changed && !r.completedMatches(resp) {
		// The terminal response holds a call the stream did not show, or
		// shows it otherwise: clients that read it would get a call
		// toolguard did not check. It is rewritten from what was sent.
		r.changed = true
	}
	if !r.changed && len(r.Replies()) == 0 {
		r.outcome()
		r.emit(ev, e, -1)
		r.finished = true
		return
	}
	// The response as the client was sent it: its items in the client's
	// order, the usage of every attempt.
	items := make([]string, len(r.upstream))
	for ci, ui := range r.upstream {
		it := r.final[ui]
		if it == "" {
			it = itemAt(resp, ui)
		}
		if it == "" {
			it = "null"
		}
		items[ci] = it
	}
	data := []byte(e.Raw)
	var err error
	if resp.IsObject() {
		if data, err = wire.Patch(data, "response.output", "["+strings.Join(items, ",")+"]"); err == nil && len(r.Replies()) > 0 {
			data, err = wire.SumUsage(data, "response.usage", r.Replies())
		}
		if err != nil {
			r.fail(wire.WriteFailed(err))
			return
		}
	}
	r.outcome()
	r.changed = true
	r.emit(nil, wire.Value{Result: wire.Parse(data)}, -1)
	r.finished = true
}

// completedMatches reports whether every function_call item of the
// terminal response, and under a JSON text.format every message, is one
// the stream held and sent as it is there, and every other item the stream
// sent done is there as it was sent: a client that reads the terminal
// response must read what one that reads the items done read.
func (r *stream) completedMatches(resp gjson.Result) bool {
	ok := true
	resp.Get("output").ForEach(func(i, it gjson.Result) bool {
		switch typ := it.Get("type").Str; {
		case typ == "function_call":
			hc := r.calls[i.Int()]
			ok = hc != nil && hc.released && hc.item == it.Raw
		case typ == "message" && r.output != nil:
			hc := r.calls[i.Int()]
			ok = hc != nil && hc.released && r.final[hc.index] == it.Raw
		default:
			if done, sent := r.final[i.Int()]; sent {
				ok = done == it.Raw
			}
		}
		return ok
	})
	return ok
}

// outcome writes the outcome of a stream that held calls, as a comment:
// headers have gone out before it was known.
func (r *stream) outcome() {
	if !r.anyCalls {
		r.X.Outcome = ladder.OutcomeNone
		return
	}
	r.X.Decide(r.failed)
	fmt.Fprintf(r.out, ": toolguard outcome=%s reasks=%d\n\n", r.X.Outcome, r.X.Reasks)
}

// itemAt returns a copy of the item of a response's output at the upstream
// index, or "".
func itemAt(resp gjson.Result, idx int64) string {
	return strings.Clone(resp.Get("output." + strconv.FormatInt(idx, 10)).Raw)
}

// settle runs the ladder on the calls of the response: the waiting ones
// are checked (and were mended), invalid ones are re-asked, and the valid
// ones go out.
func (r *stream) settle(calls []*ladder.Call, released map[*ladder.Call]bool, waiting []*heldCall) {
	x := r.X
	x.Calls = append(x.Calls, calls...)
	t := &turn{first: calls}
	t.Turn = ladder.Turn{Calls: calls, Last: calls, Wire: t}
	invalid, passthrough, failure, err := r.SettleTurn(&t.Turn)
	if err != nil {
		r.Abort, r.Done = err, true
		return
	}
	r.failed = r.failed || invalid
	if failure != nil {
		r.fail(failure)
		return
	}
	out := map[*ladder.Call]bool{}
	for _, c := range t.Calls {
		if c.Valid() || passthrough {
			out[c] = true
		}
	}
	// The first attempt's calls, as the events they came in when they need
	// no change, in their order; then those of the re-asks.
	for _, hc := range waiting {
		c := hc.call
		switch {
		case !out[c]:
			r.changed = true // dropped
		case !c.Changed() && !c.Unchecked && !hc.mixed:
			r.releaseHeld(hc)
		default:
			r.releaseCall(c, hc.index)
		}
		if r.Done {
			return
		}
	}
	for _, c := range t.Calls {
		if (c.Attempt > 0 || r.textCalls) && out[c] {
			r.releaseCall(c, -1)
			if r.Done {
				return
			}
		}
	}
}

// releaseCall sends a call as events of toolguard's: its item added with
// empty arguments, the arguments in one delta, their done, the item done.
// idx is its upstream output_index, -1 for a call of a re-ask.
func (r *stream) releaseCall(c *ladder.Call, idx int64) {
	r.changed = true
	full, err := item(c)
	if err == nil && c.Attempt > 0 {
		// A re-ask's item: its id is the re-ask response's, and the
		// status the client expects at the end of a stream.
		full, err = sjson.Set(full, "status", "completed")
	}
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	fi := gjson.Parse(full)
	itemID := fi.Get("id").Str
	if itemID == "" {
		itemID = "fc_toolguard_" + strconv.Itoa(c.Attempt) + "_" + strconv.FormatInt(r.next, 10)
		if full, err = sjson.Set(full, "id", itemID); err != nil {
			r.fail(wire.WriteFailed(err))
			return
		}
	}
	args := fi.Get("arguments").Raw
	ci := r.next
	r.next++
	if idx < 0 {
		idx = -1 - ci // a key of its own, unlike any upstream index
	}
	r.index[idx] = ci
	r.upstream = append(r.upstream, idx)
	r.final[idx] = full
	added, err := sjson.Set(full, "arguments", "")
	if err == nil {
		added, err = sjson.Set(added, "status", "in_progress")
	}
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	at := `,"output_index":` + strconv.FormatInt(ci, 10)
	seq := func() string { s := strconv.FormatInt(r.seq, 10); r.seq++; return `,"sequence_number":` + s }
	id := `,"item_id":` + wire.Quote(itemID)
	r.write("response.output_item.added", []byte(`{"type":"response.output_item.added"`+seq()+at+`,"item":`+added+`}`))
	r.write("response.function_call_arguments.delta", []byte(`{"type":"response.function_call_arguments.delta"`+seq()+id+at+`,"delta":`+args+`}`))
	r.write("response.function_call_arguments.done", []byte(`{"type":"response.function_call_arguments.done"`+seq()+id+at+`,"name":`+wire.Quote(fi.Get("name").Str)+`,"arguments":`+args+`}`))
	r.write("response.output_item.done", []byte(`{"type":"response.output_item.done"`+seq()+at+`,"item":`+full+`}`))
}
