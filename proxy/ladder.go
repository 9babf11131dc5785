package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// choice is one choice of a response that holds tool calls.
type choice struct {
	pos    int    // position in the choices array
	raw    string // the choice's JSON as the model sent it
	start  int    // where raw starts in the response body
	end    int    // where it ends
	legacy bool   // a function_call, not tool_calls
	calls  []*call
	// touched is set once the choice's calls must be written back: a call
	// was mended or replaced by a re-ask.
	touched bool

	// The model's last message in this choice, for the next re-ask.
	lastContent string  // raw JSON of its content ("null" if none)
	lastCalls   []*call // the calls it made
	history     []string
}

func (ch *choice) invalid() bool {
	for _, c := range ch.calls {
		if !c.valid() {
			return true
		}
	}
	return false
}

// collect checks the tool calls of every choice of a response. It fails on
// a response whose calls are in a shape a client would read differently
// (see callsOf).
func (ex *exchange) collect(body []byte, attempt int) ([]*choice, error) {
	choices := gjson.GetBytes(body, "choices")
	if choices.Exists() && !choices.IsArray() && choices.Type != gjson.Null {
		return nil, errors.New("choices is not an array")
	}
	if !choices.IsArray() {
		return nil, nil
	}
	var out []*choice
	var err error
	choices.ForEach(func(k, v gjson.Result) bool {
		msg := v.Get("message")
		var calls []*call
		var legacy bool
		calls, legacy, err = ex.callsOf(msg, attempt, v.Get("finish_reason").String() == "length")
		if err != nil {
			err = fmt.Errorf("choice %d: %w", k.Int(), err)
			return false
		}
		if len(calls) > 0 {
			if v.Index <= 0 || string(body[v.Index:v.Index+len(v.Raw)]) != v.Raw {
				err = fmt.Errorf("choice %d: its position in the body is unknown", k.Int())
				return false
			}
			out = append(out, &choice{
				pos:         int(k.Int()),
				raw:         v.Raw,
				start:       v.Index,
				end:         v.Index + len(v.Raw),
				legacy:      legacy,
				calls:       calls,
				lastContent: rawOrNull(msg.Get("content")),
				lastCalls:   calls,
			})
		}
		return true
	})
	return out, err
}

// callsOf checks the calls of one assistant message. Calls in a shape that
// no client expects are an error, not "no calls": a client may still find
// calls there (a tool_calls object, or a function_call that openai-node
// exposes next to tool_calls), which would then reach it unchecked.
//
// cutOff says the choice ended at the model's length limit.
func (ex *exchange) callsOf(msg gjson.Result, attempt int, cutOff bool) ([]*call, bool, error) {
	tcs, fc := msg.Get("tool_calls"), msg.Get("function_call")
	if tcs.Exists() && tcs.Type != gjson.Null && !tcs.IsArray() {
		return nil, false, errors.New("message.tool_calls is not an array")
	}
	if fc.Exists() && fc.Type != gjson.Null && !fc.IsObject() {
		return nil, false, errors.New("message.function_call is not an object")
	}
	var calls []*call
	if tcs.IsArray() {
		var err error
		tcs.ForEach(func(i, tc gjson.Result) bool {
			if !tc.IsObject() {
				err = fmt.Errorf("message.tool_calls[%d] is not an object", i.Int())
				return false
			}
			if ex.ctx != nil && ex.ctx.Err() != nil {
				// The client left: no more work for it.
				err = ex.ctx.Err()
				return false
			}
			calls = append(calls, ex.checkCut(tc, false, attempt, true, cutOff))
			return true
		})
		if err != nil {
			return nil, false, err
		}
	}
	if fc.IsObject() {
		if len(calls) > 0 {
			return nil, false, errors.New("message holds both tool_calls and a legacy function_call")
		}
		return []*call{ex.checkCut(fc, true, attempt, true, cutOff)}, true, nil
	}
	return calls, false, nil
}

func rawOrNull(r gjson.Result) string {
	if !r.Exists() {
		return "null"
	}
	return r.Raw
}

// run takes the first response through the ladder: local checks and repair,
// then re-asks while calls stay invalid and the budget allows, then the
// configured failure. It returns the status and body for the client; status
// 0 keeps the upstream's.
func (ex *exchange) run(first []byte, outreq *http.Request) (int, []byte, error) {
	choices, err := ex.collect(first, 0)
	if err != nil {
		if ex.ctx.Err() != nil {
			return 0, nil, ex.ctx.Err()
		}
		return 0, nil, malformedReply(err)
	}
	for _, ch := range choices {
		ex.calls = append(ex.calls, ch.calls...)
	}
	if len(choices) == 0 {
		ex.outcome = outcomeNone
		return 0, first, nil
	}
	var replies [][]byte
	for {
		ch := firstInvalid(choices)
		if ch == nil || ex.reasks >= ex.reaskBudget(ch) {
			break
		}
		if err := ex.ctx.Err(); err != nil {
			return 0, nil, err
		}
		reply, err := ex.reask(outreq, ch)
		if err != nil {
			if ex.ctx.Err() != nil {
				return 0, nil, err
			}
			ex.gaveUp = err.Error()
			break
		}
		replies = append(replies, reply)
	}

	if firstInvalid(choices) == nil {
		if ex.decide(false) == outcomeValid {
			return 0, first, nil
		}
		return ex.write(first, choices, replies)
	}

	ex.decide(true)
	switch ex.failurePolicy(choices) {
	case policy.FailPassthrough:
		if len(replies) == 0 {
			return 0, first, nil
		}
		body, err := wire.SumUsage(first, "usage", replies)
		if err != nil {
			return 0, nil, writeFailed(err)
		}
		return 0, body, nil
	case policy.FailDrop:
		return ex.write(first, choices, replies)
	default:
		return http.StatusBadRequest, ex.failureError(choices).Body(), nil
	}
}

