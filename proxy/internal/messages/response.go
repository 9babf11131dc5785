package messages

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// turn is what the format keeps of a reply whose content holds tool_use
// blocks, around the ladder's Turn (whose Wire points back to it).
type turn struct {
	ladder.Turn
	// first are the calls of the first reply, one per tool_use block, in
	// order.
	first []*ladder.Call
	// The span of the content array in the first reply.
	start, end int
	// last is the content array of the model's last answer, which the
	// next re-ask shows it.
	last string
	// The messages the re-asks have added so far, and those of the re-ask
	// in flight.
	history, pending []string
	// rests is set when the calls were written as text: by block index,
	// the text left of each block that held calls (see textCalls).
	rests map[int]string
	// mended are the calls of first that the ladder mended, with where
	// their name and input are in the body: a mended call is written back
	// over those values alone (Turn.InPlace).
	mended []ladder.Mended
}

func turnOf(t *ladder.Turn) *turn { return t.Wire.(*turn) }

// ReadReply checks that a reply reads the same to toolguard as to a client.
// The error is a *wire.Error for the client. r reads a reply that repeats the
// client's last with other values without tokenising it again.
//
// Where it finds the reply's members is kept for Usage and Turns, which
// read the same body next: the usage comes after the content, which gjson
// would read past to find it.
func (q *Request) ReadReply(body []byte, r wire.Repeats) error {
	if err := q.reply.Read(body, replyShape, "", r); err != nil {
		return wire.MalformedReply(err)
	}
	return nil
}

// read returns body as gjson reads it, with the members ReadReply found if
// it read this very slice.
func (q *Request) read(body []byte) wire.Value {
	return wire.Value{Result: wire.Parse(body), M: q.reply.Of(body)}
}

// Usage returns the input and output tokens a reply reports: a message, or
// a stream's event that carries one.
func (q *Request) Usage(body []byte) (in, out int64, ok bool) {
	b := q.read(body)
	u := b.Get("usage")
	if !u.Exists() {
		u = b.Get("message.usage")
	}
	if !u.IsObject() {
		return 0, 0, false
	}
	var n [4]gjson.Result
	wire.Fields(u, usageFields, n[:])
	return n[0].Int() + n[1].Int() + n[2].Int(), n[3].Int(), true
}

// usageFields are the members of a usage object that Usage reads: the
// three kinds of input tokens, then the output tokens.
var usageFields = []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}

// cutOff reports whether a reply (a gjson.Result or a wire.Value) stopped
// at the model's output limit.
func cutOff(resp interface{ Get(string) gjson.Result }) bool {
	return resp.Get("stop_reason").Str == "max_tokens"
}

// Turns checks the tool_use blocks of a reply (read by ReadReply) and
// records them in x: one turn for the whole content, or none. Text that
// writes calls while tools are declared is read as calls.
func (q *Request) Turns(ctx context.Context, x *ladder.Exchange, body []byte) ([]*ladder.Turn, error) {
	resp := q.read(body)
	if resp.M != nil {
		defer q.reply.Done(resp.M) // Turns is the last to read them
	}
	content := resp.Get("content")
	sent, err := sentOf(content)
	if err != nil {
		return nil, err
	}
	var rests map[int]string
	if len(sent) == 0 {
		sent, rests = textCalls(x, content)
	}
	if len(sent) == 0 {
		return nil, nil
	}
	calls, err := x.CheckAll(ctx, sent, 0, cutOff(resp))
	if err != nil {
		return nil, err
	}
	at, ok := wire.SpanOf(body, content)
	if !ok {
		return nil, errors.New("the position of content in the body is unknown")
	}
	x.Calls = append(x.Calls, calls...)
	t := &turn{first: calls, start: at.Start, end: at.End, last: content.Raw, rests: rests}
	if rests == nil && slices.ContainsFunc(calls, (*ladder.Call).Changed) {
		t.mended = mendedBlocks(body, content, calls)
	}
	if rests != nil {
		t.last = convertedContent(content, rests, calls)
	}
	t.Turn = ladder.Turn{Calls: calls, Last: calls, Wire: t}
	return []*ladder.Turn{&t.Turn}, nil
}

