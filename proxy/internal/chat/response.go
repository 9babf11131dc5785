package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// turn is what the chat format keeps of a choice that holds tool calls,
// around the ladder's Turn (whose Wire points back to it).
type turn struct {
	ladder.Turn
	// alone is the turns of a reply that has only this one (see only).
	alone [1]*ladder.Turn

	raw    string // the choice's JSON as the model sent it
	start  int    // where raw starts in the response body
	end    int    // where it ends
	legacy bool   // a function_call, not tool_calls
	output bool   // the content under a JSON response_format, not calls
	// converted: the calls were written as text in the content; rest is
	// the content left around them.
	converted bool
	rest      string

	// The model's last message in this choice, for the next re-ask: its
	// content (raw JSON, "null" if none; see lastContentJSON), and the
	// messages the re-asks have added to the conversation so far.
	lastContent string
	// streamed is a streamed choice's text, quoted into lastContent only
	// when a re-ask needs it: most streams have none.
	streamed []byte
	history  []string
	pending  []string // the messages of the re-ask in flight

	// mended are the calls of the model's first reply that the ladder
	// mended, with where their name and arguments are in the body: a
	// mended call is written back over those values alone (Turn.InPlace).
	mended []ladder.Mended
}

func turnOf(t *ladder.Turn) *turn { return t.Wire.(*turn) }

// lastContentJSON is the content of the model's last message as raw JSON.
func (w *turn) lastContentJSON() string {
	if w.streamed != nil {
		w.lastContent, w.streamed = wire.Quote(string(w.streamed)), nil
	}
	return w.lastContent
}

// ReadReply checks that a chat completion reads the same to toolguard as
// to a client. The error is a *wire.Error for the client.
//
// What it finds of the reply's members and choices is kept for Usage and
// Turns, which read the same body next. r reads a reply that repeats the
// client's last with other values without tokenising it again.
func (q *Request) ReadReply(body []byte, r wire.Repeats) error {
	if err := q.reply.Read(body, responseShape, "choices", r); err != nil {
		return wire.MalformedReply(err)
	}
	return nil
}

// Usage returns the prompt and completion tokens a reply reports.
func (q *Request) Usage(body []byte) (prompt, completion int64, ok bool) {
	var u gjson.Result
	if m := q.reply.Of(body); m != nil {
		if p, ok := m.Plan().(*replyPlan); ok && p.usage != nil {
			if prompt, completion, ok, read := p.usage.read(m); read {
				return prompt, completion, ok
			}
		}
		u = m.Get("usage")
	} else {
		u = wire.Parse(body).Get("usage")
	}
	if !u.IsObject() {
		return 0, 0, false
	}
	var n [2]gjson.Result
	wire.Fields(u, usageFields, n[:])
	return n[0].Int(), n[1].Int(), true
}

