package responses

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Reask is the request of a stateless re-ask for the turn's invalid calls:
// the client's request, made non-streaming, its input (a string input
// becomes a user message) followed by the items the re-asks so far have
// added, the model's last calls as function_call items without their ids
// (nothing is stored for them), a function_call_output for each (its
// errors, or that it was kept: every call in the input needs its output)
// and an instruction; and, if the policy says so (ladder.Exchange.ForceTool),
// a forced tool_choice and the fallback's model. Every other field is kept
// as the client sent it.
func (q *Request) Reask(x *ladder.Exchange, tt *ladder.Turn, attempt int, model string) ([]byte, error) {
	t := turnOf(tt)
	added, err := feedback(tt, attempt)
	if err != nil {
		return nil, err
	}
	msgs := append(t.history[:len(t.history):len(t.history)], added...)
	body := q.Body
	if gjson.GetBytes(body, "stream").Bool() {
		if body, err = wire.Patch(body, "stream", "false"); err != nil {
			return nil, err
		}
	}
	if gjson.GetBytes(body, "stream_options").Exists() {
		if body, err = wire.Delete(body, "stream_options"); err != nil {
			return nil, err
		}
	}
	input := gjson.GetBytes(body, "input")
	var items []string
	switch {
	case input.Type == gjson.String:
		items = append(items, `{"type":"message","role":"user","content":`+input.Raw+`}`)
	case input.IsArray():
		input.ForEach(func(_, it gjson.Result) bool {
			items = append(items, it.Raw)
			return true
		})
	}
	items = append(items, msgs...)
	if body, err = wire.Patch(body, "input", "["+strings.Join(items, ",")+"]"); err != nil {
		return nil, err
	}
	if name, ok := x.ForceTool(tt); ok {
		// Servers with grammar-constrained decoding then guarantee the
		// syntax of its call.
		ns, fn := splitName(name, namespaced(q.Body, name))
		choice := `{"type":"function","name":` + wire.Quote(fn) + `}`
		if ns != "" {
			choice = `{"type":"function","name":` + wire.Quote(fn) + `,"namespace":` + wire.Quote(ns) + `}`
		}
		if body, err = wire.Patch(body, "tool_choice", choice); err != nil {
			return nil, err
		}
	}
	if model != "" {
		if body, err = wire.Patch(body, "model", wire.Quote(model)); err != nil {
			return nil, err
		}
	}
	t.pending = msgs
	return body, nil
}

// namespaced reports whether the tool keyed name is a namespace's function.
func namespaced(body []byte, key string) bool {
	found := false
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str == "namespace" {
			prefix := t.Get("name").Str + "."
			t.Get("tools").ForEach(func(_, f gjson.Result) bool {
				found = found || prefix+f.Get("name").Str == key
				return !found
			})
		}
		return !found
	})
	return found
}

// feedback builds the input items added for one re-ask.
func feedback(t *ladder.Turn, attempt int) ([]string, error) {
	var out []string
	calls := t.Last
	if w := turnOf(t); w.output {
		// The text: the model is shown what it wrote and told what is
		// wrong with it.
		text := ladder.Reminder(t)
		if len(calls) > 0 {
			text = ladder.OutputFeedback(calls[0])
		}
		return []string{`{"type":"message","role":"assistant","content":` + wire.Quote(w.lastText) + `}`, userMessage(text)}, nil
	}
	if len(calls) == 0 {
		// The model's last answer had no calls: remind it of the ones that
		// are still invalid.
		return []string{userMessage(ladder.Reminder(t))}, nil
	}
	room := ladder.MaxFeedbackBytes
	var outputs []string
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_toolguard_%d_%d", attempt, i)
		}
		args := c.RawArgs
		if gjson.Parse(args).Type != gjson.String {
			// Providers reject a function_call whose arguments are not a
			// string.
			args = wire.Quote(args)
		}
		ns, name := splitName(c.Name, gjson.Get(c.Raw, "namespace").Str != "")
		call := `{"type":"function_call","call_id":` + wire.Quote(id) + `,"name":` + wire.Quote(name)
		if ns != "" {
			call += `,"namespace":` + wire.Quote(ns)
		}
		out = append(out, call+`,"arguments":`+args+`}`)
		text := ladder.Feedback(c, room)
		room -= len(text)
		outputs = append(outputs, `{"type":"function_call_output","call_id":`+wire.Quote(id)+`,"output":`+wire.Quote(text)+`}`)
	}
	out = append(out, outputs...)
	return append(out, userMessage(ladder.ReaskInstruction)), nil
}

func userMessage(text string) string {
	return `{"type":"message","role":"user","content":` + wire.Quote(text) + `}`
}

// Answer reads the reply to a re-ask of the turn: its calls, and its input
// items for the next re-ask.
func (q *Request) Answer(tt *ladder.Turn, reply []byte) (ladder.Answer, error) {
	if err := wire.Strict(reply, responseShape); err != nil {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply cannot be read unambiguously: %w", err)
	}
	resp := gjson.ParseBytes(reply)
	output := resp.Get("output")
	if output.Exists() && output.Type != gjson.Null && !output.IsArray() {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply is malformed: output is not an array")
	}
	var sent []ladder.Sent
	t := turnOf(tt)
	if t.output {
		at, shape := readText(output)
		switch shape {
		case unreadText:
			return ladder.Answer{}, fmt.Errorf("the upstream's reply is malformed: %w", errUnreadText)
		case oneText:
			sent = append(sent, ladder.Sent{Name: ladder.OutputTool, Tool: q.output, Args: wire.Quote(at.text)})
			t.lastText = at.text
		}
	} else if err := sentOf(output, func(s ladder.Sent, _, _ gjson.Result) bool { sent = append(sent, s); return true }); err != nil {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply is malformed: %w", err)
	}
	t.history, t.pending = t.pending, nil
	return ladder.Answer{Sent: sent, CutOff: cutOff(resp)}, nil
}