// mendedBlocks records where the name and input of each mended call are in
// body: the tool_use blocks of content, whose calls are calls, in order.
func mendedBlocks(body []byte, content gjson.Result, calls []*ladder.Call) []ladder.Mended {
	var out []ladder.Mended
	var f [3]gjson.Result
	k := 0
	content.ForEach(func(_, b gjson.Result) bool {
		wire.Fields(b, blockFields, f[:])
		if f[0].Str != "tool_use" {
			return true
		}
		if k == len(calls) {
			return false
		}
		if m, ok := ladder.MendedAt(calls[k], body, f[1], f[2]); ok {
			out = append(out, m)
		}
		k++
		return true
	})
	return out
}

// blockFields are the members of a content block that mendedBlocks reads,
// in one pass (wire.Fields).
var blockFields = []string{"type", "name", "input"}

// sentOf reads the tool_use blocks of a content array. A content that is
// not an array of objects, a tool_use in a shape no client expects, or a
// tool_use next to a block of an unknown type is an error, not "no call".
func sentOf(content gjson.Result) ([]ladder.Sent, error) {
	if content.Exists() && content.Type != gjson.Null && !content.IsArray() {
		return nil, errors.New("content is not an array")
	}
	if e := unknownBlock(content, replyBlocks, "tool_use"); e != "" {
		return nil, errors.New(e)
	}
	var sent []ladder.Sent
	var err error
	var f [3]gjson.Result // id, name, input
	content.ForEach(func(i, b gjson.Result) bool {
		if !b.IsObject() {
			err = fmt.Errorf("content[%d] is not an object", i.Int())
			return false
		}
		// The type first, alone: it leads a block, and a text block
		// need not be read to its end for members it does not have.
		if b.Get("type").Str != "tool_use" {
			return true
		}
		wire.Fields(b, callBlockFields, f[:])
		id, name := f[0], f[1]
		if name.Type != gjson.String || (id.Exists() && id.Type != gjson.String) {
			err = fmt.Errorf("content[%d]: the name or id of a tool_use block is not a string", i.Int())
			return false
		}
		sent = append(sent, sentOfBlock(b, id, name, f[2]))
		return true
	})
	return sent, err
}

// callBlockFields are the members of a tool_use block that sentOf and
// sentBlock read, in one pass (wire.Fields): id, name, input.
var callBlockFields = []string{"id", "name", "input"}

// sentBlock is a tool_use block as the ladder reads a call (see
// sentOfBlock).
func sentBlock(b gjson.Result) ladder.Sent {
	var f [3]gjson.Result
	wire.Fields(b, callBlockFields, f[:])
	return sentOfBlock(b, f[0], f[1], f[2])
}

// sentOfBlock is the tool_use block b, with its id, name and input members
// as read, as the ladder reads a call. Its input is a JSON value, not a
// string holding one: the ladder is handed its text as the string it would
// be on the other formats, so that an object needs no edit. An input sent
// as a string (some servers encode it) is the model's arguments text, and
// writing it back as an object is an edit.
func sentOfBlock(b, id, name, in gjson.Result) ladder.Sent {
	s := ladder.Sent{ID: id.Str, Name: name.Str, Raw: b.Raw}
	switch {
	case !in.Exists() || in.Type == gjson.Null:
	case in.Type == gjson.String:
		s.Args = in.Raw
		s.Edits = []repair.Edit{{Kind: repair.KindDoubleEncoded, Path: "", Before: wire.Clip(in.Raw, 200)}}
	default:
		s.Args = wire.Quote(in.Raw)
	}
	return s
}

// block returns the tool_use block to send to the client: as the model sent
// it, or with its mended input and name.
func block(c *ladder.Call) (string, error) {
	if !c.Changed() && c.Raw != "" {
		return c.Raw, nil
	}
	raw := c.Raw
	if raw == "" {
		raw = `{"type":"tool_use","id":` + wire.Quote(c.ID) + `,"name":` + wire.Quote(c.ToolName()) + `,"input":{}}`
	}
	out, err := sjson.SetRaw(raw, "input", string(c.Args))
	if err != nil {
		return "", fmt.Errorf("write the input of call %q: %w", c.ID, err)
	}
	if c.Tool != nil && c.Tool.Name != c.Name {
		if out, err = sjson.Set(out, "name", c.Tool.Name); err != nil {
			return "", fmt.Errorf("write the name of call %q: %w", c.ID, err)
		}
	}
	return out, nil
}

