package chat

import (
	"context"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// A client's replies repeat one another: the same choice, message and calls
// with other text in them. A reply that repeats the client's last (see
// wire.Repeats) has the structure of the template it repeats, and only its
// strings and numbers may differ; walking its choice, message and calls
// again with gjson (each object scanned by its parent, then by itself) is
// most of what reading it costs.
//
// A replyPlan is what Turns found walking the reply that became a template,
// in Places of that template: where the choice's finish_reason and the
// message's content are, and each call, with its id, name and arguments. It
// is made only for a reply of one choice whose message holds calls in
// tool_calls, each of its values a string or absent. A reply that repeats
// the template is read at those Places: the values are read again where
// they are now, and checked as the walk would check them.
type replyPlan struct {
	finish  plannedValue // the choice's finish_reason, when a string
	content plannedValue // the message's content, when a string or a number
	// contentRaw is the content as JSON (rawOrNull) when it is neither:
	// its bytes are the template's.
	contentRaw string
	calls      []plannedCall
	// usage is where the token counts are, nil when the plan holds none.
	usage *plannedUsage
}

// A plannedUsage is where a reply's token counts are: whether its usage is
// an object, and where its prompt_tokens and completion_tokens are.
type plannedUsage struct {
	object             bool
	prompt, completion plannedValue
}

// newUsagePlan is where the usage of the reply read into m is; nil when
// its counts are in a shape a plan does not hold (neither a number nor a
// string).
func newUsagePlan(m *wire.Members) *plannedUsage {
	u := m.Get("usage")
	if !u.IsObject() {
		return &plannedUsage{}
	}
	var n [2]gjson.Result
	wire.Fields(u, usageFields, n[:])
	p := &plannedUsage{object: true}
	for i, to := range []*plannedValue{&p.prompt, &p.completion} {
		switch n[i].Type {
		case gjson.Null:
			if !n[i].Exists() {
				continue
			}
			return nil
		case gjson.Number, gjson.String:
		default:
			return nil
		}
		var ok bool
		if *to, ok = placeOf(m, n[i]); !ok {
			return nil
		}
	}
	return p
}

// read is Usage for a reply that repeats the template p was made from,
// read into m; read is false when p does not apply.
func (p *plannedUsage) read(m *wire.Members) (prompt, completion int64, ok, read bool) {
	if !p.object {
		return 0, 0, false, true
	}
	in, ok1 := p.prompt.read(m)
	out, ok2 := p.completion.read(m)
	if !ok1 || !ok2 {
		return 0, 0, false, false
	}
	return in.Int(), out.Int(), true, true
}

// A plannedCall is where a call object of tool_calls is, and its members.
type plannedCall struct {
	call           wire.Place
	id, name, args plannedValue
}

// A plannedValue is where a value is; ok false when it is absent.
type plannedValue struct {
	at wire.Place
	ok bool
}

// newPlan starts the plan of choice k of the reply read into m, with its
// finish_reason and content as read; nil when the reply became no template
// or the values are in a shape a plan does not hold.
func newPlan(m *wire.Members, k int, finish, content gjson.Result) *replyPlan {
	if k != 0 || !m.CanPlan() {
		return nil
	}
	p := &replyPlan{}
	var ok bool
	if finish.Type == gjson.String {
		if p.finish, ok = placeOf(m, finish); !ok {
			return nil
		}
	}
	switch content.Type {
	case gjson.String, gjson.Number:
		if p.content, ok = placeOf(m, content); !ok {
			return nil
		}
	default:
		p.contentRaw = rawOrNull(content)
	}
	return p
}

// addCall adds a call of tool_calls to p, the object c with its id, name
// and arguments as read; nil when p is nil, or the call is in a shape a
// plan does not hold.
func (p *replyPlan) addCall(m *wire.Members, body []byte, c, id, name, args gjson.Result) *replyPlan {
	if p == nil {
		return nil
	}
	var pc plannedCall
	var ok bool
	s, sok := wire.SpanOf(body, c)
	if !sok {
		return nil
	}
	if pc.call, ok = m.Place(s); !ok {
		return nil
	}
	for _, v := range []struct {
		r  gjson.Result
		to *plannedValue
	}{{id, &pc.id}, {name, &pc.name}, {args, &pc.args}} {
		switch {
		case !v.r.Exists():
		case v.r.Type != gjson.String:
			return nil
		default:
			if *v.to, ok = placeOf(m, v.r); !ok {
				return nil
			}
		}
	}
	p.calls = append(p.calls, pc)
	return p
}

// placeOf is the Place of v, read from the body read into m.
func placeOf(m *wire.Members, v gjson.Result) (plannedValue, bool) {
	s, ok := wire.SpanOf(m.Body(), v)
	if !ok {
		return plannedValue{}, false
	}
	at, ok := m.Place(s)
	return plannedValue{at: at, ok: ok}, ok
}

// read is the value at v in the body read into m: an empty Result when it
// is absent; false when v is not a Place of the template the body repeats.
func (v plannedValue) read(m *wire.Members) (gjson.Result, bool) {
	s, ok := v.span(m)
	if s.End == 0 {
		return gjson.Result{}, ok
	}
	return m.Item(s), true
}

// raw is read for a value of which only the text and place are used (a
// call's arguments: sentFrom and MendedAt read no more): its text and where
// it starts, not parsed (parsing a string unescapes it into a copy, which
// the arguments' check makes again its own way).
func (v plannedValue) raw(m *wire.Members) (gjson.Result, bool) {
	s, ok := v.span(m)
	if s.End == 0 {
		return gjson.Result{}, ok
	}
	return m.Unparsed(s), true
}

// span is where v is in the body read into m: none (a zero Span, which no
// value has) when v is absent or, with false, not a Place of the template
// the body repeats.
func (v plannedValue) span(m *wire.Members) (wire.Span, bool) {
	if !v.ok {
		return wire.Span{}, true
	}
	return m.Span(v.at)
}

// plannedTurns is Turns for a reply that repeats the template p was made
// from, read into m: the same turns and errors as the walk, read at p's
// Places. It returns false, having checked nothing, when p does not apply.
func (q *Request) plannedTurns(ctx context.Context, x *ladder.Exchange, body []byte, m *wire.Members, p *replyPlan) ([]*ladder.Turn, error, bool) {
	spans, ok := m.Items()
	if !ok || len(spans) != 1 {
		return nil, nil, false
	}
	finish, ok1 := p.finish.read(m)
	content, ok2 := p.content.read(m)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	type read struct{ c, id, name, args gjson.Result }
	var room [4]read
	calls := room[:0]
	for _, pc := range p.calls {
		var r read
		s, ok := m.Span(pc.call)
		if !ok {
			return nil, nil, false
		}
		r.c = m.Item(s)
		var okID, okName, okArgs bool
		r.id, okID = pc.id.read(m)
		r.name, okName = pc.name.read(m)
		r.args, okArgs = pc.args.raw(m)
		if !okID || !okName || !okArgs {
			return nil, nil, false
		}
		calls = append(calls, r)
	}
	cutOff := finish.String() == "length"
	var checked []*ladder.Call
	var mended []ladder.Mended
	for _, r := range calls {
		if ctx != nil && ctx.Err() != nil {
			// The client left: no more work for it.
			return nil, ctx.Err(), true
		}
		checked, mended = check(x, body, sentFrom(r.c, r.id, r.name, r.args), r.name, r.args, cutOff, checked, mended)
	}
	raw := p.contentRaw
	if p.content.ok {
		raw = content.Raw
	}
	v := m.Item(spans[0])
	t := newTurn(0, v.Raw, spans[0], checked, mended, raw)
	if x.Calls == nil {
		// The reply's calls are the exchange's first: they need no copy
		// (capped, so that an append to either is not seen by the other).
		x.Calls = checked[:len(checked):len(checked)]
	} else {
		x.Calls = append(x.Calls, checked...)
	}
	return t.only(), nil, true
}
