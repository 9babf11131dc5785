package chat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Reask is the request of a re-ask for the turn's invalid calls: the
// client's request, made non-streaming (stream_options is only allowed on
// streamed requests), with the conversation so far, the model's last
// message in it, one tool message per call saying what was wrong (or that
// it was valid) and an instruction; n of 1; and, if the policy says so
// (ladder.Exchange.ForceTool), a forced tool_choice and the fallback's
// model. Every other field is kept as the client sent it. The messages
// added are kept for the next re-ask once its answer is read (Answer).
func (q *Request) Reask(x *ladder.Exchange, t *ladder.Turn, attempt int, model string) ([]byte, error) {
	w := turnOf(t)
	feedback, err := feedback(t, attempt)
	if err != nil {
		return nil, err
	}
	msgs := append(w.history[:len(w.history):len(w.history)], feedback...)
	body := q.Body
	if gjson.GetBytes(body, "stream").Bool() {
		if body, err = wire.Patch(body, "stream", "false"); err != nil {
			return nil, err
		}
		if body, err = wire.Delete(body, "stream_options"); err != nil {
			return nil, err
		}
	}
	for _, m := range msgs {
		if body, err = wire.Patch(body, "messages.-1", m); err != nil {
			return nil, err
		}
	}
	if n := gjson.GetBytes(body, "n"); n.Exists() && n.Int() != 1 {
		// One choice is being corrected; ask for one.
		if body, err = wire.Patch(body, "n", "1"); err != nil {
			return nil, err
		}
	}
	if name, ok := x.ForceTool(t); ok {
		// Servers with grammar-constrained decoding then guarantee the
		// syntax of its call.
		if w.legacy || (q.legacy && !gjson.GetBytes(body, "tools").Exists()) {
			body, err = wire.Patch(body, "function_call", `{"name":`+wire.Quote(name)+`}`)
		} else {
			body, err = wire.Patch(body, "tool_choice", `{"type":"function","function":{"name":`+wire.Quote(name)+`}}`)
		}
		if err != nil {
			return nil, err
		}
	}
	if model != "" {
		if body, err = wire.Patch(body, "model", wire.Quote(model)); err != nil {
			return nil, err
		}
	}
	w.pending = msgs
	return body, nil
}

// feedback builds the messages appended for one re-ask.
func feedback(t *ladder.Turn, attempt int) ([]string, error) {
	w := turnOf(t)
	var out []string
	calls := t.Last
	ids := make([]string, len(calls))
	parts := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
		if ids[i] == "" {
			ids[i] = "call_toolguard_" + strconv.Itoa(attempt) + "_" + strconv.Itoa(i)
		}
		var err error
		if parts[i], err = forHistory(c, w.legacy); err != nil {
			return nil, err
		}
		if !w.legacy && c.ID == "" {
			withID, err := wire.Patch([]byte(parts[i]), "id", wire.Quote(ids[i]))
			if err != nil {
				return nil, err
			}
			parts[i] = string(withID)
		}
	}
	switch {
	case w.output:
		// The content: the model is shown what it wrote and told what is
		// wrong with it.
		text := ladder.Reminder(t)
		if len(calls) > 0 {
			text = ladder.OutputFeedback(calls[0])
		}
		return []string{`{"role":"assistant","content":` + w.lastContentJSON() + `}`, `{"role":"user","content":` + wire.Quote(text) + `}`}, nil
	case len(calls) == 0:
		// The model's last answer had no calls: remind it of the ones that
		// are still invalid.
		out = append(out, `{"role":"assistant","content":`+w.lastContentJSON()+`}`)
		out = append(out, `{"role":"user","content":`+wire.Quote(ladder.Reminder(t))+`}`)
		return out, nil
	case w.legacy:
		out = append(out, `{"role":"assistant","content":`+w.lastContentJSON()+`,"function_call":`+parts[0]+`}`)
		out = append(out, `{"role":"function","name":`+wire.Quote(calls[0].Name)+`,"content":`+wire.Quote(ladder.Feedback(calls[0], ladder.MaxFeedbackBytes))+`}`)
	default:
		out = append(out, `{"role":"assistant","content":`+w.lastContentJSON()+`,"tool_calls":[`+strings.Join(parts, ",")+`]}`)
		room := ladder.MaxFeedbackBytes
		for i, c := range calls {
			text := ladder.Feedback(c, room)
			room -= len(text)
			out = append(out, `{"role":"tool","tool_call_id":`+wire.Quote(ids[i])+`,"content":`+wire.Quote(text)+`}`)
		}
	}
	out = append(out, `{"role":"user","content":`+wire.Quote(ladder.ReaskInstruction)+`}`)
	return out, nil
}

// Answer reads the reply to a re-ask of the turn: its calls, and its
// message for the next re-ask's history.
func (q *Request) Answer(t *ladder.Turn, reply []byte) (ladder.Answer, error) {
	if err := wire.Strict(reply, responseShape); err != nil {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply cannot be read unambiguously: %w", err)
	}
	msg := gjson.GetBytes(reply, "choices.0.message")
	var message [3]gjson.Result // tool_calls, function_call, content
	wire.Fields(msg, messageFields, message[:])
	w := turnOf(t)
	var sent []ladder.Sent
	if w.output {
		s, ok, err := q.content(msg)
		if err != nil {
			return ladder.Answer{}, fmt.Errorf("the upstream's reply is malformed: %w", err)
		}
		if ok {
			sent = append(sent, s)
		}
	} else if _, err := sentOf(message[0], message[1], func(s ladder.Sent, _, _, _, _ gjson.Result) bool { sent = append(sent, s); return true }); err != nil {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply is malformed: %w", err)
	}
	w.history, w.pending = w.pending, nil
	w.lastContent, w.streamed = rawOrNull(message[2]), nil
	return ladder.Answer{Sent: sent, CutOff: gjson.GetBytes(reply, "choices.0.finish_reason").String() == "length"}, nil
}
