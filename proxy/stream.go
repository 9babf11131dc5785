package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// streamReader replaces the body of a streamed chat completion. It reads the
// upstream's events and passes each on as soon as it is whole, except
// tool-call deltas: those are held per choice and per call until the call is
// complete, checked (and mended or re-asked) like a non-streamed call, and
// released as whole calls. It does its work inside Read, on the goroutine
// that copies the body to the client, so nothing outlives the response.
//
// Re-asks are made without streaming: their text is never shown (the
// client has already seen the first attempt's), and their calls are released
// whole anyway, so a streamed re-ask would only add parsing.
type streamReader struct {
	ex     *exchange
	up     io.ReadCloser
	outreq *http.Request

	split   wire.Splitter
	scratch []byte
	out     bytes.Buffer
	eof     bool   // the upstream body is exhausted
	held    []byte // an event kept back until the output before it is sent
	done    bool   // nothing more will be added to out
	err     error

	choices  map[int64]*streamChoice
	template []byte // the last chunk, whose envelope released calls reuse
	usage    []byte // the usage chunk, held until the end
	replies  [][]byte
	anyCalls bool
	failed   bool
	total    int64 // bytes of tool-call arguments and content held
	// tooManyCalls is set when a choice starts more calls than are held.
	tooManyCalls bool
}

var _ io.ReadCloser = (*streamReader)(nil)