// Turns checks the tool calls of every choice of a chat completion (read
// by ReadReply) and records them in x. It fails on a response whose calls
// are in a shape a client would read differently (see sentOf).
func (q *Request) Turns(ctx context.Context, x *ladder.Exchange, body []byte) ([]*ladder.Turn, error) {
	m := q.reply.Of(body)
	if m == nil {
		m = wire.ReadMembers(body, "choices")
	}
	defer q.reply.Done(m) // Turns is the last to read them

	choices := m.Get("choices")
	if choices.Exists() && !choices.IsArray() && choices.Type != gjson.Null {
		return nil, errors.New("choices is not an array")
	}
	if !choices.IsArray() {
		return nil, nil
	}
	if p, ok := m.Plan().(*replyPlan); ok {
		if out, err, ok := q.plannedTurns(ctx, x, body, m, p); ok {
			return out, err
		}
	}
	var out []*ladder.Turn
	var err error
	var choice [2]gjson.Result  // message, finish_reason
	var message [3]gjson.Result // tool_calls, function_call, content
	var plan *replyPlan
	eachChoice(m, choices, func(k int, v gjson.Result) bool {
		wire.Fields(v, choiceFields, choice[:])
		msg, cutOff := choice[0], choice[1].String() == "length"
		wire.Fields(msg, messageFields, message[:])
		content := message[2]
		var calls []*ladder.Call
		var mended []ladder.Mended
		plan = newPlan(m, k, choice[1], content)
		legacy, perr := sentOf(message[0], message[1], func(s ladder.Sent, c, id, name, args gjson.Result) bool {
			if ctx != nil && ctx.Err() != nil {
				// The client left: no more work for it.
				err = ctx.Err()
				return false
			}
			calls, mended = check(x, body, s, name, args, cutOff, calls, mended)
			plan = plan.addCall(m, body, c, id, name, args)
			return true
		})
		output, converted, rest := false, false, ""
		if len(calls) == 0 && err == nil && perr == nil {
			if content.Type == gjson.String {
				var sent []ladder.Sent
				if sent, rest = x.TextCalls(content.Str, k); sent != nil {
					for _, s := range sent {
						calls = append(calls, x.Check(s, 0, true, cutOff))
					}
					converted = true
				}
			}
			if !converted && q.output != nil {
				s, ok, cerr := q.content(msg)
				if cerr != nil {
					err = fmt.Errorf("choice %d: %w", k, cerr)
					return false
				}
				if ok {
					calls, output = append(calls, x.Check(s, 0, true, cutOff)), true
				}
			}
		}
		switch {
		case err != nil:
			return false
		case perr != nil:
			err = fmt.Errorf("choice %d: %w", k, perr)
			return false
		case len(calls) == 0:
			return true
		}
		at, ok := wire.SpanOf(body, v)
		if !ok {
			err = fmt.Errorf("choice %d: its position in the body is unknown", k)
			return false
		}
		if legacy || output || converted {
			plan = nil
		}
		t := newTurn(k, v.Raw, at, calls, mended, rawOrNull(content))
		t.legacy, t.output, t.converted, t.rest = legacy, output, converted, rest
		if converted {
			t.lastContent = contentOrNull(rest)
		}
		x.Calls = append(x.Calls, calls...)
		out = append(out, &t.Turn)
		return true
	})
	if err == nil && len(out) == 1 && plan != nil && len(plan.calls) == len(out[0].Calls) {
		plan.usage = newUsagePlan(m)
		m.SetPlan(plan)
	}
	return out, err
}

// check checks the call s as read from body, its name and arguments the
// members read, appending it to calls, and to mended when the ladder
// mended it.
func check(x *ladder.Exchange, body []byte, s ladder.Sent, name, args gjson.Result, cutOff bool,
	calls []*ladder.Call, mended []ladder.Mended) ([]*ladder.Call, []ladder.Mended) {
	c := x.Check(s, 0, true, cutOff)
	calls = append(calls, c)
	if m, ok := ladder.MendedAt(c, body, name, args); ok {
		mended = append(mended, m)
	}
	return calls, mended
}

// newTurn is the turn of choice k, raw at at in the body, with its calls
// as checked and the message's content.
func newTurn(k int, raw string, at wire.Span, calls []*ladder.Call, mended []ladder.Mended, content string) *turn {
	t := &turn{raw: raw, start: at.Start, end: at.End, lastContent: content, mended: mended}
	t.Turn = ladder.Turn{Index: k, Calls: calls, Last: calls, Wire: t}
	return t
}

// only returns the turns of a reply of which t is the only one, in t's own
// room for them.
func (t *turn) only() []*ladder.Turn {
	t.alone[0] = &t.Turn
	return t.alone[:]
}