// write is assemble for run: a failure to write is the client's 502.
func (ex *exchange) write(first []byte, choices []*choice, replies [][]byte) (int, []byte, error) {
	body, err := ex.assemble(first, choices, replies)
	if err != nil {
		return 0, nil, writeFailed(err)
	}
	return 0, body, nil
}

// decide sets the outcome from what happened to the calls.
func (ex *exchange) decide(failed bool) outcome {
	switch {
	case failed:
		ex.outcome = outcomeFailed
	case ex.anyUnchecked():
		// Said before reasked and repaired, whose counts the other headers
		// carry: an operator must see that a call went through unchecked.
		ex.outcome = outcomeUnchecked
	case ex.reasks > 0:
		ex.outcome = outcomeReasked
	case ex.repairs() > 0:
		ex.outcome = outcomeRepaired
	case len(ex.calls) > 0:
		ex.outcome = outcomeValid
	default:
		ex.outcome = outcomeNone
	}
	return ex.outcome
}

// anyUnchecked reports whether a call that reached the client was not
// checked against its schema.
func (ex *exchange) anyUnchecked() bool {
	for _, c := range ex.calls {
		if c.valid() && c.unchecked {
			return true
		}
	}
	return false
}

func firstInvalid(choices []*choice) *choice {
	for _, ch := range choices {
		if ch.invalid() {
			return ch
		}
	}
	return nil
}

// assemble writes the checked calls back into the first response: mended
// calls as mended, invalid ones dropped, and the calls of re-asks in place
// of the ones they correct. The message's other fields stay as the model
// first sent them (a streaming client has already seen its text). The model
// that answered last and the usage summed over every attempt are reported.
//
// Each choice that changes is rewritten on its own bytes, and the body is
// built once from the unchanged spans and the rewritten choices, so the
// work is linear in the size of the response however many choices change.
// A rewrite that fails is an error: the reply must not go out as the model
// sent it while counted as mended.
func (ex *exchange) assemble(first []byte, choices []*choice, replies [][]byte) ([]byte, error) {
	var edits []wire.Splice
	for _, ch := range choices {
		el, dirty, err := ch.rewrite()
		if err != nil {
			return nil, fmt.Errorf("choice %d: %w", ch.pos, err)
		}
		if dirty {
			edits = append(edits, wire.Splice{Start: ch.start, End: ch.end, With: el})
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

// rewrite returns the choice's JSON with its checked calls written back,
// and whether it differs from what the model sent.
func (ch *choice) rewrite() ([]byte, bool, error) {
	var keep []string
	dirty := ch.touched
	for _, c := range ch.calls {
		if !c.valid() {
			dirty = true
			continue
		}
		if c.changed() {
			dirty = true
		}
		out, err := c.output()
		if err != nil {
			return nil, false, err
		}
		keep = append(keep, out)
	}
	if !dirty {
		return nil, false, nil
	}
	field := "message.tool_calls"
	if ch.legacy {
		field = "message.function_call"
		keep = keep[:min(len(keep), 1)]
	}
	el := []byte(ch.raw)
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
	case ch.legacy:
		el, err = sjson.SetRawBytes(el, field, []byte(keep[0]))
	default:
		el, err = sjson.SetRawBytes(el, field, []byte("["+strings.Join(keep, ",")+"]"))
	}
	if err != nil {
		return nil, false, fmt.Errorf("write %s: %w", field, err)
	}
	return el, true, nil
}

// callDetail is one invalid call in the failure body.
type callDetail struct {
	Choice int           `json:"choice"`
	Tool   string        `json:"tool"`
	CallID string        `json:"call_id"`
	Errors []errorDetail `json:"errors"`
}

// failureError is the error the client gets when calls stay invalid.
func (ex *exchange) failureError(choices []*choice) *apiError {
	// The message names the first few calls, details the first
	// maxDetailedCalls: a reply of thousands of invalid calls must not make
	// a failure body of megabytes.
	const named, maxDetailedCalls = 5, 64
	var details []callDetail
	var names []string
	invalid := 0
	for _, ch := range choices {
		for _, c := range ch.calls {
			if c.valid() {
				continue
			}
			invalid++
			if len(details) < maxDetailedCalls {
				details = append(details, callDetail{Choice: ch.pos, Tool: wire.Clip(c.name, 128), CallID: wire.Clip(c.id, 128), Errors: errorDetails(c)})
			}
			if len(names) < named {
				names = append(names, fmt.Sprintf("%s (%s): %s", wire.Clip(c.name, 64), wire.Clip(c.id, 64), wire.Clip(describeErrors(c), 500)))
			}
		}
	}
	if invalid > named {
		names = append(names, fmt.Sprintf("and %d more", invalid-named))
	}
	msg := fmt.Sprintf("toolguard: %d tool call(s) could not be made valid after %d re-ask(s): %s",
		invalid, ex.reasks, strings.Join(names, "; "))
	if invalid > len(details) {
		msg += fmt.Sprintf(" (details lists the first %d)", len(details))
	}
	if ex.gaveUp != "" {
		// The reason may quote an upstream's error body, which may echo a
		// configured key (the fallback's is not the client's to see).
		msg += " (re-asking stopped: " + ex.h.redact(ex.gaveUp, nil) + ")"
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_tool_call", Code: "tool_call_invalid", Msg: msg, Details: details,
		Header: http.Header{"X-Should-Retry": {"false"}}}
}
