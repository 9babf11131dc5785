package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// reaskInstruction closes every re-ask: the model is told what to send back.
const reaskInstruction = "Some of your tool calls were invalid and were not executed; " +
	"the tool results above give each error with its JSON pointer path. " +
	"Send corrected tool calls for the invalid calls only, with arguments that match each tool's parameters schema. " +
	"The valid calls are kept: do not send them again."

// reask asks the model once more for the choice's invalid calls: the
// original conversation, the model's last message in it, one tool message per
// call saying what was wrong (or that it was valid) and an instruction. Every
// other field of the request is kept as the client sent it. On a reply with
// tool calls, they replace the invalid calls of the choice.
func (ex *exchange) reask(outreq *http.Request, ch *choice) ([]byte, error) {
	ex.reasks++
	attempt := ex.reasks
	body, msgs, err := ex.reaskBody(ch, attempt)
	if err != nil {
		// A re-ask that cannot be written is not sent half-written.
		return nil, fmt.Errorf("re-ask %d: write the request: %w", attempt, err)
	}
	rt, outreq, body, err := ex.fallback(outreq, body, ch)
	if err != nil {
		return nil, fmt.Errorf("re-ask %d: write the request: %w", attempt, err)
	}
	kind := attemptReask
	if ex.fb.attempt == attempt {
		kind = attemptFallback
	}
	status, reply, err := ex.send(rt, outreq, body, kind)
	if err != nil {
		return nil, fmt.Errorf("re-ask %d: %w", attempt, err)
	}
	if status < 200 || status > 299 {
		return nil, fmt.Errorf("re-ask %d: the upstream answered with status %d: %s", attempt, status, wire.Clip(string(reply), 300))
	}
	if err := wire.Strict(reply, chatResponseShape); err != nil {
		return nil, fmt.Errorf("re-ask %d: the upstream's reply cannot be read unambiguously: %w", attempt, err)
	}
	ex.noteReply(attempt, reply)
	ex.noteUsage(reply, true)
	msg := gjson.GetBytes(reply, "choices.0.message")
	calls, _, err := ex.callsOf(msg, attempt, gjson.GetBytes(reply, "choices.0.finish_reason").String() == "length")
	if err != nil {
		return nil, fmt.Errorf("re-ask %d: the upstream's reply is malformed: %w", attempt, err)
	}
	ch.history = msgs
	ex.calls = append(ex.calls, calls...)
	if len(calls) == 0 {
		// The model answered without calls: the invalid calls stay invalid.
		ch.lastContent, ch.lastCalls = rawOrNull(msg.Get("content")), nil
		return reply, nil
	}
	var kept []*call
	for _, c := range ch.calls {
		if c.valid() {
			kept = append(kept, c)
		}
	}
	merged := kept
	for _, c := range calls {
		if !duplicate(kept, c) {
			merged = append(merged, c)
		}
	}
	ch.calls, ch.touched = merged, true
	ch.lastContent, ch.lastCalls = rawOrNull(msg.Get("content")), calls
	return reply, nil
}

// reaskBody is the request of a re-ask and the messages it adds to the
// choice's history: the client's request, made non-streaming
// (stream_options is only allowed on streamed requests), with the history,
// the feedback, n of 1 and, if the policy says so, a forced tool_choice.
func (ex *exchange) reaskBody(ch *choice, attempt int) ([]byte, []string, error) {
	feedback, err := ex.feedback(ch, attempt)
	if err != nil {
		return nil, nil, err
	}
	msgs := append(ch.history, feedback...)
	body := ex.body
	if gjson.GetBytes(body, "stream").Bool() {
		if body, err = wire.Patch(body, "stream", "false"); err != nil {
			return nil, nil, err
		}
		if body, err = wire.Delete(body, "stream_options"); err != nil {
			return nil, nil, err
		}
	}
	for _, m := range msgs {
		if body, err = wire.Patch(body, "messages.-1", m); err != nil {
			return nil, nil, err
		}
	}
	if n := gjson.GetBytes(body, "n"); n.Exists() && n.Int() != 1 {
		// One choice is being corrected; ask for one.
		if body, err = wire.Patch(body, "n", "1"); err != nil {
			return nil, nil, err
		}
	}
	if body, err = ex.forceToolChoice(body, ch); err != nil {
		return nil, nil, err
	}
	return body, msgs, nil
}

