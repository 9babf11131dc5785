package messages

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// What a stream may hold, whatever the upstream sends.
const (
	maxStreamCalls  = 256  // tool_use blocks in one stream
	maxStreamBlocks = 4096 // content blocks in one stream
)

// eventShape is the members of a stream's events that toolguard reads.
var eventShape = wire.Shape{
	"type": nil, "index": nil, "message": replyShape, "content_block": blockShape,
	"delta": wire.Shape{"type": nil, "text": nil, "partial_json": nil, "thinking": nil, "signature": nil, "stop_reason": nil},
	"usage": usageShape, "error": nil,
}

// stream handles the events of a streamed message (wire.Events). Events
// pass as they come, but for those of tool_use blocks: each block is held
// from its content_block_start to its content_block_stop, then checked. A
// call valid as received goes out at once as the events it came in, when
// no call before it waits; the others wait for the message_delta, where
// the ladder settles them (mending, re-asking without streaming) and they
// go out as events of toolguard's. Text, thinking (signatures included)
// and redacted thinking pass at once.
//
// What the client sees stays consistent: the SDKs append a block at each
// content_block_start and apply deltas by index, so blocks are numbered
// in the order they go out; the message_delta's stop_reason says tool_use
// while a call went out and end_turn when none did, and its usage is
// summed over every attempt.
type stream struct {
	ladder.Session
	maxBytes int64
	out      *bytes.Buffer
	wire.Ending

	// event is where the members of the event being handled are, as its
	// strict reading recorded them, so each lookup does not read the
	// event again from its start.
	event *wire.Members
	// events reads each event strictly; one that repeats the last read in
	// full with other text is not tokenised again.
	events *wire.EventReader

	started  bool
	startUse gjson.Result // message_start's message.usage
	blocks   map[int64]*heldBlock
	next     int64 // the next index the client sees
	order    []*heldBlock
	calls    []*heldBlock
	total    int64 // bytes held
	failed   bool
	anyCalls bool
	finished bool // the message_delta has gone out
	stopped  bool // message_stop has gone out
	// converted is set once calls written in a text block were read as
	// calls (see textcalls.go); holdWork counts the bytes read for holds.
	converted bool
	holdWork  int
	// pendingText is the text block whose content_block_start is kept
	// (see heldBlock.pendingStart), queued the events that came after it.
	pendingText *heldBlock
	queued      [][]byte
}

// heldBlock is a content block of the stream: where it went (client
// index), and for a tool_use its events and input as they came.
type heldBlock struct {
	index    int64 // the upstream's
	client   int64 // the client's, -1 while not sent
	typ      string
	start    gjson.Result // its content_block
	events   [][]byte
	input    strings.Builder
	deltas   bool
	stopped  bool
	call     *ladder.Call
	released bool
	// The text of a text or thinking block, for a re-ask's assistant turn.
	text, signature strings.Builder
	// For a text block read for calls: the bytes of its text sent so far,
	// whether some are held, and the text left around the calls read in
	// it (rest, with hasRest).
	emitted   int
	holding   bool
	holdSince time.Time
	rest      string
	hasRest   bool
	written   *ladder.Sent // a call read from a text block
	// pendingStart is a text block's content_block_start, kept until its
	// first text goes out: a block whose text was all calls is not sent.
	pendingStart []byte
}

var _ wire.Events = (*stream)(nil)

// NewStream returns the format's handling of a stream's events. What it
// holds is bounded by maxBytes.
func (q *Request) NewStream(s ladder.Session, maxBytes int64) wire.Events {
	return &stream{Session: s, maxBytes: maxBytes, blocks: map[int64]*heldBlock{}, event: wire.NewMembers(""), events: wire.NewEventReader(eventShape, s.Starts)}
}

// MayWait implements wire.Events: the message_delta settles the calls.
func (r *stream) MayWait(ev []byte) bool { return bytes.Contains(ev, []byte("message_delta")) }

// End implements wire.Events: a stream ends after its message_delta.
func (r *stream) End() *wire.Error {
	if r.finished {
		return nil
	}
	return &wire.Error{Status: 502, Type: "upstream_error", Code: "upstream_stream_truncated",
		Msg: "the upstream's stream ended before its message_delta"}
}

// Fail implements wire.Events: the stream ends with an error event, as the
// Messages API sends one.
func (r *stream) Fail(out *bytes.Buffer, ae *wire.Error) {
	if r.anyCalls || ae.Code == "tool_call_invalid" {
		r.X.Outcome = ladder.OutcomeFailed
		fmt.Fprintf(out, ": toolguard outcome=%s reasks=%d\n\n", ladder.OutcomeFailed, r.X.Reasks)
	}
	out.WriteString("event: error\n")
	wire.WriteData(out, ErrorBody(ae))
}

