package chat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// stream reads the events of a streamed chat completion (wire.Events). It
// passes each on as it comes, except tool-call deltas: those are held per
// choice and per call until the call is complete, checked (and mended or
// re-asked) like a non-streamed call, and released as whole calls.
//
// Re-asks are made without streaming: their text is never shown (the
// client has already seen the first attempt's), and their calls are released
// whole anyway, so a streamed re-ask would only add parsing.
type stream struct {
	ladder.Session
	maxBytes int64         // TOOLGUARD_MAX_RESPONSE_BYTES bounds what is held
	output   *ladder.Tool  // the response format's, when content is held
	out      *bytes.Buffer // where the event being handled writes
	wire.Ending

	choices map[int64]*streamChoice
	// event is where the members and choices of the event being handled
	// are, as its strict reading found them. What is read from it is a
	// slice of the event, whose bytes are reused after it: what is kept is
	// copied.
	event *wire.Members
	// events reads each event strictly; one that repeats the last read in
	// full with other text is not tokenised again.
	events *wire.EventReader
	// plan is what the walk of the last event of one choice of text, or of
	// one call's arguments, found, for the events that repeat it (see
	// eventPlan).
	plan     eventPlan
	template []byte // the last chunk, whose envelope released calls reuse
	usage    []byte // the usage chunk, held until the end
	anyCalls bool
	failed   bool
	total    int64 // bytes of tool-call arguments and content held
	// tooManyCalls is set when a choice starts more calls than are held.
	tooManyCalls bool
	// holdWork counts the bytes read deciding holds, over every choice
	// (wire.MaxTextHoldWork): a hundred choices of text each read up to
	// the bound would cost a hundred times it.
	holdWork int
}

var _ wire.Events = (*stream)(nil)

// NewStream returns the chat format's handling of a stream's events. The
// content and tool calls it holds are bounded by maxBytes.
func (q *Request) NewStream(s ladder.Session, maxBytes int64) wire.Events {
	return &stream{Session: s, maxBytes: maxBytes, output: q.output, choices: map[int64]*streamChoice{}, event: wire.NewMembers("choices"), events: wire.NewEventReader(chunkShape, s.Starts)}
}

// Handle implements wire.Events.
func (r *stream) Handle(ev []byte, out *bytes.Buffer) (bool, error) {
	r.out = out
	r.handle(ev)
	r.out = nil // out goes back to a pool once the client has it
	return r.Result()
}

// MayWait implements wire.Events.
func (r *stream) MayWait(ev []byte) bool { return mayWait(ev) }

// End implements wire.Events: a chat stream ends with [DONE], after which
// nothing more is read.
func (r *stream) End() *wire.Error {
	return &wire.Error{Type: "upstream_error", Code: "upstream_stream_truncated",
		Msg: "the upstream's stream ended before data: [DONE]"}
}

// Fail implements wire.Events: the stream ends with an error event in the
// OpenAI error shape.
func (r *stream) Fail(out *bytes.Buffer, ae *wire.Error) {
	if r.anyCalls || ae.Code == "tool_call_invalid" {
		r.X.Outcome = ladder.OutcomeFailed
		fmt.Fprintf(out, ": toolguard outcome=%s reasks=%d\n\n", ladder.OutcomeFailed, r.X.Reasks)
	}
	wire.WriteData(out, ae.Body())
}

// fail ends the stream on ae.
func (r *stream) fail(ae *wire.Error, cause error) {
	if cause != nil && ae.Err == nil {
		ae.Err = cause
	}
	r.Failure, r.Done = ae, true
}

// mayWait reports whether handling an event may wait on the network: a set
// finish_reason (calls are settled and may be re-asked) or the end of the
// stream. It errs on the side of yes; a wrong yes only costs a write.
func mayWait(ev []byte) bool {
	// An event whose data is an object does not end the stream.
	if !bytes.HasPrefix(ev, []byte("data: {")) && bytes.Contains(ev, []byte("[DONE]")) {
		return true
	}
	for rest := ev; ; {
		// "finish_reason" is searched for from its first letter, its
		// quote checked after: bytes.Index stops at each occurrence of the
		// needle's first byte, and JSON has a quote every few bytes.
		i := bytes.Index(rest, []byte(`finish_reason"`))
		if i < 0 {
			return false
		}
		quoted := i > 0 && rest[i-1] == '"'
		rest = rest[i+len(`finish_reason"`):]
		if !quoted {
			continue
		}
		rest = bytes.TrimLeft(rest, " \t:")
		if !bytes.HasPrefix(rest, []byte("null")) {
			return true
		}
	}
}