// content reads a message's content as the call that stands for it under a
// JSON response_format: a string content, or "" for none (null or absent:
// an empty output, checked as a stream that sent no content is), when the
// model did not refuse (a refusal passes as it is). Content in another
// shape (an array of parts, a number) is an error: clients read it in ways
// of their own, and it would reach them unchecked.
func (q *Request) content(msg gjson.Result) (ladder.Sent, bool, error) {
	c := msg.Get("content")
	if r := msg.Get("refusal"); r.Type == gjson.String && r.Str != "" {
		return ladder.Sent{}, false, nil
	}
	args := c.Raw
	switch {
	case c.Type == gjson.Null:
		args = `""`
	case c.Type != gjson.String:
		return ladder.Sent{}, false, fmt.Errorf("message.content is a JSON %s, not a string: under a JSON response_format toolguard reads only a string", typeOf(c))
	}
	return ladder.Sent{Name: ladder.OutputTool, Tool: q.output, Args: args}, true, nil
}

// sentOf reads the calls of one assistant message (its tool_calls and
// function_call members, either absent), handing each to add until it
// returns false, and reports whether the message holds a legacy
// function_call. Calls in a shape that no client expects are an error, not
// "no calls": a client may still find calls there (a tool_calls object, or
// a function_call that openai-node exposes next to tool_calls), which
// would then reach it unchecked.
//
// add is also handed the call object, and its id, name and arguments
// members, as read.
func sentOf(tcs, fc gjson.Result, add func(s ladder.Sent, call, id, name, args gjson.Result) bool) (bool, error) {
	if tcs.Exists() && tcs.Type != gjson.Null && !tcs.IsArray() {
		return false, errors.New("message.tool_calls is not an array")
	}
	if fc.Exists() && fc.Type != gjson.Null && !fc.IsObject() {
		return false, errors.New("message.function_call is not an object")
	}
	n := 0
	if tcs.IsArray() {
		var err error
		tcs.ForEach(func(i, tc gjson.Result) bool {
			if !tc.IsObject() {
				err = fmt.Errorf("message.tool_calls[%d] is not an object", i.Int())
				return false
			}
			n++
			return add(sentCall(tc, false))
		})
		if err != nil {
			return false, err
		}
	}
	if fc.IsObject() {
		if n > 0 {
			return false, errors.New("message holds both tool_calls and a legacy function_call")
		}
		add(sentCall(fc, true))
		return true, nil
	}
	return false, nil
}

// sentCall reads a tool_calls entry, or a legacy function_call object:
// the call, the object, and its id, name and arguments members as read.
func sentCall(raw gjson.Result, legacy bool) (ladder.Sent, gjson.Result, gjson.Result, gjson.Result, gjson.Result) {
	var id, name, args gjson.Result
	if legacy {
		var f [3]gjson.Result
		wire.Fields(raw, legacyFields, f[:])
		id, name, args = f[0], f[1], f[2]
	} else {
		var c, f [2]gjson.Result
		wire.Fields(raw, callFields, c[:])
		wire.Fields(c[1], functionFields, f[:])
		id, name, args = c[0], f[0], f[1]
	}
	return sentFrom(raw, id, name, args), raw, id, name, args
}

// sentFrom is the call of the object raw with its id, name and arguments
// members as read.
func sentFrom(raw, id, name, args gjson.Result) ladder.Sent {
	s := ladder.Sent{ID: id.String(), Name: name.String(), Raw: raw.Raw}
	if args.Exists() {
		s.Args = args.Raw
	}
	return s
}

// The members a reply's choices, messages and calls are read for, each
// object in one pass (wire.Fields).
var (
	choiceFields   = []string{"message", "finish_reason"}
	messageFields  = []string{"tool_calls", "function_call", "content"}
	callFields     = []string{"id", "function"}
	functionFields = []string{"name", "arguments"}
	legacyFields   = []string{"id", "name", "arguments"}
	usageFields    = []string{"prompt_tokens", "completion_tokens"}
)

// contentOrNull is a content as JSON: null when it is empty.
func contentOrNull(s string) string {
	if strings.TrimSpace(s) == "" {
		return "null"
	}
	return wire.Quote(s)
}