func (ex *exchange) stream(resp *http.Response) {
	resp.Body = &streamReader{
		ex:      ex,
		up:      resp.Body,
		outreq:  resp.Request,
		scratch: make([]byte, 32<<10),
		choices: map[int64]*streamChoice{},
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

func (r *streamReader) Read(p []byte) (int, error) {
	for r.out.Len() == 0 && !r.done {
		r.step()
	}
	if r.out.Len() > 0 {
		return r.out.Read(p)
	}
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

func (r *streamReader) Close() error { return r.up.Close() }

// step handles the events already read, or reads more from the upstream.
// All the whole events of a network read are handled before their output is
// returned, so they reach the client in one write, as a plain proxy would
// send them. The one exception is an event that may make toolguard wait (a
// finish_reason that settles calls and may re-ask, or [DONE]): it is kept
// until the output before it has gone out, so no text waits for a re-ask.
func (r *streamReader) step() {
	if r.held != nil && !r.done {
		ev := r.held
		r.held = nil
		r.handle(ev)
	}
	for !r.done {
		ev, ok := r.split.Next()
		if !ok {
			break
		}
		if r.out.Len() > 0 && mayWait(ev) {
			r.held = append([]byte(nil), ev...)
			break
		}
		r.handle(ev)
	}
	if r.done || r.out.Len() > 0 {
		return
	}
	if r.eof {
		r.fail(&apiError{Type: "upstream_error", Code: "upstream_stream_truncated",
			Msg: "the upstream's stream ended before data: [DONE]"}, nil)
		return
	}
	if int64(r.split.Buffered()) > r.ex.h.cfg.MaxResponseBytes {
		// Every whole event has been handled: what is left is part of
		// one. (Checked before reading, not after: one read can bring
		// many small events.)
		r.fail(&apiError{Type: "upstream_error", Code: "upstream_event_too_large",
			Msg: "an upstream event is larger than TOOLGUARD_MAX_RESPONSE_BYTES"}, nil)
		return
	}
	n, err := r.up.Read(r.scratch)
	r.split.Feed(r.scratch[:n])
	switch {
	case err == io.EOF:
		r.eof = true
		r.split.End()
	case err != nil:
		if r.ex.ctx.Err() != nil {
			// The client is gone: nobody to tell.
			r.done, r.err = true, err
			return
		}
		ae := upstreamError(r.ex.ctx, err)
		r.fail(&apiError{Type: ae.Type, Code: ae.Code, Msg: "the upstream's stream broke off: " + ae.Msg}, err)
	}
}

// mayWait reports whether handling an event may wait on the network: a set
// finish_reason (calls are settled and may be re-asked) or the end of the
// stream. It errs on the side of yes; a wrong yes only costs a write.
func mayWait(ev []byte) bool {
	if bytes.Contains(ev, []byte("[DONE]")) {
		return true
	}
	for rest := ev; ; {
		i := bytes.Index(rest, []byte(`"finish_reason"`))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(`"finish_reason"`):], " \t:")
		if !bytes.HasPrefix(rest, []byte("null")) {
			return true
		}
	}
}

// handle acts on one whole event.
func (r *streamReader) handle(ev []byte) {
	if bomAtLineStart(ev) {
		// The specification's decoder drops one at the start of the
		// stream, openai-node's at the start of every line, openai-python
		// and openai-go nowhere: a line such as "\ufeffdata: ..." is data
		// to some clients and an unknown field to others.
		r.fail(&apiError{Type: "upstream_error", Code: "upstream_invalid_event",
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
	if err := wire.Strict(data, chatChunkShape); err != nil {
		// A broken or ambiguous event could hold part of a tool call that
		// a client reads differently from toolguard.
		ae := malformedReply(err)
		if ae.Code == "upstream_invalid_json" {
			ae = &apiError{Type: "upstream_error", Code: "upstream_invalid_event",
				Msg: "the upstream sent a stream event that is not JSON (" + wire.Clip(err.Error(), 200) + ")"}
		}
		r.fail(ae, nil)
		return
	}
	choices := gjson.GetBytes(data, "choices")
	if !choices.IsArray() {
		if choices.Exists() && choices.Type != gjson.Null {
			r.fail(malformedReply(errors.New("choices is not an array")), nil)
			return
		}
		r.out.Write(ev) // an error event, or something of the provider's own
		return
	}
	if isEmptyArray(choices.Raw) && gjson.GetBytes(data, "usage").IsObject() {
		// The usage chunk: held so it can carry the sum over all attempts.
		r.usage = append([]byte(nil), ev...)
		r.ex.noteUsage(data, false)
		return
	}
	if r.template == nil {
		// Every chunk of a stream has the same envelope (id, model,
		// created...); released calls reuse the first one's.
		r.template = append([]byte(nil), data...)
	}
	nChoices := 0
	choices.ForEach(func(_, _ gjson.Result) bool { nChoices++; return true })
	chunk := data
	changed := false // tool-call deltas were taken out of chunk
	held := false    // the event is held whole with the call it carries
	pos := 0
	// One pass over each choice and its delta: this runs for every event.
	choices.ForEach(func(_, c gjson.Result) bool {
		prefix := "choices." + strconv.Itoa(pos) + "."
		pos++
		var idx int64
		var delta, fr gjson.Result
		hasIndex, badIndex := false, false
		c.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "index":
				if v.Type != gjson.Null { // null: read as missing
					idx, hasIndex = plainIndex(v)
					badIndex = !hasIndex
				}
			case "delta":
				delta = v
			case "finish_reason":
				fr = v
			}
			return true
		})
		if badIndex {
			r.fail(malformedReply(fmt.Errorf("choices[%d].index is not a non-negative integer", pos-1)), nil)
			return false
		}
		if r.choices[idx] == nil && len(r.choices) >= maxStreamChoices {
			r.fail(&apiError{Type: "upstream_error", Code: "upstream_stream_too_large",
				Msg: "the upstream's stream has more than " + strconv.Itoa(maxStreamChoices) + " choices"}, nil)
			return false
		}
		sc := r.choice(idx)
		var touched []*partialCall
		delta.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "content":
				if v.Type == gjson.String {
					sc.content = append(sc.content, v.Str...)
					r.total += int64(len(v.Str))
				}
			case "tool_calls", "function_call":
				if v.Type == gjson.Null {
					return true
				}
				legacy := k.Str == "function_call"
				switch {
				case legacy && !v.IsObject(), !legacy && !v.IsArray():
					r.fail(malformedReply(fmt.Errorf("delta.%s is not an %s", k.Str, map[bool]string{true: "object", false: "array"}[legacy])), nil)
					return false
				case len(sc.order) > 0 && sc.legacy != legacy:
					// openai-node exposes a function_call next to
					// tool_calls; toolguard would check only one.
					r.fail(malformedReply(errors.New("a choice streams both tool_calls and a legacy function_call")), nil)
					return false
				}
				r.anyCalls = true
				sc.legacy = legacy
				if legacy {
					touched = append(touched, r.addDelta(sc, v, 0))
				} else {
					v.ForEach(func(_, td gjson.Result) bool {
						if !td.IsObject() {
							r.fail(malformedReply(errors.New("delta.tool_calls holds a value that is not an object")), nil)
							return false
						}
						touched = append(touched, r.addDelta(sc, td, -1))
						return !r.done
					})
				}
				if r.done {
					return false
				}
				var err error
				if chunk, err = sjson.DeleteBytes(chunk, prefix+"delta."+k.Str); err != nil {
					r.fail(writeFailed(err), err)
					return false
				}
				changed = true
			}
			return true
		})
		if r.done {
			return false
		}
		finishing := fr.Exists() && fr.Type != gjson.Null
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
		if finishing && !sc.finished {
			sc.finished = true
			sc.cutOff = fr.Str == "length"
			if len(sc.order) > 0 {
				r.settle(sc)
				if r.done {
					return false
				}
				if sc.released == 0 && (fr.Str == "tool_calls" || fr.Str == "function_call") {
					var err error
					if chunk, err = sjson.SetRawBytes(chunk, prefix+"finish_reason", []byte(`"stop"`)); err != nil {
						r.fail(writeFailed(err), err)
						return false
					}
					changed = true
				}
			}
		}
		return true
	})
	if r.done {
		return
	}
	if r.tooManyCalls {
		r.fail(&apiError{Type: "upstream_error", Code: "upstream_stream_too_large",
			Msg: "the upstream's stream has more than " + strconv.Itoa(maxStreamCalls) + " tool calls in one choice"}, nil)
		return
	}
	if r.total > r.ex.h.cfg.MaxResponseBytes {
		r.fail(&apiError{Type: "upstream_error", Code: "upstream_response_too_large",
			Msg: "the stream's content and tool calls held are larger than TOOLGUARD_MAX_RESPONSE_BYTES"}, nil)
		return
	}
	switch {
	case held:
	case !changed:
		r.out.Write(ev)
	case !emptyChunk(chunk):
		r.writeData(chunk)
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

var bom = []byte("\xef\xbb\xbf")

// bomAtLineStart reports whether a line of an event starts with a UTF-8
// byte order mark.
func bomAtLineStart(ev []byte) bool {
	for at := 0; ; {
		i := bytes.Index(ev[at:], bom)
		if i < 0 {
			return false
		}
		i += at
		if i == 0 || ev[i-1] == '\n' || ev[i-1] == '\r' {
			return true
		}
		at = i + len(bom)
	}
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

// writeData writes a chunk as one event. JSON holds line breaks only as
// white space (a chunk rewritten from a multi-line data event keeps them),
// and a client would end the data line at one: each line goes out as a data
// line of its own, which clients join with "\n" again.
func (r *streamReader) writeData(chunk []byte) {
	for {
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			break
		}
		if i > 0 {
			r.out.WriteString("data: ")
			r.out.Write(chunk[:i])
			r.out.WriteByte('\n')
		}
		chunk = chunk[i+1:]
	}
	r.out.WriteString("data: ")
	r.out.Write(chunk)
	r.out.WriteString("\n\n")
}

// finish ends a stream that the upstream completed: calls still held are
// settled, then the usage chunk, toolguard's outcome comment and [DONE].
func (r *streamReader) finish(done []byte) {
	for _, idx := range r.order() {
		sc := r.choices[idx]
		if !sc.finished && len(sc.order) > 0 {
			sc.finished = true
			r.settle(sc)
			if r.done {
				return
			}
		}
	}
	if r.usage != nil {
		if len(r.replies) > 0 {
			if data, ok := wire.EventData(r.usage); ok {
				summed, err := wire.SumUsage(data, "usage", r.replies)
				if err != nil {
					r.fail(writeFailed(err), err)
					return
				}
				r.writeData(summed)
			}
		} else {
			r.out.Write(r.usage)
		}
	}
	if r.anyCalls {
		r.ex.decide(r.failed)
		fmt.Fprintf(&r.out, ": toolguard outcome=%s reasks=%d\n\n", r.ex.outcome, r.ex.reasks)
	} else {
		r.ex.outcome = outcomeNone
	}
	r.out.Write(done)
	r.done = true
}

// fail ends the stream with an error event in the OpenAI error shape.
func (r *streamReader) fail(ae *apiError, cause error) {
	if cause != nil && ae.Err == nil {
		ae.Err = cause
	}
	r.ex.failure = ae
	if r.anyCalls || ae.Code == "tool_call_invalid" {
		r.ex.outcome = outcomeFailed
		fmt.Fprintf(&r.out, ": toolguard outcome=%s reasks=%d\n\n", outcomeFailed, r.ex.reasks)
	}
	r.writeData(ae.Body())
	r.done = true
	if cause != nil {
		r.ex.h.log.WarnContext(r.outreq.Context(), "streamed chat completion failed", "code", ae.Code, "error", ae.Error())
	}
}
