package chat

import (
	"strconv"

	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Structured outputs in a stream: under a JSON response_format the content
// of a choice is the value itself, so it is held until the choice ends,
// checked (and mended or re-asked) like a call, and released: as the
// events it came in when it needs no change, else as one chunk.

// settleContent settles the held content of a finished choice that made
// no calls. A choice that sent no content is checked as an empty output,
// as a reply with null content is; one that refused is not checked.
func (r *stream) settleContent(sc *streamChoice) {
	if r.output == nil {
		return
	}
	if sc.refused {
		r.releaseContent(sc)
		return
	}
	x := r.X
	content := wire.Quote(string(sc.content))
	c := x.Check(ladder.Sent{Name: ladder.OutputTool, Tool: r.output, Args: content}, 0, true, sc.cutOff)
	x.Calls = append(x.Calls, c)
	r.anyCalls = true
	ct := &turn{output: true, lastContent: content}
	ct.Turn = ladder.Turn{Index: int(sc.index), Calls: []*ladder.Call{c}, Last: []*ladder.Call{c}, Wire: ct}
	t := &ct.Turn
	if err := x.Settle(r.Ctx, []*ladder.Turn{t}, r.Ask); err != nil {
		r.Abort, r.Done = err, true
		return
	}
	if t.Invalid() {
		r.failed = true
		if x.Failure(t) != policy.FailPassthrough {
			r.fail(x.FailureError([]*ladder.Turn{t}, r.Redact), nil)
			return
		}
		if sc.contentSynth {
			r.writeContent(sc, string(sc.content), nil)
		} else {
			r.releaseContent(sc)
		}
		return
	}
	c = t.Calls[0]
	if !c.Changed() && c.Attempt == 0 && !sc.contentSynth {
		r.releaseContent(sc)
		return
	}
	r.unholdContent(sc)
	r.writeContent(sc, string(c.Args), c)
}

// writeContent sends a choice's content as one chunk of toolguard's, with
// the model that wrote it (c, nil for the first attempt's).
func (r *stream) writeContent(sc *streamChoice, content string, c *ladder.Call) {
	chunk, err := sjson.SetRawBytes(append([]byte(nil), r.template...), "choices",
		[]byte(`[{"index":`+strconv.FormatInt(sc.index, 10)+`,"delta":{"role":"assistant","content":`+wire.Quote(content)+`},"finish_reason":null}]`))
	if err != nil {
		r.fail(wire.WriteFailed(err), err)
		return
	}
	if c != nil {
		if m := r.ModelOf(c); m != "" {
			if chunk, err = wire.Patch(chunk, "model", wire.Quote(m)); err != nil {
				r.fail(wire.WriteFailed(err), err)
				return
			}
		}
	}
	wire.WriteData(r.out, chunk)
}

// releaseContent sends the held content events as they came.
func (r *stream) releaseContent(sc *streamChoice) {
	for _, ev := range sc.heldContent {
		r.out.Write(ev)
	}
	sc.heldContent = nil
}

// unholdContent gives up sending the content as the events it came in:
// what they say besides the content goes out now.
func (r *stream) unholdContent(sc *streamChoice) {
	sc.contentSynth = true
	for _, ev := range sc.heldContent {
		data, _ := wire.EventData(ev)
		chunk, err := sjson.DeleteBytes(data, "choices.0.delta.content")
		if err != nil {
			r.fail(wire.WriteFailed(err), err)
			return
		}
		if !emptyChunk(chunk) {
			wire.WriteData(r.out, chunk)
		}
	}
	sc.heldContent = nil
}