func (r *stream) fail(ae *wire.Error) { r.Failure, r.Done = ae, true }

func invalidEvent(why string) *wire.Error {
	return &wire.Error{Status: 502, Type: "upstream_error", Code: "upstream_invalid_event",
		Msg: "the upstream's stream holds an event that clients read differently from toolguard (" + why + "), so its tool calls cannot be checked"}
}

// Handle implements wire.Events.
func (r *stream) Handle(ev []byte, out *bytes.Buffer) (bool, error) {
	r.out = out
	r.handle(ev)
	r.out = nil // out goes back to a pool once the client has it
	return r.Result()
}

func (r *stream) handle(ev []byte) {
	if wire.BOMAtLineStart(ev) {
		r.fail(invalidEvent("a line starts with a byte order mark"))
		return
	}
	data, ok := wire.EventData(ev)
	if !ok {
		r.out.Write(ev) // comments and other fields pass through
		return
	}
	if r.stopped {
		r.fail(invalidEvent("an event after message_stop"))
		return
	}
	if err := r.events.Read(data, r.event); err != nil {
		r.fail(invalidEvent(err.Error()))
		return
	}
	// Read in place: ev is the stream's buffer, valid only until Handle
	// returns (wire.Events), so what is kept of it is copied (wire.Copy,
	// hold, keep). Its members are looked up where the strict reading
	// found them.
	e := wire.Value{Result: wire.Parse(data), M: r.event}
	typ := e.Get("type")
	// The TypeScript and Python SDKs dispatch on the event's name, the Go
	// SDK on its type: an event whose two differ, or that has no name, is
	// read differently.
	if name, ok := wire.EventName(ev); !ok || typ.Type != gjson.String || string(name) != typ.Str {
		r.fail(invalidEvent(fmt.Sprintf("an event named %q has the type %s", wire.Clip(string(name), 64), wire.Clip(typ.Raw, 64))))
		return
	}
	if !r.started && typ.Str != "message_start" && typ.Str != "ping" && typ.Str != "error" {
		r.fail(invalidEvent("a " + typ.Str + " before message_start"))
		return
	}
	switch typ.Str {
	case "message_start":
		if r.started || !e.Get("message").IsObject() {
			r.fail(invalidEvent("a second or malformed message_start"))
			return
		}
		r.started, r.startUse = true, wire.Copy(e.Get("message.usage"))
		r.out.Write(ev)
	case "content_block_start":
		r.startBlock(ev, e)
	case "content_block_delta":
		r.delta(ev, e)
	case "content_block_stop":
		r.stopBlock(ev, e)
	case "message_delta":
		if r.finished {
			r.fail(invalidEvent("a second message_delta"))
			return
		}
		r.finish(ev, e)
	case "message_stop":
		if !r.finished {
			r.fail(invalidEvent("message_stop before message_delta"))
			return
		}
		r.stopped = true
		r.out.Write(ev)
	case "error":
		// The upstream's own failure ends the stream: it goes on as it
		// is, and the calls held with it are dropped.
		r.out.Write(ev)
		r.finished, r.Done = true, true
	default:
		// ping, and events the API may add: the SDKs skip them. While a
		// text block's start is kept, they wait behind it, in order.
		if r.pendingText != nil {
			if r.keep(ev) {
				r.queued = append(r.queued, append([]byte(nil), ev...))
			}
			return
		}
		r.out.Write(ev)
	}
}

// blockAt returns the block an event names by its index.
func (r *stream) blockAt(e wire.Value) *heldBlock {
	i := e.Get("index")
	if i.Type != gjson.Number || i.Raw != strconv.FormatInt(i.Int(), 10) {
		r.fail(invalidEvent("an index that is not an integer"))
		return nil
	}
	b := r.blocks[i.Int()]
	if b == nil || b.stopped {
		r.fail(invalidEvent(fmt.Sprintf("an event for content block %d, which is not open", i.Int())))
		return nil
	}
	return b
}