// handle acts on one whole event.
func (r *stream) handle(ev []byte) {
	if wire.BOMAtLineStart(ev) {
		r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_invalid_event",
			Msg: "a line of the upstream's stream starts with a byte order mark, which clients read differently"}, nil)
		return
	}
	data, ok := wire.EventData(ev)
	if !ok {
		r.out.Write(ev) // comments and other fields pass through
		return
	}
	if string(data) == "[DONE]" {
		r.finish(ev)
		return
	}
	if err := r.events.Read(data, r.event); err != nil {
		// A broken or ambiguous event could hold part of a tool call that
		// a client reads differently from toolguard.
		ae := wire.MalformedReply(err)
		if ae.Code == "upstream_invalid_json" {
			ae = &wire.Error{Type: "upstream_error", Code: "upstream_invalid_event",
				Msg: "the upstream sent a stream event that is not JSON (" + wire.Clip(err.Error(), 200) + ")"}
		}
		r.fail(ae, nil)
		return
	}
	if !r.events.Repeated() {
		r.plan = eventPlan{} // made from an event of another shape
	}
	choices := r.event.Get("choices")
	if !choices.IsArray() {
		if choices.Exists() && choices.Type != gjson.Null {
			r.fail(wire.MalformedReply(errors.New("choices is not an array")), nil)
			return
		}
		r.out.Write(ev) // an error event, or something of the provider's own
		return
	}
	spans, recorded := r.event.Items()
	if isEmptyArray(choices.Raw) && r.event.Get("usage").IsObject() {
		// The usage chunk: held so it can carry the sum over all attempts.
		r.usage = append([]byte(nil), ev...)
		r.Usage(data)
		return
	}
	if r.template == nil {
		// Every chunk of a stream has the same envelope (id, model,
		// created...); released calls reuse the first one's.
		r.template = append([]byte(nil), data...)
	}
	nChoices := len(spans)
	if !recorded {
		nChoices = 0
		choices.ForEach(func(_, _ gjson.Result) bool { nChoices++; return true })
	}
	chunk := data
	changed := false // tool-call deltas were taken out of chunk
	held := false    // the event is held whole with the call it carries
	pos := 0
	// One pass over each choice and its delta: this runs for every event.
	eachChoice(r.event, choices, func(_ int, c gjson.Result) bool {
		at := pos // the choice's place in the chunk, for its patches
		prefix := func() string { return "choices." + strconv.Itoa(at) + "." }
		pos++
		var idx int64
		var index, delta, fr gjson.Result
		var text gjson.Result // the delta's content
		var call callDelta    // the delta's one call, when it has one
		nCalls := 0
		// (A plan is kept only while each event repeats the one before: see
		// the reset after the event's reading.)
		planned := r.plan.kind != planNone && nChoices == 1
		if planned {
			index, text, call = r.plan.read(r.event, r.events)
		} else {
			var f [3]gjson.Result
			wire.Fields(c, streamChoiceFields, f[:])
			index, delta, fr = f[0], f[1], f[2]
		}
		hasIndex, badIndex := false, false
		if index.Exists() && index.Type != gjson.Null { // null: read as missing
			idx, hasIndex = plainIndex(index)
			badIndex = !hasIndex
		}
		if badIndex {
			r.fail(wire.MalformedReply(fmt.Errorf("choices[%d].index is not a non-negative integer", pos-1)), nil)
			return false
		}
		if r.choices[idx] == nil && len(r.choices) >= maxStreamChoices {
			r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_stream_too_large",
				Msg: "the upstream's stream has more than " + strconv.Itoa(maxStreamChoices) + " choices"}, nil)
			return false
		}
		sc := r.choice(idx)
		var touched []*partialCall
		// dropCalls names the delta's member of call deltas, taken out of
		// chunk unless the event is held whole (then chunk is not sent).
		dropCalls := ""
		hasContent, textDelta := false, false
		// A plan is made of an event of one choice that does not end it,
		// with no refusal (see eventPlan).
		plannable := !planned && nChoices == 1 && (!fr.Exists() || fr.Type == gjson.Null)
		switch {
		case !planned:
		case r.plan.kind == planText:
			hasContent, textDelta = r.addText(sc, text.Str)
		case !r.callsOf(sc, false):
			return false
		default:
			touched = append(touched, r.addDelta(sc, call, -1))
			if r.Done {
				return false
			}
			dropCalls = "tool_calls"
		}
		delta.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "content":
				if v.Type != gjson.String && v.Type != gjson.Null {
					// Clients join content deltas as they come (openai-node
					// adds a number or an array to the string): the content
					// they assemble is not what toolguard would check.
					r.fail(wire.MalformedReply(fmt.Errorf("delta.content is a JSON %s, not a string", typeOf(v))), nil)
					return false
				}
				if v.Type == gjson.String {
					hasContent, textDelta = r.addText(sc, v.Str)
					text = v
				}
			case "refusal":
				plannable = plannable && v.Type == gjson.Null
				sc.refused = sc.refused || v.Type == gjson.String && v.Str != ""
			case "tool_calls", "function_call":
				if v.Type == gjson.Null {
					return true
				}
				legacy := k.Str == "function_call"
				if legacy && !v.IsObject() || !legacy && !v.IsArray() {
					r.fail(wire.MalformedReply(fmt.Errorf("delta.%s is not an %s", k.Str, map[bool]string{true: "object", false: "array"}[legacy])), nil)
					return false
				}
				if !r.callsOf(sc, legacy) {
					return false
				}
				if legacy {
					touched = append(touched, r.addDelta(sc, readCallDelta(v, true), 0))
				} else {
					v.ForEach(func(_, td gjson.Result) bool {
						if !td.IsObject() {
							r.fail(wire.MalformedReply(errors.New("delta.tool_calls holds a value that is not an object")), nil)
							return false
						}
						call = readCallDelta(td, false)
						nCalls++
						touched = append(touched, r.addDelta(sc, call, -1))
						return !r.Done
					})
				}
				if r.Done {
					return false
				}
				dropCalls = k.Str
			}
			return true
		})
		if r.Done {
			return false
		}
		if !planned {
			r.plan = eventPlan{}
			if plannable {
				// The events that repeat this one are read from where its
				// values are (see eventPlan).
				r.plan = makePlan(r.events, index, text, dropCalls, nCalls, call)
			}
		}
		finishing := fr.Exists() && fr.Type != gjson.Null
		if textDelta {
			// Text that may be the start of a call written as text waits
			// until it is known not to be one.
			if hold := r.textHold(sc); hold {
				var err error
				if chunk, err = sjson.DeleteBytes(chunk, prefix()+"delta.content"); err != nil {
					r.fail(wire.WriteFailed(err), err)
					return false
				}
				changed = true
			}
		}
		if hasContent {
			// Under a JSON response_format the content waits for its end:
			// the event whole if it carries nothing else, else without it.
			if nChoices == 1 && len(touched) == 0 && !finishing && !sc.contentSynth {
				sc.heldContent = append(sc.heldContent, append([]byte(nil), ev...))
				r.total += int64(len(ev))
				held = true
			} else {
				r.unholdContent(sc)
				var err error
				if chunk, err = sjson.DeleteBytes(chunk, prefix()+"delta.content"); err != nil {
					r.fail(wire.WriteFailed(err), err)
					return false
				}
				changed = true
			}
		}
		// An event that carries deltas of one call only, in a chunk of one
		// choice that says its index and does not end it, is held whole
		// with that call: if the call turns out valid as received, its
		// events go out as the upstream sent them. (Without an index,
		// toolguard reads choice 0 and openai-node a choice "undefined".)
		if p := onlyCall(touched); p != nil && nChoices == 1 && hasIndex && !finishing && !p.synthesize && !p.released && !sc.synthesize {
			sc.held = append(sc.held, heldEvent{ev: append([]byte(nil), ev...), call: p})
			r.total += int64(len(ev))
			held = true
		} else if len(touched) > 0 {
			// The event cannot go out with one call: the choice's calls
			// will go out as chunks of toolguard's.
			r.unhold(sc)
		}
		if dropCalls != "" && !held {
			var err error
			if chunk, err = sjson.DeleteBytes(chunk, prefix()+"delta."+dropCalls); err != nil {
				r.fail(wire.WriteFailed(err), err)
				return false
			}
			changed = true
		}
		if finishing && !sc.finished {
			sc.finished = true
			sc.cutOff = fr.Str == "length"
			if len(sc.order) == 0 {
				if r.settleText(sc) && fr.Str == "stop" {
					var err error
					if chunk, err = sjson.SetRawBytes(chunk, prefix()+"finish_reason", []byte(`"tool_calls"`)); err != nil {
						r.fail(wire.WriteFailed(err), err)
						return false
					}
					changed = true
				}
				if r.Done {
					return false
				}
				r.settleContent(sc)
				if r.Done {
					return false
				}
			} else {
				r.releaseContent(sc)
				r.settle(sc)
				if r.Done {
					return false
				}
				if sc.released == 0 && (fr.Str == "tool_calls" || fr.Str == "function_call") {
					var err error
					if chunk, err = sjson.SetRawBytes(chunk, prefix()+"finish_reason", []byte(`"stop"`)); err != nil {
						r.fail(wire.WriteFailed(err), err)
						return false
					}
					changed = true
				}
			}
		}
		return true
	})
	if r.Done {
		return
	}
	if r.tooManyCalls {
		r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_stream_too_large",
			Msg: "the upstream's stream has more than " + strconv.Itoa(maxStreamCalls) + " tool calls in one choice"}, nil)
		return
	}
	if r.total > r.maxBytes {
		r.fail(&wire.Error{Type: "upstream_error", Code: "upstream_response_too_large",
			Msg: "the stream's content and tool calls held are larger than TOOLGUARD_MAX_RESPONSE_BYTES"}, nil)
		return
	}
	switch {
	case held:
	case !changed:
		r.out.Write(ev)
	case !emptyChunk(chunk):
		wire.WriteData(r.out, chunk)
	}
}