func rawOrNull(r gjson.Result) string {
	if !r.Exists() {
		return "null"
	}
	return r.Raw
}

// prefix is where a call object holds its name and arguments.
func prefix(legacy bool) string {
	if legacy {
		return ""
	}
	return "function."
}

// output returns the call object of a JSON reply to send to the client.
func output(c *ladder.Call, legacy bool) (string, error) {
	if !c.Changed() {
		return c.Raw, nil
	}
	out, err := sjson.Set(c.Raw, prefix(legacy)+"arguments", string(c.Args))
	if err != nil {
		return "", fmt.Errorf("write the arguments of call %q: %w", c.ID, err)
	}
	if c.Tool != nil && c.Tool.Name != c.Name {
		if out, err = sjson.Set(out, prefix(legacy)+"name", c.Tool.Name); err != nil {
			return "", fmt.Errorf("write the name of call %q: %w", c.ID, err)
		}
	}
	return out, nil
}

// forHistory returns the call as it goes back to the model in a re-ask: as
// sent, except that arguments that are not a string become one, because
// providers reject a conversation whose history holds non-string arguments.
// A call that came in a stream is written as a JSON reply would hold it.
func forHistory(c *ladder.Call, legacy bool) (string, error) {
	raw := c.Raw
	if raw == "" {
		raw = object(c.ID, c.Name, c.RawArgs, legacy)
	}
	if gjson.Get(raw, prefix(legacy)+"arguments").Type == gjson.String {
		return raw, nil
	}
	out, err := sjson.Set(raw, prefix(legacy)+"arguments", c.RawArgs)
	if err != nil {
		return "", fmt.Errorf("write the arguments of call %q for the history: %w", c.ID, err)
	}
	return out, nil
}

// object writes a call as a JSON reply holds it; args is raw JSON.
func object(id, name, args string, legacy bool) string {
	fn := `{"name":` + wire.Quote(name) + `,"arguments":` + args + `}`
	if legacy {
		return fn
	}
	if id == "" {
		return `{"type":"function","function":` + fn + `}`
	}
	return `{"id":` + wire.Quote(id) + `,"type":"function","function":` + fn + `}`
}

