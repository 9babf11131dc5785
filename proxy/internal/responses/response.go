package responses

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// turn is what the format keeps of a response whose output holds function
// calls, around the ladder's Turn (whose Wire points back to it).
type turn struct {
	ladder.Turn
	// first are the calls of the first reply, one per function_call item
	// of its output, in order.
	first []*ladder.Call
	// The span of the output array in the first reply; zero for a turn of
	// a stream.
	start, end int

	// The input items the re-asks have added so far, and those of the
	// re-ask in flight.
	history, pending []string

	// text is where the output's text is (see textOf), for a turn whose
	// calls stand for it: output, the text under a JSON text.format;
	// converted, calls written in it (rest is the text left around them).
	text      textAt
	output    bool
	converted bool
	rest      string
	// lastText is the model's last text, for the next re-ask of an output
	// turn.
	lastText string
	// mended are the calls of first that the ladder mended, with where
	// their name and arguments are in the body: a mended call is written
	// back over those values alone (Turn.InPlace).
	mended []ladder.Mended
}

func turnOf(t *ladder.Turn) *turn { return t.Wire.(*turn) }

// ReadReply checks that a response reads the same to toolguard as to a
// client. The error is a *wire.Error for the client.
//
// Where it finds the response's members is kept for Usage and Turns, which
// read the same body next: a response echoes its request's instructions and
// tools, which gjson would read past for each member after them. r reads a
// response that repeats the client's last with other values without
// tokenising it again.
func (q *Request) ReadReply(body []byte, r wire.Repeats) error {
	if err := q.reply.Read(body, responseShape, "", r); err != nil {
		return wire.MalformedReply(err)
	}
	return nil
}

// read returns body as gjson reads it, with the members ReadReply found if
// it read this very slice.
func (q *Request) read(body []byte) wire.Value {
	return wire.Value{Result: wire.Parse(body), M: q.reply.Of(body)}
}

// Usage returns the input and output tokens a reply reports: a response,
// or a stream's event that carries one.
func (q *Request) Usage(body []byte) (in, out int64, ok bool) {
	b := q.read(body)
	if u := b.Get("usage"); u.Exists() {
		return usageAt(u)
	}
	return usageAt(b.Get("response.usage"))
}

func usageAt(u gjson.Result) (in, out int64, ok bool) {
	if !u.IsObject() {
		return 0, 0, false
	}
	var n [2]gjson.Result
	wire.Fields(u, usageFields, n[:])
	return n[0].Int(), n[1].Int(), true
}

// usageFields are the members of a usage object that Usage reads.
var usageFields = []string{"input_tokens", "output_tokens"}

// cutOff reports whether a response (a gjson.Result or a wire.Value)
// stopped at the model's output limit.
func cutOff(resp interface{ Get(string) gjson.Result }) bool {
	return resp.Get("status").Str == "incomplete" && resp.Get("incomplete_details.reason").Str == "max_output_tokens"
}