// Write writes what the ladder made of the reply's calls back into its
// content: mended calls as mended, invalid ones dropped, and the calls of
// re-asks after the last tool_use block; stop_reason says tool_use while a
// call is left and end_turn when none is. Every other block, and the rest
// of the body, stays as the model first sent it, but for the model that
// answered last and the usage summed over every attempt.
func (q *Request) Write(first []byte, turns []*ladder.Turn, replies [][]byte) ([]byte, error) {
	body := first
	for _, tt := range turns {
		edits, left, err := writeTurn(first, tt)
		if err != nil {
			return nil, err
		}
		if len(edits) == 0 {
			continue
		}
		if body, err = wire.ApplySplices(first, edits); err != nil {
			return nil, err
		}
		stop := gjson.GetBytes(body, "stop_reason")
		switch {
		case left > 0 && stop.Str != "tool_use":
			body, err = wire.Patch(body, "stop_reason", `"tool_use"`)
		case left == 0 && stop.Str == "tool_use":
			body, err = wire.Patch(body, "stop_reason", `"end_turn"`)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(replies) == 0 {
		return body, nil
	}
	var err error
	if m := gjson.GetBytes(replies[len(replies)-1], "model"); m.Type == gjson.String {
		if body, err = wire.Patch(body, "model", m.Raw); err != nil {
			return nil, err
		}
	}
	return wire.SumUsage(body, "usage", replies)
}

// SumUsage is the first reply with the usage summed over every attempt, for
// calls passed on as the model sent them.
func (q *Request) SumUsage(first []byte, replies [][]byte) ([]byte, error) {
	return wire.SumUsage(first, "usage", replies)
}

// writeTurn returns the edits that write the turn's calls back into the
// first reply (none when it needs none), and the number of tool_use blocks
// its content is left with. Calls that were only mended are written over
// their own name and input (Turn.InPlace); otherwise the content array is
// written whole (rewrite).
func writeTurn(first []byte, tt *ladder.Turn) ([]wire.Splice, int, error) {
	t := turnOf(tt)
	if t.rests == nil {
		if edits, ok := tt.InPlace(t.mended, false); ok {
			return edits, len(tt.Calls), nil
		}
	}
	out, left, dirty, err := rewrite(first, tt)
	if err != nil || !dirty {
		return nil, left, err
	}
	return []wire.Splice{{Start: t.start, End: t.end, With: out}}, left, nil
}

// rewrite returns the content array with the turn's calls written back, the
// number of tool_use blocks it holds, and whether it differs from what the
// model sent.
func rewrite(first []byte, tt *ladder.Turn) ([]byte, int, bool, error) {
	t := turnOf(tt)
	if t.rests != nil {
		return rewriteConverted(first, tt)
	}
	keep, dirty := tt.Kept(t.first)
	if !dirty {
		return nil, 0, false, nil
	}
	var blocks []string
	k, lastCall, left := 0, -1, 0
	var err error
	gjson.ParseBytes(first[t.start:t.end]).ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_use" {
			blocks = append(blocks, b.Raw)
			return true
		}
		c := t.first[k]
		k++
		lastCall = len(blocks)
		if keep[c] && c.Valid() {
			var s string
			if s, err = block(c); err != nil {
				return false
			}
			blocks = append(blocks, s)
			lastCall = len(blocks)
			left++
		}
		return true
	})
	if err != nil {
		return nil, 0, false, err
	}
	var added []string
	for _, c := range tt.Added() {
		s, err := block(c)
		if err != nil {
			return nil, 0, false, err
		}
		added = append(added, s)
		left++
	}
	if lastCall < 0 {
		lastCall = len(blocks)
	}
	blocks = slices.Insert(blocks, lastCall, added...)
	return []byte("[" + strings.Join(blocks, ",") + "]"), left, true, nil
}