// duplicate reports whether c repeats a call already kept (models often send
// the valid calls again despite being told not to).
func duplicate(kept []*call, c *call) bool {
	for _, k := range kept {
		if k.tool == c.tool && bytes.Equal(k.args, c.args) {
			return true
		}
	}
	return false
}

// feedback builds the messages appended for one re-ask.
func (ex *exchange) feedback(ch *choice, attempt int) ([]string, error) {
	var out []string
	calls := ch.lastCalls
	ids := make([]string, len(calls))
	parts := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.id
		if ids[i] == "" {
			ids[i] = "call_toolguard_" + strconv.Itoa(attempt) + "_" + strconv.Itoa(i)
		}
		var err error
		if parts[i], err = c.forHistory(); err != nil {
			return nil, err
		}
		if !ch.legacy && c.id == "" {
			withID, err := wire.Patch([]byte(parts[i]), "id", wire.Quote(ids[i]))
			if err != nil {
				return nil, err
			}
			parts[i] = string(withID)
		}
	}
	switch {
	case len(calls) == 0:
		// The model's last answer had no calls: remind it of the ones that
		// are still invalid.
		out = append(out, `{"role":"assistant","content":`+ch.lastContent+`}`)
		var b strings.Builder
		for _, c := range ch.calls {
			if !c.valid() {
				b.WriteString(feedbackTextWithin(c, maxFeedbackBytes-b.Len()))
				b.WriteString("\n")
			}
		}
		out = append(out, `{"role":"user","content":`+wire.Quote(b.String()+reaskInstruction)+`}`)
		return out, nil
	case ch.legacy:
		out = append(out, `{"role":"assistant","content":`+ch.lastContent+`,"function_call":`+parts[0]+`}`)
		out = append(out, `{"role":"function","name":`+wire.Quote(calls[0].name)+`,"content":`+wire.Quote(feedbackText(calls[0]))+`}`)
	default:
		out = append(out, `{"role":"assistant","content":`+ch.lastContent+`,"tool_calls":[`+strings.Join(parts, ",")+`]}`)
		room := maxFeedbackBytes
		for i, c := range calls {
			text := feedbackTextWithin(c, room)
			room -= len(text)
			out = append(out, `{"role":"tool","tool_call_id":`+wire.Quote(ids[i])+`,"content":`+wire.Quote(text)+`}`)
		}
	}
	out = append(out, `{"role":"user","content":`+wire.Quote(reaskInstruction)+`}`)
	return out, nil
}

// maxFeedbackBytes bounds what one re-ask tells the model about its calls'
// errors (each call's errors are bounded by validate.MaxErrors): past it,
// the remaining invalid calls are only said to be invalid.
const maxFeedbackBytes = 64 << 10

// feedbackText is what the model is told about one of its calls.
func feedbackText(c *call) string {
	return feedbackTextWithin(c, maxFeedbackBytes)
}

// feedbackTextWithin is feedbackText for a call whose errors may take at
// most room bytes.
func feedbackTextWithin(c *call, room int) string {
	if c.valid() {
		return "This call is valid and has been kept; do not send it again."
	}
	if room <= 0 {
		return fmt.Sprintf("Error: this call to %q was not executed because its arguments are invalid (its errors are left out: the other calls' errors are long). Call the tool again with arguments that satisfy its parameters schema.", c.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Error: this call to %q was not executed because its arguments are invalid:\n", c.name)
	for _, d := range errorDetails(c) {
		fmt.Fprintf(&b, "- %s: %s\n", d.Path, d.Message)
	}
	b.WriteString("Call the tool again with arguments that satisfy its parameters schema.")
	return b.String()
}

// send makes one re-ask upstream through rt, as its own request with its own
// timeout, cancelled at once if the client goes away.
func (ex *exchange) send(rt http.RoundTripper, outreq *http.Request, body []byte, kind string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(withAttempt(ex.ctx, kind, gjson.GetBytes(body, "model").String()), ex.h.cfg.UpstreamTimeout)
	defer cancel()
	req := outreq.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.Header.Del("Content-Length")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := readLimited(resp.Body, resp.ContentLength, ex.h.cfg.MaxResponseBytes)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}