func (r *stream) startBlock(ev []byte, e wire.Value) {
	// The block's start is kept, and its type (a slice of it): a copy.
	i, cb := e.Get("index"), wire.Copy(e.Get("content_block"))
	typ := cb.Get("type").Str
	switch {
	case i.Type != gjson.Number || i.Raw != strconv.FormatInt(i.Int(), 10):
		r.fail(invalidEvent("an index that is not an integer"))
		return
	case i.Int() != int64(len(r.order)):
		// The SDKs append the block whatever its index says.
		r.fail(invalidEvent(fmt.Sprintf("content block %d starts where block %d is due", i.Int(), len(r.order))))
		return
	case !cb.IsObject() || !replyBlocks[typ]:
		r.fail(invalidEvent("a content block of a type toolguard does not know, " + wire.Clip(cb.Get("type").Raw, 64)))
		return
	case len(r.order) == maxStreamBlocks:
		r.fail(invalidEvent(fmt.Sprintf("more than %d content blocks", maxStreamBlocks)))
		return
	}
	b := &heldBlock{index: i.Int(), client: -1, typ: typ, start: cb}
	r.blocks[b.index] = b
	r.order = append(r.order, b)
	if typ != "tool_use" {
		if typ == "text" || typ == "thinking" {
			b.text.WriteString(cb.Get(typ).Str)
			b.signature.WriteString(cb.Get("signature").Str)
		}
		if typ == "text" && r.readsText() && b.text.Len() == 0 && r.pendingText == nil {
			b.pendingStart = append([]byte(nil), ev...)
			r.pendingText = b
			return
		}
		r.pass(b, ev, e)
		return
	}
	if len(r.calls) == maxStreamCalls {
		r.fail(invalidEvent(fmt.Sprintf("more than %d tool_use blocks", maxStreamCalls)))
		return
	}
	if cb.Get("name").Type != gjson.String || (cb.Get("id").Exists() && cb.Get("id").Type != gjson.String) {
		r.fail(invalidEvent("the name or id of a tool_use block is not a string"))
		return
	}
	r.anyCalls = true
	r.calls = append(r.calls, b)
	r.hold(b, ev)
}

// hold keeps an event of a tool_use block, within the stream's bound.
func (r *stream) hold(b *heldBlock, ev []byte) {
	if r.keep(ev) {
		b.events = append(b.events, append([]byte(nil), ev...))
	}
}

// keep counts an event held against the stream's bound, and reports
// whether it may be held; past the bound the stream fails.
func (r *stream) keep(ev []byte) bool {
	r.total += int64(len(ev))
	if r.total > r.maxBytes {
		r.fail(&wire.Error{Status: 502, Type: "upstream_error", Code: "upstream_response_too_large",
			Msg: "the events held from the upstream's stream are larger than TOOLGUARD_MAX_RESPONSE_BYTES"})
		return false
	}
	return true
}

// pass sends an event of a block that is not held: as it came when the
// client numbers the block as the upstream did, renumbered otherwise.
func (r *stream) pass(b *heldBlock, ev []byte, e wire.Value) {
	if b.client < 0 {
		b.client = r.next
		r.next++
	}
	if b.client == b.index {
		r.out.Write(ev)
		return
	}
	data, err := wire.Patch([]byte(e.Raw), "index", strconv.FormatInt(b.client, 10))
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	r.out.WriteString("event: " + e.Get("type").Str + "\n")
	wire.WriteData(r.out, data)
}

// The members of a content_block_delta's delta that are read, in one pass.
var deltaFields = [...]string{"type", "text", "partial_json", "thinking", "signature"}

func (r *stream) delta(ev []byte, e wire.Value) {
	b := r.blockAt(e)
	if b == nil {
		return
	}
	var f [len(deltaFields)]gjson.Result
	wire.Fields(e.Get("delta"), deltaFields[:], f[:])
	typ, text, partial, thinking, signature := f[0], f[1], f[2], f[3], f[4]
	switch dt := typ.Str; {
	case b.typ == "tool_use" && dt == "input_json_delta" && partial.Type == gjson.String:
		b.input.WriteString(partial.Str)
		b.deltas = true
		r.hold(b, ev)
		return
	case b.typ == "tool_use":
		r.fail(invalidEvent("a " + wire.Clip(typ.Raw, 64) + " delta of a tool_use block"))
		return
	case dt == "text_delta":
		b.text.WriteString(text.Str)
		if b.typ == "text" && r.textHold(b) || r.Done {
			return
		}
	case dt == "thinking_delta":
		b.text.WriteString(thinking.Str)
	case dt == "signature_delta":
		b.signature.WriteString(signature.Str)
	}
	r.openText(b)
	r.pass(b, ev, e)
}

