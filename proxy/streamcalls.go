package proxy

import (
	"sort"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
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
	calls    []*call // the calls settled at the choice's end
}

// partialCall accumulates one call's deltas.
type partialCall struct {
	id, name string
	args     []byte
	call     *call // set once released
	released bool
}

func (r *streamReader) choice(idx int64) *streamChoice {
	sc := r.choices[idx]
	if sc == nil {
		sc = &streamChoice{index: idx, partials: map[int64]*partialCall{}, last: -1}
		r.choices[idx] = sc
	}
	return sc
}

// order returns the choice indices in ascending order.
func (r *streamReader) order() []int64 {
	idx := make([]int64, 0, len(r.choices))
	for i := range r.choices {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	return idx
}

// addDelta adds one tool-call delta to its call. Providers omit the index,
// start it at 1 or interleave several calls, so a delta without an index
// continues the last call unless it brings an id of its own.
func (r *streamReader) addDelta(sc *streamChoice, d gjson.Result, forced int64) {
	idx := forced
	if idx < 0 {
		switch i := d.Get("index"); {
		case i.Exists():
			idx = i.Int()
		case sc.last >= 0:
			idx = sc.last
			if id := d.Get("id").String(); id != "" && sc.partials[idx].id != "" && sc.partials[idx].id != id {
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
	}
	p := sc.partials[idx]
	if p == nil {
		if len(sc.partials) >= maxStreamCalls {
			r.tooManyCalls = true
			return
		}
		p = &partialCall{}
		sc.partials[idx] = p
		sc.order = append(sc.order, idx)
	}
	sc.last = idx
	fn := d.Get("function")
	if sc.legacy {
		fn = d
	}
	if id := d.Get("id").String(); id != "" && p.id == "" {
		p.id = id
	}
	if n := fn.Get("name"); n.Type == gjson.String && n.Str != p.name {
		// Some servers repeat the name in every delta; others split it.
		p.name += n.Str
	}
	if a := fn.Get("arguments"); a.Type == gjson.String {
		if p.released {
			r.ex.h.log.WarnContext(r.outreq.Context(), "tool-call delta after the call was released; ignored", "call_id", p.id)
			return
		}
		p.args = append(p.args, a.Str...)
		r.total += int64(len(a.Str))
	}
}

// object renders the accumulated call as a non-streamed tool call.
func (p *partialCall) object(legacy bool) string {
	fn := `{"name":` + jsonString(p.name) + `,"arguments":` + jsonString(string(p.args)) + `}`
	if legacy {
		return fn
	}
	obj := `{"type":"function","function":` + fn + `}`
	if p.id != "" {
		obj = `{"id":` + jsonString(p.id) + `,"type":"function","function":` + fn + `}`
	}
	return obj
}

// releaseReady releases early, in order, the calls before the one now
// receiving deltas (next) that are valid exactly as received. A call that
// needs mending waits for the end of its choice, and so do the calls after
// it, to keep the model's order: more of it may still come (calls can be
// interleaved), and mending a prefix would be a guess.
func (r *streamReader) releaseReady(sc *streamChoice, next int64) {
	for _, idx := range sc.order {
		p := sc.partials[idx]
		if p.released {
			continue
		}
		if idx == next {
			return
		}
		c := r.ex.check(gjson.Parse(p.object(sc.legacy)), sc.legacy, 0, false)
		if !c.valid() || c.changed() {
			return
		}
		p.call, p.released = c, true
		r.release(sc, c)
	}
}

// settle runs the ladder on a finished choice's calls: every call not yet
// released is checked, invalid ones are re-asked, and the valid ones go out.
func (r *streamReader) settle(sc *streamChoice) {
	ex := r.ex
	var calls []*call
	released := map[*call]bool{}
	for _, idx := range sc.order {
		p := sc.partials[idx]
		if !p.released {
			p.call = ex.checkCall(gjson.Parse(p.object(sc.legacy)), sc.legacy, 0)
		} else {
			released[p.call] = true
		}
		calls = append(calls, p.call)
	}
	ex.calls = append(ex.calls, calls...)
	content := "null"
	if len(sc.content) > 0 {
		content = jsonString(string(sc.content))
	}
	ch := &choice{pos: int(sc.index), legacy: sc.legacy, calls: calls, lastContent: content, lastCalls: calls}
	for ch.invalid() && ex.reasks < ex.reaskBudget(ch) {
		if err := ex.ctx.Err(); err != nil {
			r.done, r.err = true, err
			return
		}
		reply, err := ex.reask(r.outreq, ch)
		if err != nil {
			if ex.ctx.Err() != nil {
				r.done, r.err = true, err
				return
			}
			ex.gaveUp = err.Error()
			break
		}
		r.replies = append(r.replies, reply)
	}
	sc.calls = ch.calls
	passthrough := false
	if ch.invalid() {
		r.failed = true
		switch ex.failurePolicy([]*choice{ch}) {
		case policy.FailPassthrough:
			passthrough = true
		case policy.FailDrop:
		default:
			r.fail(ex.failureError([]*choice{ch}), nil)
			return
		}
	}
	for _, c := range ch.calls {
		if !released[c] && (c.valid() || passthrough) {
			r.release(sc, c)
		}
	}
}

// release sends one whole call to the client as a chunk in the upstream's
// format, reusing the envelope (id, model, created...) of its last chunk.
func (r *streamReader) release(sc *streamChoice, c *call) {
	name := c.name
	if c.valid() && c.tool != nil {
		name = c.tool.name
	}
	fn := `{"name":` + jsonString(name) + `,"arguments":` + jsonString(string(c.args)) + `}`
	var delta string
	if sc.legacy {
		delta = `{"function_call":` + fn + `}`
	} else {
		id := ""
		if c.id != "" {
			id = `"id":` + jsonString(c.id) + `,`
		}
		delta = `{"tool_calls":[{"index":` + strconv.Itoa(sc.released) + `,` + id + `"type":"function","function":` + fn + `}]}`
	}
	chunk := patch(r.template, "choices", `[{"index":`+strconv.FormatInt(sc.index, 10)+`,"delta":`+delta+`,"finish_reason":null}]`)
	r.writeData(r.ex.fallbackChunk(chunk, c))
	sc.released++
}
