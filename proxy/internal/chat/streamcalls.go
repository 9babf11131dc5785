package chat

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// What a stream may hold, whatever the upstream sends: OpenAI allows at most
// 128 choices, and no model makes hundreds of parallel calls in one turn.
const (
	maxStreamChoices = 128
	maxStreamCalls   = 256
)

// streamChoice is what a stream has said so far in one choice.
type streamChoice struct {
	index    int64
	legacy   bool // function_call deltas, not tool_calls
	content  []byte
	partials map[int64]*partialCall
	order    []int64 // call indices in the order they started
	last     int64   // index of the call the last delta was for
	released int     // calls released to the client so far
	finished bool
	cutOff   bool           // it finished at the length limit
	calls    []*ladder.Call // the calls settled at the choice's end
	// held are the upstream's events that carried the choice's tool-call
	// deltas, one call each, in order: if the calls need no change, they go
	// out as they were. synthesize is set once that is impossible (an event
	// shared by calls or choices, an index toolguard had to guess): the
	// calls then go out as chunks of toolguard's.
	held       []heldEvent
	synthesize bool
	// Under a JSON response_format, the content is held until the choice
	// ends and is checked: heldContent are the events that carried it, to
	// go out as they were if it needs no change; contentSynth is set once
	// that is impossible (content shared with another choice or a
	// finish), and the content then goes out as a chunk of toolguard's.
	heldContent  [][]byte
	contentSynth bool
	sawContent   bool
	refused      bool // a refusal delta came: the content is not checked
	// With calls written as text converted, content[:emitted] has gone to
	// the client and the rest is held: it may be the start of a call.
	// holding is set once something was held; since when, holdSince.
	emitted   int
	holding   bool
	holdSince time.Time
	converted bool // calls were read from the content
}

type heldEvent struct {
	ev   []byte
	call *partialCall
}

// partialCall accumulates one call's deltas.
type partialCall struct {
	index    int64 // as the upstream numbered it
	id, name string
	args     []byte
	// nonString holds arguments sent as a JSON value other than a string
	// (an object, mostly): they are checked as the non-streamed path
	// checks them. sawNull: an arguments null was sent, which says nothing
	// unless nothing else comes.
	nonString string
	sawNull   bool
	edits     []repair.Edit // made before the ladder saw it (read from text)
	unread    string        // why a call read from text is invalid as it stands (ladder.Sent.Unread)
	call      *ladder.Call  // set once released
	released  bool
	// synthesize: the call cannot go out as its events (see streamChoice).
	synthesize bool
	// waits: the call could not go out when a later call started (it was
	// not valid yet, or not as its own events), so it is not checked again
	// before its choice ends.
	waits bool
}

func (r *stream) choice(idx int64) *streamChoice {
	sc := r.choices[idx]
	if sc == nil {
		sc = &streamChoice{index: idx, partials: map[int64]*partialCall{}, last: -1}
		r.choices[idx] = sc
	}
	return sc
}