func (r *stream) stopBlock(ev []byte, e wire.Value) {
	b := r.blockAt(e)
	if b == nil {
		return
	}
	b.stopped = true
	if b.typ != "tool_use" {
		if b.typ == "text" {
			if r.settleText(b); r.Done {
				return
			}
			if b.pendingStart != nil {
				// Emptied by the calls read from it: never sent.
				b.pendingStart, r.pendingText = nil, nil
				r.flushQueued()
				return
			}
		}
		r.pass(b, ev, e)
		return
	}
	r.hold(b, ev)
	if r.Done {
		return
	}
	// Checked as received: a valid call goes out now. One that is not
	// waits for the message_delta, whose stop reason says whether the
	// model was cut off, and is checked again there, mending it.
	b.call = r.X.Check(b.sent(), 0, false, false)
	r.releaseReady()
}

// sent is the call of a complete tool_use block, read as the SDKs read it:
// the start's input, replaced by the deltas' JSON when there are any.
func (b *heldBlock) sent() ladder.Sent {
	if b.written != nil {
		return *b.written
	}
	s := ladder.Sent{ID: b.start.Get("id").Str, Name: b.start.Get("name").Str}
	switch {
	case b.deltas:
		s.Args = wire.Quote(b.input.String())
	default:
		s = sentBlock(b.start)
	}
	return s
}

// releaseReady sends the calls that are valid as received, in order, up to
// the first that is not.
func (r *stream) releaseReady() {
	for _, b := range r.calls {
		if b.released {
			continue
		}
		if b.call == nil || !b.call.Valid() || b.call.Changed() || b.call.Unchecked {
			return
		}
		r.releaseHeld(b)
	}
}

// releaseHeld sends a held block's events as they came (renumbered if it
// must be).
func (r *stream) releaseHeld(b *heldBlock) {
	b.released = true
	if b.written != nil {
		r.releaseCall(b.call)
		return
	}
	for _, ev := range b.events {
		data, _ := wire.EventData(ev)
		r.pass(b, ev, wire.Value{Result: wire.Parse(data)})
		if r.Done {
			return
		}
	}
}

// releaseCall sends a call as events of toolguard's: its block started
// with an empty input, the input in one delta, the block stopped.
func (r *stream) releaseCall(c *ladder.Call) {
	id := c.ID
	if id == "" {
		id = "toolu_toolguard_" + strconv.Itoa(c.Attempt) + "_" + strconv.FormatInt(r.next, 10)
	}
	at := `,"index":` + strconv.FormatInt(r.next, 10)
	r.next++
	write := func(typ, rest string) {
		r.out.WriteString("event: " + typ + "\n")
		wire.WriteData(r.out, []byte(`{"type":"`+typ+`"`+at+rest+`}`))
	}
	write("content_block_start", `,"content_block":{"type":"tool_use","id":`+wire.Quote(id)+`,"name":`+wire.Quote(c.ToolName())+`,"input":{}}`)
	write("content_block_delta", `,"delta":{"type":"input_json_delta","partial_json":`+wire.Quote(string(c.Args))+`}`)
	write("content_block_stop", "")
}

// content is the message's content as the client was sent it so far, for a
// re-ask's assistant turn: text and thinking as they were, each tool_use
// with the model's input text.
func (r *stream) content() string {
	var out []string
	for _, b := range r.order {
		switch b.typ {
		case "text":
			switch {
			case !b.hasRest:
				out = append(out, `{"type":"text","text":`+wire.Quote(b.text.String())+`}`)
			case b.rest != "":
				out = append(out, textBlock(b.rest))
			}
		case "thinking":
			out = append(out, `{"type":"thinking","thinking":`+wire.Quote(b.text.String())+`,"signature":`+wire.Quote(b.signature.String())+`}`)
		case "redacted_thinking":
			out = append(out, b.start.Raw)
		case "tool_use":
			out = append(out, `{"type":"tool_use","id":`+wire.Quote(b.start.Get("id").Str)+`,"name":`+wire.Quote(b.start.Get("name").Str)+`,"input":{}}`)
		}
	}
	for _, b := range r.calls {
		if b.written != nil {
			out = append(out, `{"type":"tool_use","id":`+wire.Quote(b.written.ID)+`,"name":`+wire.Quote(b.written.Name)+`,"input":{}}`)
		}
	}
	return "[" + strings.Join(out, ",") + "]"
}