// Write writes the checked calls back into the first response: mended
// calls as mended, invalid ones dropped, and the calls of re-asks in place
// of the ones they correct. The message's other fields stay as the model
// first sent them (a streaming client has already seen its text). The model
// that answered last and the usage summed over every attempt are reported.
//
// A choice whose calls the ladder only mended has their mended values
// written over the model's (Turn.InPlace), every other byte kept; any other
// choice that changes is rewritten on its own bytes. The body is built once
// from the unchanged spans and the edits, so the work is linear in the size
// of the response however many choices change.
// A rewrite that fails is an error: the reply must not go out as the model
// sent it while counted as mended.
func (q *Request) Write(first []byte, turns []*ladder.Turn, replies [][]byte) ([]byte, error) {
	var edits []wire.Splice
	for _, t := range turns {
		if w := turnOf(t); !w.output && !w.converted {
			if ss, ok := t.InPlace(w.mended, true); ok {
				edits = append(edits, ss...)
				continue
			}
		}
		el, dirty, err := rewrite(t)
		if err != nil {
			return nil, fmt.Errorf("choice %d: %w", t.Index, err)
		}
		if dirty {
			w := turnOf(t)
			edits = append(edits, wire.Splice{Start: w.start, End: w.end, With: el})
		}
	}
	body, err := wire.ApplySplices(first, edits)
	if err != nil {
		return nil, err
	}
	if len(replies) > 0 {
		if m := gjson.GetBytes(replies[len(replies)-1], "model"); m.Type == gjson.String {
			if body, err = sjson.SetRawBytes(body, "model", []byte(m.Raw)); err != nil {
				return nil, fmt.Errorf("set model: %w", err)
			}
		}
		if body, err = wire.SumUsage(body, "usage", replies); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// SumUsage is the first response with the usage summed over every attempt,
// for calls passed on as the model sent them.
func (q *Request) SumUsage(first []byte, replies [][]byte) ([]byte, error) {
	return wire.SumUsage(first, "usage", replies)
}

// rewrite returns the choice's JSON with its checked calls written back,
// and whether it differs from what the model sent.
func rewrite(t *ladder.Turn) ([]byte, bool, error) {
	w := turnOf(t)
	switch {
	case w.output:
		return rewriteContent(t)
	case w.converted:
		return rewriteConverted(t)
	}
	var keep []string
	dirty := t.Touched
	for _, c := range t.Calls {
		if !c.Valid() {
			dirty = true
			continue
		}
		if c.Changed() {
			dirty = true
		}
		out, err := output(c, w.legacy)
		if err != nil {
			return nil, false, err
		}
		keep = append(keep, out)
	}
	if !dirty {
		return nil, false, nil
	}
	field := "message.tool_calls"
	if w.legacy {
		field = "message.function_call"
		keep = keep[:min(len(keep), 1)]
	}
	el := []byte(w.raw)
	var err error
	switch {
	case len(keep) == 0:
		if el, err = sjson.DeleteBytes(el, field); err != nil {
			return nil, false, fmt.Errorf("remove %s: %w", field, err)
		}
		if fr := gjson.GetBytes(el, "finish_reason").String(); fr == "tool_calls" || fr == "function_call" {
			if el, err = sjson.SetRawBytes(el, "finish_reason", []byte(`"stop"`)); err != nil {
				return nil, false, fmt.Errorf("set finish_reason: %w", err)
			}
		}
	case w.legacy:
		el, err = sjson.SetRawBytes(el, field, []byte(keep[0]))
	default:
		el, err = sjson.SetRawBytes(el, field, []byte("["+strings.Join(keep, ",")+"]"))
	}
	if err != nil {
		return nil, false, fmt.Errorf("write %s: %w", field, err)
	}
	return el, true, nil
}

// rewriteContent returns the choice's JSON with its content as the ladder
// made it (mended, or the re-ask's), and whether it differs from what the
// model sent.
func rewriteContent(t *ladder.Turn) ([]byte, bool, error) {
	w := turnOf(t)
	if len(t.Calls) == 0 || !t.Calls[0].Valid() {
		return nil, false, nil // a failure is never written back
	}
	c := t.Calls[0]
	if !c.Changed() && c.Attempt == 0 {
		return nil, false, nil
	}
	el, err := sjson.SetRawBytes([]byte(w.raw), "message.content", []byte(wire.Quote(string(c.Args))))
	if err != nil {
		return nil, false, fmt.Errorf("write message.content: %w", err)
	}
	return el, true, nil
}

// rewriteConverted returns the choice's JSON with the calls read from its
// content written as tool_calls, the content left around them, and
// finish_reason tool_calls. When no call is valid, the choice stays as the
// model sent it: text.
func rewriteConverted(t *ladder.Turn) ([]byte, bool, error) {
	w := turnOf(t)
	var keep []string
	for _, c := range t.Calls {
		if c.Valid() {
			keep = append(keep, object(c.ID, c.ToolName(), wire.Quote(string(c.Args)), false))
		}
	}
	if len(keep) == 0 {
		return nil, false, nil
	}
	el, err := sjson.SetRawBytes([]byte(w.raw), "message.content", []byte(contentOrNull(w.rest)))
	if err == nil {
		el, err = sjson.SetRawBytes(el, "message.tool_calls", []byte("["+strings.Join(keep, ",")+"]"))
	}
	if err == nil && gjson.GetBytes(el, "finish_reason").Str == "stop" {
		el, err = sjson.SetRawBytes(el, "finish_reason", []byte(`"tool_calls"`))
	}
	if err != nil {
		return nil, false, fmt.Errorf("write the calls read from the content: %w", err)
	}
	return el, true, nil
}