// addText adds the text of a content delta to the choice's content, and
// reports whether it is content held under a JSON response format, and
// whether it is text that may hold calls written as text.
func (r *stream) addText(sc *streamChoice, text string) (held, calls bool) {
	sc.content = append(sc.content, text...)
	r.total += int64(len(text))
	sc.sawContent = true
	return r.output != nil, text != "" && r.output == nil
}

// The members of a streamed choice that are read, in one pass.
var streamChoiceFields = []string{"index", "delta", "finish_reason"}

// An eventPlan reads the events of one choice that repeat the one before
// without walking the choice and its delta again. The event a plan is made
// of, walked, had besides its choice's index (absent, null or a number)
// only members the walk ignores, and either
//   - text: a delta whose content is a string, with no refusal and no
//     tool_calls or function_call (absent or null); or
//   - a call's arguments: a delta whose tool_calls holds one call delta,
//     with no content, refusal or function_call (absent or null), and that
//     call delta has an index (a number), no id and no name (absent or
//     null), and function.arguments, a string.
//
// An event that repeats it (wire.EventReader.Repeated) has the same bytes
// but for the values of some strings and numbers, each still a string or
// a number: its walk would find the same members, and differ only in the
// values of the indexes, the text and the arguments, which the plan reads
// from where they are. An event of another shape ends the plan.
type eventPlan struct {
	kind planKind
	// The values' places among those that may change
	// (wire.EventReader.ValueAt): the choice's index (-1 for an absent or
	// null one), the text or the arguments, and the call's index.
	index, value, call int
}