// finish handles the message_delta: the calls still held are settled and
// go out, then the message_delta, with the stop reason and the usage of
// every attempt.
func (r *stream) finish(ev []byte, e wire.Value) {
	for _, b := range r.order {
		if !b.stopped {
			r.fail(invalidEvent(fmt.Sprintf("message_delta before content block %d stopped", b.index)))
			return
		}
	}
	var calls, waiting []*ladder.Call
	cut := e.Get("delta.stop_reason").Str == "max_tokens"
	for _, b := range r.calls {
		if !b.released {
			b.call = r.X.Check(b.sent(), 0, true, cut)
			waiting = append(waiting, b.call)
		}
		calls = append(calls, b.call)
	}
	x := r.X
	x.Calls = append(x.Calls, calls...)
	left := 0
	for _, b := range r.calls {
		if b.released {
			left++
		}
	}
	if len(waiting) > 0 {
		n, ok := r.settle(calls, e)
		if !ok {
			return
		}
		left += n
	}
	data := []byte(e.Raw)
	var err error
	stop := e.Get("delta.stop_reason")
	switch {
	case left > 0 && stop.Str != "tool_use" && (len(waiting) > 0 || r.converted):
		data, err = wire.Patch(data, "delta.stop_reason", `"tool_use"`)
	case left == 0 && stop.Str == "tool_use":
		data, err = wire.Patch(data, "delta.stop_reason", `"end_turn"`)
	}
	if err == nil && len(r.Replies()) > 0 {
		data, err = r.sumUsage(data)
	}
	if err != nil {
		r.fail(wire.WriteFailed(err))
		return
	}
	r.usage(data)
	if r.anyCalls {
		x.Decide(r.failed)
		fmt.Fprintf(r.out, ": toolguard outcome=%s reasks=%d\n\n", x.Outcome, x.Reasks)
	} else {
		x.Outcome = ladder.OutcomeNone
	}
	r.finished = true
	if bytes.Equal(data, []byte(e.Raw)) {
		r.out.Write(ev)
		return
	}
	r.out.WriteString("event: message_delta\n")
	wire.WriteData(r.out, data)
}

// usage tells the session of the usage of the stream: message_delta's
// output, and its input or else message_start's.
func (r *stream) usage(data []byte) {
	if r.Usage == nil {
		return
	}
	in := gjson.GetBytes(data, "usage.input_tokens")
	if !in.Exists() {
		in = r.startUse.Get("input_tokens")
	}
	r.Usage([]byte(`{"usage":{"input_tokens":` + strconv.FormatInt(in.Int(), 10) + `,"output_tokens":` +
		strconv.FormatInt(gjson.GetBytes(data, "usage.output_tokens").Int(), 10) + `}}`))
}

// sumUsage adds the re-asks' usage to the message_delta's. The SDKs take
// its output_tokens, and its input and cache counters when it has them,
// over message_start's: those message_start alone gave are copied in
// first, so the sums are whole.
func (r *stream) sumUsage(data []byte) ([]byte, error) {
	var err error
	if !gjson.GetBytes(data, "usage").IsObject() {
		if data, err = wire.Patch(data, "usage", "{}"); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
		if v := r.startUse.Get(k); v.Type == gjson.Number && !gjson.GetBytes(data, "usage."+k).Exists() {
			if data, err = wire.Patch(data, "usage."+k, v.Raw); err != nil {
				return nil, err
			}
		}
	}
	return wire.SumUsage(data, "usage", r.Replies())
}

// settle runs the ladder on the calls of the message: the waiting ones
// are re-asked while invalid, and the valid ones go out. It returns how
// many went out, and false when the stream ended.
func (r *stream) settle(calls []*ladder.Call, e wire.Value) (int, bool) {
	t := &turn{first: calls, last: r.content()}
	t.Turn = ladder.Turn{Calls: calls, Last: calls, Wire: t}
	invalid, passthrough, failure, err := r.SettleTurn(&t.Turn)
	if err != nil {
		r.Abort, r.Done = err, true
		return 0, false
	}
	r.failed = r.failed || invalid
	if failure != nil {
		r.fail(failure)
		return 0, false
	}
	keep := map[*ladder.Call]bool{}
	for _, c := range t.Calls {
		if c.Valid() || passthrough {
			keep[c] = true
		}
	}
	n := 0
	for _, b := range r.calls {
		c := b.call
		switch {
		case b.released:
			continue
		case !keep[c]:
			continue // dropped
		case passthrough && !c.Valid(), !c.Changed() && !c.Unchecked:
			r.releaseHeld(b)
		default:
			r.releaseCall(c)
		}
		n++
	}
	for _, c := range t.Calls {
		if c.Attempt > 0 && keep[c] {
			r.releaseCall(c)
			n++
		}
	}
	return n, !r.Done
}