// Turns checks the function calls of a response (read by ReadReply) and
// records them in x: one turn for the whole output, or none.
func (q *Request) Turns(ctx context.Context, x *ladder.Exchange, body []byte) ([]*ladder.Turn, error) {
	resp := q.read(body)
	if resp.M != nil {
		defer q.reply.Done(resp.M) // Turns is the last to read them
	}
	output := resp.Get("output")
	if output.Exists() && output.Type != gjson.Null && !output.IsArray() {
		return nil, errors.New("output is not an array")
	}
	var calls []*ladder.Call
	var mended []ladder.Mended
	var err error
	cut := cutOff(resp)
	if perr := sentOf(output, func(s ladder.Sent, name, args gjson.Result) bool {
		if ctx != nil && ctx.Err() != nil {
			// The client left: no more work for it.
			err = ctx.Err()
			return false
		}
		c := x.Check(s, 0, true, cut)
		calls = append(calls, c)
		if m, ok := ladder.MendedAt(c, body, name, args); ok {
			mended = append(mended, m)
		}
		return true
	}); err != nil || perr != nil {
		return nil, cmpErr(err, perr)
	}
	t := &turn{mended: mended}
	if len(calls) == 0 {
		at, shape := readText(output)
		if shape == unreadText && q.output != nil {
			return nil, errUnreadText
		}
		if shape == oneText {
			if found := x.ReadTextCalls(at.text, 0); found.Sent != nil {
				for _, s := range found.Sent {
					calls = append(calls, x.Check(s, 0, true, cut))
				}
				t.converted, t.rest, t.text = true, found.Rest, at
			} else if q.output != nil {
				calls = append(calls, x.Check(ladder.Sent{Name: ladder.OutputTool, Tool: q.output, Args: wire.Quote(at.text)}, 0, true, cut))
				t.output, t.text, t.lastText = true, at, at.text
			}
		}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	at, ok := wire.SpanOf(body, output)
	if !ok {
		return nil, errors.New("the position of output in the body is unknown")
	}
	x.Calls = append(x.Calls, calls...)
	t.first, t.start, t.end = calls, at.Start, at.End
	t.Turn = ladder.Turn{Calls: calls, Last: calls, Wire: t}
	return []*ladder.Turn{&t.Turn}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// textAt is the text of a response's output: the one output_text part of
// its one assistant message item.
type textAt struct {
	text       string
	item, part int
}

// textShape is how an output holds its text.
type textShape int

const (
	noText      textShape = iota // no message, or messages with no parts
	oneText                      // one message with one output_text part
	refusalOnly                  // messages whose parts are all refusals
	unreadText                   // any other shape: two messages or parts, text beside a refusal...
)

// readText finds the text of an output: where its one output_text part is
// when it has one message with one such part, as a reply to a request for
// JSON or with tools declared does, and otherwise the shape it is in.
func readText(output gjson.Result) (textAt, textShape) {
	var at textAt
	messages, texts, refusals, others := 0, 0, 0, 0
	output.ForEach(func(i, item gjson.Result) bool {
		if item.Get("type").Str != "message" {
			return true
		}
		messages++
		content := item.Get("content")
		if content.Exists() && content.Type != gjson.Null && !content.IsArray() {
			others++
			return true
		}
		content.ForEach(func(j, part gjson.Result) bool {
			switch t := part.Get("text"); {
			case part.Get("type").Str == "output_text" && t.Type == gjson.String:
				at = textAt{text: t.Str, item: int(i.Int()), part: int(j.Int())}
				texts++
			case part.Get("type").Str == "refusal":
				refusals++
			default:
				others++
			}
			return true
		})
		return true
	})
	switch {
	case messages == 1 && texts == 1 && refusals == 0 && others == 0:
		return at, oneText
	case texts == 0 && others == 0 && refusals > 0:
		return textAt{}, refusalOnly
	case texts == 0 && others == 0:
		return textAt{}, noText
	}
	return textAt{}, unreadText
}

// textOf finds the text of an output that holds one assistant message
// with one output_text part (and no refusal); ok is false otherwise.
func textOf(output gjson.Result) (textAt, bool) {
	at, shape := readText(output)
	return at, shape == oneText
}

// errUnreadText refuses an output whose text is in a shape that toolguard
// does not check under a JSON text.format: clients read one part or join
// them all, and would get text that was not checked.
var errUnreadText = errors.New("under a JSON text.format, the output's text is not one output_text part of one message " +
	"(two messages, two text parts, text beside a refusal, or a part of another type): toolguard does not check it")

// sentOf reads the function_call items of an output array, handing each
// to add until it returns false. A function_call item in a shape no client
// expects is an error, not "no call".
//
// add is also handed the item's name member (none when the item has a
// namespace, whose name is not the tool's key alone) and its arguments.
func sentOf(output gjson.Result, add func(s ladder.Sent, name, args gjson.Result) bool) error {
	var err error
	output.ForEach(func(i, item gjson.Result) bool {
		if !item.IsObject() {
			err = fmt.Errorf("output[%d] is not an object", i.Int())
			return false
		}
		if item.Get("type").Str != "function_call" {
			return true
		}
		s, name, args, e := sentItem(item)
		if e != nil {
			err = fmt.Errorf("output[%d]: %w", i.Int(), e)
			return false
		}
		return add(s, name, args)
	})
	return err
}

// sentItem reads a function_call item, with its name member (none when
// the item has a namespace) and its arguments member as read.
func sentItem(item gjson.Result) (s ladder.Sent, name, args gjson.Result, err error) {
	var f [4]gjson.Result
	wire.Fields(item, itemFields, f[:])
	name, ns := f[0], f[1]
	if name.Exists() && name.Type != gjson.String {
		return ladder.Sent{}, name, args, errors.New("the name of a function_call is not a string")
	}
	if ns.Exists() && ns.Type != gjson.Null && ns.Type != gjson.String {
		return ladder.Sent{}, name, args, errors.New("the namespace of a function_call is not a string")
	}
	s = ladder.Sent{ID: f[2].String(), Name: name.Str, Raw: item.Raw}
	if ns.Str != "" {
		s.Name = ns.Str + "." + name.Str
	}
	if ns.Exists() {
		name = gjson.Result{}
	}
	if args = f[3]; args.Exists() {
		s.Args = args.Raw
	}
	return s, name, args, nil
}

// itemFields are the members of a function_call item that sentItem reads,
// in one pass (wire.Fields): name, namespace, call_id, arguments.
var itemFields = []string{"name", "namespace", "call_id", "arguments"}

// item returns the function_call item to send to the client: as the model
// sent it, or with its mended arguments (as a string) and name.
func item(c *ladder.Call) (string, error) {
	if !c.Changed() {
		return c.Raw, nil
	}
	out, err := sjson.Set(c.Raw, "arguments", string(c.Args))
	if err != nil {
		return "", fmt.Errorf("write the arguments of call %q: %w", c.ID, err)
	}
	if c.Tool != nil && c.Tool.Name != c.Name {
		ns, name := splitName(c.Tool.Name, gjson.Get(c.Raw, "namespace").Str != "")
		if out, err = sjson.Set(out, "name", name); err == nil && ns != "" {
			out, err = sjson.Set(out, "namespace", ns)
		}
		if err != nil {
			return "", fmt.Errorf("write the name of call %q: %w", c.ID, err)
		}
	}
	return out, nil
}

// splitName splits a tool's key into its namespace and name, if it is a
// namespace's function.
func splitName(key string, namespaced bool) (string, string) {
	if i := strings.IndexByte(key, '.'); namespaced && i > 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// Write writes what the ladder made of the response's calls back into its
// output: mended calls as mended, invalid ones dropped, and the calls of
// re-asks after the last function_call item. Every other item, and the
// rest of the body, stays as the model first sent it, but for the model
// that answered last and the usage summed over every attempt. A rewrite
// that fails is an error.
func (q *Request) Write(first []byte, turns []*ladder.Turn, replies [][]byte) ([]byte, error) {
	body := first
	for _, tt := range turns {
		if t := turnOf(tt); !t.output && !t.converted && t.start > 0 {
			if edits, ok := tt.InPlace(t.mended, true); ok {
				var err error
				if body, err = wire.ApplySplices(first, edits); err != nil {
					return nil, err
				}
				continue
			}
		}
		out, dirty, err := rewrite(first, tt)
		if err != nil {
			return nil, err
		}
		if dirty {
			t := turnOf(tt)
			if body, err = wire.ApplySplices(first, []wire.Splice{{Start: t.start, End: t.end, With: out}}); err != nil {
				return nil, err
			}
		}
	}
	if len(replies) == 0 {
		return body, nil
	}
	var err error
	if m := gjson.GetBytes(replies[len(replies)-1], "model"); m.Type == gjson.String {
		if body, err = sjson.SetRawBytes(body, "model", []byte(m.Raw)); err != nil {
			return nil, fmt.Errorf("set model: %w", err)
		}
	}
	return wire.SumUsage(body, "usage", replies)
}

// rewrite returns the output array with the turn's calls written back, and
// whether it differs from what the model sent.
func rewrite(first []byte, tt *ladder.Turn) ([]byte, bool, error) {
	t := turnOf(tt)
	if t.output || t.converted {
		return rewriteText(first, tt)
	}
	keep, dirty := tt.Kept(t.first)
	if !dirty {
		return nil, false, nil
	}
	var items []string
	k, lastCall := 0, -1
	var err error
	gjson.ParseBytes(first[t.start:t.end]).ForEach(func(_, it gjson.Result) bool {
		if it.Get("type").Str != "function_call" {
			items = append(items, it.Raw)
			return true
		}
		c := t.first[k]
		k++
		lastCall = len(items)
		if keep[c] && c.Valid() {
			var s string
			if s, err = item(c); err != nil {
				return false
			}
			items = append(items, s)
			lastCall = len(items)
		}
		return true
	})
	if err != nil {
		return nil, false, err
	}
	var added []string
	for _, c := range tt.Added() {
		s, err := item(c)
		if err != nil {
			return nil, false, err
		}
		added = append(added, s)
	}
	if lastCall < 0 {
		lastCall = len(items)
	}
	items = slices.Insert(items, lastCall, added...)
	return []byte("[" + strings.Join(items, ",") + "]"), true, nil
}

// SumUsage is the first response with the usage summed over every attempt,
// for calls passed on as the model sent them.
func (q *Request) SumUsage(first []byte, replies [][]byte) ([]byte, error) {
	return wire.SumUsage(first, "usage", replies)
}

// rewriteText returns the output array of a turn whose calls stand for its
// text: the text as the ladder made it (under a JSON text.format), or the
// calls read from it as function_call items after the text left around
// them (the message is dropped when no text is left). A turn with no valid
// call stays as the model sent it.
func rewriteText(first []byte, tt *ladder.Turn) ([]byte, bool, error) {
	t := turnOf(tt)
	var valid []*ladder.Call
	for _, c := range tt.Calls {
		if c.Valid() {
			valid = append(valid, c)
		}
	}
	if len(valid) == 0 || (t.output && !valid[0].Changed() && valid[0].Attempt == 0) {
		return nil, false, nil
	}
	var items []string
	var err error
	gjson.ParseBytes(first[t.start:t.end]).ForEach(func(i, it gjson.Result) bool {
		if int(i.Int()) != t.text.item {
			items = append(items, it.Raw)
			return true
		}
		path := "content." + strconv.Itoa(t.text.part) + ".text"
		var s string
		switch {
		case t.output:
			s, err = sjson.Set(it.Raw, path, string(valid[0].Args))
			items = append(items, s)
		case strings.TrimSpace(t.rest) != "":
			s, err = sjson.Set(it.Raw, path, t.rest)
			items = append(items, s)
		}
		if t.converted && err == nil {
			for k, c := range valid {
				items = append(items, `{"id":"fc_text_`+strconv.Itoa(k)+`","type":"function_call","status":"completed","arguments":`+
					wire.Quote(string(c.Args))+`,"call_id":`+wire.Quote(c.ID)+`,"name":`+wire.Quote(c.ToolName())+`}`)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("write the output's text: %w", err)
	}
	return []byte("[" + strings.Join(items, ",") + "]"), true, nil
}