type planKind int

const (
	planNone planKind = iota
	planText
	planCall
)

// makePlan returns the plan of the event just walked (see eventPlan), of
// one choice that does not end it and has no refusal, whose choice's index
// is index, whose delta's content is text, whose delta's member of call
// deltas is calls ("" for none) with nCalls of them, the last one call; no
// plan when the event is of neither kind, or a value is not one the reader
// can say where it is.
func makePlan(e *wire.EventReader, index, text gjson.Result, calls string, nCalls int, call callDelta) eventPlan {
	p := eventPlan{index: -1}
	if index.Exists() && index.Type != gjson.Null {
		var ok bool
		if p.index, ok = valueAt(e, index); !ok {
			return eventPlan{}
		}
	}
	var ok bool
	switch {
	case calls == "" && text.Type == gjson.String:
		p.kind = planText
		p.value, ok = valueAt(e, text)
	case calls == "tool_calls" && nCalls == 1 && text.Type == gjson.Null &&
		call.index.Type == gjson.Number && call.id.Type == gjson.Null && call.name.Type == gjson.Null &&
		call.args.Type == gjson.String:
		// (A missing member reads as gjson.Null, as a null does.)
		p.kind = planCall
		if p.call, ok = valueAt(e, call.index); ok {
			p.value, ok = valueAt(e, call.args)
		}
	}
	if !ok {
		return eventPlan{}
	}
	return p
}