// order returns the choice indices in ascending order.
func (r *stream) order() []int64 {
	idx := make([]int64, 0, len(r.choices))
	for i := range r.choices {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	return idx
}

// A callDelta is the members of a tool-call delta that are read: its index
// and id, and its function's name and arguments (a legacy function_call
// delta's own).
type callDelta struct{ index, id, name, args gjson.Result }

// The members read of a call delta, of its function, and of a legacy
// function_call delta, each in one pass.
var (
	callDeltaFields   = []string{"index", "id", "function"}
	legacyDeltaFields = []string{"id", "name", "arguments"}
)

// readCallDelta reads a tool_calls entry of a delta, or a legacy
// function_call delta.
func readCallDelta(d gjson.Result, legacy bool) callDelta {
	if legacy {
		var f [3]gjson.Result
		wire.Fields(d, legacyDeltaFields, f[:])
		return callDelta{id: f[0], name: f[1], args: f[2]}
	}
	var f [3]gjson.Result
	var fn [2]gjson.Result
	wire.Fields(d, callDeltaFields, f[:])
	wire.Fields(f[2], functionFields, fn[:])
	return callDelta{index: f[0], id: f[1], name: fn[0], args: fn[1]}
}

// callsOf makes sc a choice of call deltas, of tool_calls or of a legacy
// function_call: false when it had the other kind (the stream has failed).
func (r *stream) callsOf(sc *streamChoice, legacy bool) bool {
	if len(sc.order) > 0 && sc.legacy != legacy {
		// openai-node exposes a function_call next to tool_calls;
		// toolguard would check only one.
		r.fail(wire.MalformedReply(errors.New("a choice streams both tool_calls and a legacy function_call")), nil)
		return false
	}
	r.anyCalls = true
	sc.legacy = legacy
	return true
}

// addDelta adds one tool-call delta to its call and returns the call (nil
// past maxStreamCalls). Providers omit the index, start it at 1 or
// interleave several calls, so a delta without an index continues the last
// call unless it brings an id of its own.
func (r *stream) addDelta(sc *streamChoice, d callDelta, forced int64) *partialCall {
	idx := forced
	if idx < 0 {
		switch i := d.index; {
		case i.Type != gjson.Null: // null: read as missing
			var ok bool
			if idx, ok = plainIndex(i); !ok {
				r.fail(wire.MalformedReply(fmt.Errorf("a tool-call index is %s, not a non-negative integer", wire.Clip(i.Raw, 32))), nil)
				return nil
			}
		case sc.last >= 0:
			idx = sc.last
			if id := d.id.String(); id != "" && sc.partials[idx].id != "" && sc.partials[idx].id != id {
				idx = sc.order[len(sc.order)-1] + 1
			}
		default:
			idx = 0
		}
	}
	if sc.last >= 0 && idx != sc.last {
		// The model moved on to another call: the ones before are probably
		// complete, and those valid as received go out now.
		r.releaseReady(sc, idx)
		if r.Done {
			return nil
		}
	}
	p := sc.partials[idx]
	if p == nil {
		if len(sc.partials) >= maxStreamCalls {
			r.tooManyCalls = true
			return nil
		}
		p = &partialCall{index: idx}
		sc.partials[idx] = p
		sc.order = append(sc.order, idx)
	}
	sc.last = idx
	if forced < 0 && d.index.Type == gjson.Null {
		// Where toolguard guessed the index, clients guess too, maybe
		// otherwise: the call goes out renumbered, not as sent.
		p.synthesize = true
	}
	if id := d.id.String(); id != "" && p.id == "" {
		p.id = strings.Clone(id) // a slice of the event otherwise
	}
	switch n := d.name; {
	case n.Type == gjson.Null:
	case n.Type != gjson.String:
		r.fail(wire.MalformedReply(fmt.Errorf("the name of call %q is not a string", wire.Clip(p.id, 64))), nil)
		return p
	case n.Str == "":
	default:
		if p.name != "" {
			// Some servers repeat the name in every delta; others split
			// it. Clients read a name sent twice each their way:
			// openai-node keeps the last, openai-python and openai-go
			// join them. The call goes out named once, as toolguard read
			// it.
			p.synthesize = true
		}
		switch {
		case p.name == "":
			p.name = strings.Clone(n.Str) // a slice of the event otherwise
		case n.Str != p.name:
			p.name += n.Str
		}
	}
	a := d.args
	if !a.Exists() {
		return p
	}
	if p.released {
		r.Log.WarnContext(r.Ctx, "tool-call delta after the call was released; ignored", "call_id", p.id)
		return p
	}
	switch {
	case a.Type == gjson.Null:
		p.sawNull = true
	case a.Type == gjson.String && p.nonString == "":
		p.args = append(p.args, a.Str...)
		r.total += int64(len(a.Str))
	case a.Type != gjson.String && p.nonString == "" && len(p.args) == 0:
		// Arguments as an object (or another value) in one delta, as some
		// servers send them: checked as the non-streamed path checks them.
		p.nonString = strings.Clone(a.Raw)
		r.total += int64(len(a.Raw))
	default:
		// String fragments and a JSON value for one call: no client reads
		// that as one thing.
		r.fail(wire.MalformedReply(fmt.Errorf("the arguments of call %q mix string fragments and a JSON %s", wire.Clip(p.id, 64), typeOf(a))), nil)
	}
	return p
}

func typeOf(r gjson.Result) string {
	switch {
	case r.IsObject():
		return "object"
	case r.IsArray():
		return "array"
	case r.Type == gjson.Number:
		return "number"
	case r.Type == gjson.String:
		return "string"
	}
	return "value"
}

// sent is the accumulated call as the ladder reads it.
func (p *partialCall) sent() ladder.Sent {
	args := wire.Quote(string(p.args))
	switch {
	case p.nonString != "":
		args = p.nonString
	case p.sawNull && len(p.args) == 0:
		args = "null"
	}
	return ladder.Sent{ID: p.id, Name: p.name, Args: args, Edits: p.edits, Unread: p.unread}
}

// releaseReady releases early, in order, the calls before the one now
// receiving deltas (next) that are valid exactly as received. A call that
// needs mending waits for the end of its choice, and so do the calls after
// it, to keep the model's order: more of it may still come (calls can be
// interleaved), and mending a prefix would be a guess. A call whose events
// are held goes out as those events, when they come before any other
// call's; otherwise it waits too.
func (r *stream) releaseReady(sc *streamChoice, next int64) {
	for _, idx := range sc.order {
		p := sc.partials[idx]
		if p.released {
			continue
		}
		if idx == next || p.waits {
			return
		}
		// Each call is checked here at most once unless it goes out, so
		// interleaved deltas cannot make the work grow with their number
		// times the size of a held call.
		c := r.X.Check(p.sent(), 0, false, false)
		if !c.Valid() || c.Changed() || c.Unchecked {
			p.waits = true
			return
		}
		if !sc.synthesize {
			if !r.releaseHeld(sc, p, c) {
				// What stops it (its index, its events shared with
				// another call's) lasts until the choice ends.
				p.waits = true
				return
			}
			continue
		}
		p.call, p.released = c, true
		r.release(sc, c)
	}
}

// releaseHeld sends a call as the events it came in, if they are the first
// held and its index is the one it keeps among the calls released.
func (r *stream) releaseHeld(sc *streamChoice, p *partialCall, c *ladder.Call) bool {
	if p.synthesize || (!sc.legacy && p.index != int64(sc.released)) {
		return false
	}
	n := 0
	for n < len(sc.held) && sc.held[n].call == p {
		n++
	}
	for _, h := range sc.held[n:] {
		if h.call == p {
			return false // interleaved with another call's events
		}
	}
	for _, h := range sc.held[:n] {
		r.out.Write(h.ev)
	}
	sc.held = sc.held[n:]
	p.call, p.released = c, true
	sc.released++
	return true
}

// settle runs the ladder on a finished choice's calls: every call not yet
// released is checked, invalid ones are re-asked, and the valid ones go out.
func (r *stream) settle(sc *streamChoice) {
	x := r.X
	var calls []*ladder.Call
	released := map[*ladder.Call]bool{}
	for _, idx := range sc.order {
		p := sc.partials[idx]
		if !p.released {
			p.call = x.Check(p.sent(), 0, true, sc.cutOff)
		} else {
			released[p.call] = true
		}
		calls = append(calls, p.call)
	}
	x.Calls = append(x.Calls, calls...)
	ct := &turn{legacy: sc.legacy, lastContent: "null"}
	if len(sc.content) > 0 {
		ct.streamed = sc.content[:len(sc.content):len(sc.content)] // quoted if a re-ask needs it
	}
	ct.Turn = ladder.Turn{Index: int(sc.index), Calls: calls, Last: calls, Wire: ct}
	t := &ct.Turn
	invalid, passthrough, failure, err := r.SettleTurn(t)
	if err != nil {
		r.Abort, r.Done = err, true
		return
	}
	sc.calls = t.Calls
	r.failed = r.failed || invalid
	if failure != nil {
		r.fail(failure, nil)
		return
	}
	if r.releaseAllHeld(sc, t.Calls, released) {
		return
	}
	r.unhold(sc)
	for _, c := range t.Calls {
		if !released[c] && (c.Valid() || passthrough) {
			r.release(sc, c)
		}
	}
}

// releaseAllHeld sends the choice's remaining calls as the events they came
// in, in the upstream's order, when every one of them is exactly as the
// model sent it and keeps its index; it reports whether it did.
func (r *stream) releaseAllHeld(sc *streamChoice, calls []*ladder.Call, released map[*ladder.Call]bool) bool {
	if sc.synthesize {
		return false
	}
	pos := sc.released
	for _, c := range calls {
		if released[c] {
			continue
		}
		p := sc.partialOf(c)
		if p == nil || p.synthesize || !c.Valid() || c.Changed() || c.Unchecked || c.Attempt != 0 ||
			(!sc.legacy && p.index != int64(pos)) {
			return false
		}
		pos++
	}
	if len(calls)-len(released) != len(sc.order)-countReleased(sc) {
		return false // a call was dropped
	}
	for _, h := range sc.held {
		r.out.Write(h.ev)
	}
	sc.held = nil
	for _, c := range calls {
		if !released[c] {
			sc.partialOf(c).released = true
		}
	}
	sc.released = pos
	return true
}

func countReleased(sc *streamChoice) int {
	n := 0
	for _, p := range sc.partials {
		if p.released {
			n++
		}
	}
	return n
}

// release sends one whole call to the client as a chunk in the upstream's
// format, reusing the envelope (id, model, created...) of the first chunk,
// with its index renumbered among the calls released.
func (r *stream) release(sc *streamChoice, c *ladder.Call) {
	fn := `{"name":` + wire.Quote(c.ToolName()) + `,"arguments":` + wire.Quote(string(c.Args)) + `}`
	var delta string
	if sc.legacy {
		delta = `{"function_call":` + fn + `}`
	} else {
		id := ""
		if c.ID != "" {
			id = `"id":` + wire.Quote(c.ID) + `,`
		}
		delta = `{"tool_calls":[{"index":` + strconv.Itoa(sc.released) + `,` + id + `"type":"function","function":` + fn + `}]}`
	}
	chunk, err := sjson.SetRawBytes(append([]byte(nil), r.template...), "choices", []byte(`[{"index":`+strconv.FormatInt(sc.index, 10)+`,"delta":`+delta+`,"finish_reason":null}]`))
	if err != nil {
		r.fail(wire.WriteFailed(err), err)
		return
	}
	if m := r.ModelOf(c); m != "" {
		// The stream's other chunks keep the first chunk's envelope, but
		// this call was written by another model.
		if chunk, err = wire.Patch(chunk, "model", wire.Quote(m)); err != nil {
			r.fail(wire.WriteFailed(err), err)
			return
		}
	}
	wire.WriteData(r.out, chunk)
	sc.released++
}

// partialOf returns the held call that c was checked from, or nil (a call
// of a re-ask).
func (sc *streamChoice) partialOf(c *ladder.Call) *partialCall {
	for _, idx := range sc.order {
		if p := sc.partials[idx]; p.call == c {
			return p
		}
	}
	return nil
}

// unhold gives up holding the choice's events whole: what they say besides
// the tool-call deltas (a role, content, logprobs) goes out now, and the
// choice's calls will go out as chunks of toolguard's.
func (r *stream) unhold(sc *streamChoice) {
	sc.synthesize = true
	for _, h := range sc.held {
		data, _ := wire.EventData(h.ev)
		chunk := data
		var err error
		for _, k := range []string{"tool_calls", "function_call"} {
			if chunk, err = sjson.DeleteBytes(chunk, "choices.0.delta."+k); err != nil {
				r.fail(wire.WriteFailed(err), err)
				return
			}
		}
		if !emptyChunk(chunk) {
			wire.WriteData(r.out, chunk)
		}
	}
	sc.held = nil
}
