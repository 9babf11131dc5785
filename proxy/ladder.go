package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/policy"
)

// choice is one choice of a response that holds tool calls.
type choice struct {
	pos    int  // position in the choices array
	legacy bool // a function_call, not tool_calls
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
			out = append(out, &choice{
				pos:         int(k.Int()),
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
		return 0, ex.assemble(first, choices, replies), nil
	}

	ex.decide(true)
	switch ex.failurePolicy(choices) {
	case policy.FailPassthrough:
		if len(replies) == 0 {
			return 0, first, nil
		}
		return 0, sumUsage(first, replies), nil
	case policy.FailDrop:
		return 0, ex.assemble(first, choices, replies), nil
	default:
		return http.StatusBadRequest, ex.failureError(choices).body(), nil
	}
}

// decide sets the outcome from what happened to the calls.
func (ex *exchange) decide(failed bool) outcome {
	switch {
	case failed:
		ex.outcome = outcomeFailed
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
func (ex *exchange) assemble(first []byte, choices []*choice, replies [][]byte) []byte {
	body := first
	for _, ch := range choices {
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
			keep = append(keep, c.output())
		}
		if !dirty {
			continue
		}
		prefix := "choices." + strconv.Itoa(ch.pos) + "."
		field := "message.tool_calls"
		if ch.legacy {
			field = "message.function_call"
			keep = keep[:min(len(keep), 1)]
		}
		if len(keep) == 0 {
			body = remove(body, prefix+field)
			if fr := gjson.GetBytes(body, prefix+"finish_reason").String(); fr == "tool_calls" || fr == "function_call" {
				body = patch(body, prefix+"finish_reason", `"stop"`)
			}
			continue
		}
		if ch.legacy {
			body = patch(body, prefix+field, keep[0])
		} else {
			body = patch(body, prefix+field, "["+strings.Join(keep, ",")+"]")
		}
	}
	if len(replies) > 0 {
		if m := gjson.GetBytes(replies[len(replies)-1], "model"); m.Type == gjson.String {
			body = patch(body, "model", m.Raw)
		}
		body = sumUsage(body, replies)
	}
	return body
}

func remove(body []byte, path string) []byte {
	out, err := sjson.DeleteBytes(body, path)
	if err != nil {
		return body
	}
	return out
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
	var details []callDetail
	var names []string
	for _, ch := range choices {
		for _, c := range ch.calls {
			if c.valid() {
				continue
			}
			details = append(details, callDetail{Choice: ch.pos, Tool: c.name, CallID: c.id, Errors: errorDetails(c)})
			names = append(names, fmt.Sprintf("%s (%s): %s", c.name, c.id, describeErrors(c)))
		}
	}
	// The message names the first few calls; details has them all.
	const named = 5
	if len(names) > named {
		names = append(names[:named], fmt.Sprintf("and %d more", len(names)-named))
	}
	msg := fmt.Sprintf("toolguard: %d tool call(s) could not be made valid after %d re-ask(s): %s",
		len(details), ex.reasks, strings.Join(names, "; "))
	if ex.gaveUp != "" {
		// The reason may quote an upstream's error body, which may echo a
		// configured key (the fallback's is not the client's to see).
		msg += " (re-asking stopped: " + ex.h.redact(ex.gaveUp, nil) + ")"
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_tool_call", Code: "tool_call_invalid", Msg: msg, Details: details,
		Header: http.Header{"X-Should-Retry": {"false"}}}
}