// valueAt is e.ValueAt where v, read from the event in place, is.
func valueAt(e *wire.EventReader, v gjson.Result) (int, bool) {
	if v.Index <= 0 {
		return 0, false // a value gjson does not say the place of
	}
	return e.ValueAt(wire.Span{Start: v.Index, End: v.Index + len(v.Raw)})
}

// read returns what a walk of the event m holds, which repeated the one
// the plan was made from, would find: the choice's index (missing when the
// plan has none), and its text or its one call delta.
func (p eventPlan) read(m *wire.Members, e *wire.EventReader) (index, text gjson.Result, call callDelta) {
	at := func(i int) gjson.Result {
		s := e.Value(i)
		return wire.Parse(m.Body()[s.Start:s.End])
	}
	if p.index >= 0 {
		index = at(p.index)
	}
	if p.kind == planText {
		return index, at(p.value), call
	}
	call.index, call.args = at(p.call), at(p.value)
	return index, text, call
}

// eachChoice hands each choice of an event to f until it returns false:
// from the spans the strict reading recorded, or, past wire.MaxItems,
// walking them.
func eachChoice(m *wire.Members, choices gjson.Result, f func(i int, c gjson.Result) bool) {
	spans, ok := m.Items()
	if !ok {
		i := 0
		choices.ForEach(func(_, c gjson.Result) bool {
			i++
			return f(i-1, c)
		})
		return
	}
	for i, s := range spans {
		if !f(i, m.Item(s)) {
			return
		}
	}
}

// onlyCall returns the one call that all of an event's deltas were for, or
// nil.
func onlyCall(touched []*partialCall) *partialCall {
	if len(touched) == 0 {
		return nil
	}
	for _, p := range touched[1:] {
		if p != touched[0] {
			return nil
		}
	}
	return touched[0]
}

// plainIndex returns an index written as every client reads it: a JSON
// number of digits only. Others are read differently: openai-node files a
// call or a choice by the index as a property name ("00" apart from 0),
// openai-python refuses what is not an integer (1.0), gjson reads "00" as 0.
func plainIndex(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	return n, err == nil && n >= 0
}

func isEmptyArray(raw string) bool {
	for _, c := range raw {
		switch c {
		case '[', ']', ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// emptyChunk reports whether a chunk whose tool-call deltas were taken out
// has nothing left for the client.
func emptyChunk(chunk []byte) bool {
	empty := true
	gjson.GetBytes(chunk, "choices").ForEach(func(_, c gjson.Result) bool {
		if fr := c.Get("finish_reason"); fr.Exists() && fr.Type != gjson.Null {
			empty = false
			return false
		}
		if lp := c.Get("logprobs"); lp.Exists() && lp.Type != gjson.Null {
			empty = false
			return false
		}
		c.Get("delta").ForEach(func(k, v gjson.Result) bool {
			if k.Str == "role" || v.Type != gjson.Null && !(v.Type == gjson.String && v.Str == "") {
				empty = false
			}
			return empty
		})
		return empty
	})
	if u := gjson.GetBytes(chunk, "usage"); u.Exists() && u.Type != gjson.Null {
		empty = false
	}
	return empty
}

// finish ends a stream that the upstream completed: calls still held are
// settled, then the usage chunk, toolguard's outcome comment and [DONE].
func (r *stream) finish(done []byte) {
	for _, idx := range r.order() {
		sc := r.choices[idx]
		if sc.finished {
			continue
		}
		sc.finished = true
		if len(sc.order) > 0 {
			r.releaseContent(sc)
			r.settle(sc)
		} else if !r.settleText(sc) && !r.Done {
			r.settleContent(sc)
		}
		if r.Done {
			return
		}
	}
	if r.usage != nil {
		if len(r.Replies()) > 0 {
			if data, ok := wire.EventData(r.usage); ok {
				summed, err := wire.SumUsage(data, "usage", r.Replies())
				if err != nil {
					r.fail(wire.WriteFailed(err), err)
					return
				}
				wire.WriteData(r.out, summed)
			}
		} else {
			r.out.Write(r.usage)
		}
	}
	if r.anyCalls {
		r.X.Decide(r.failed)
		fmt.Fprintf(r.out, ": toolguard outcome=%s reasks=%d\n\n", r.X.Outcome, r.X.Reasks)
	} else {
		r.X.Outcome = ladder.OutcomeNone
	}
	r.out.Write(done)
	r.Done = true
}
