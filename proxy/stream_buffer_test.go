package proxy

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
)

// TestEventsKeepNothingOfTheirBuffer holds each format's stream handling to
// wire.Events' contract: an event is the stream's buffer, read in place and
// valid only until Handle returns, so whatever is kept of it (held events, a
// call's id and item, a block's start, the usage) must be a copy. The same
// events are handled twice: each from a copy of its own, and each from one
// buffer overwritten after every Handle, with an output buffer of its own
// that is written over after it (wire.Stream pools them). The client's
// bytes and the calls recorded must be the same.
func TestEventsKeepNothingOfTheirBuffer(t *testing.T) {
	const (
		clickSchema   = `{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`
		weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"number"}},"required":["city","temperature"],"additionalProperties":false}`
		weather       = `{"city":"Paris","temperature":21}`
	)
	type request struct {
		name string
		f    format
		fake fake.Format
		req  string
	}
	calls := []request{
		{"chat", chatFormat, fake.Chat, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Log in."}],"tools":` + faulty.ClickTools + `}`},
		{"responses", responsesFormat, fake.Responses, `{"model":"gpt-4o","stream":true,"input":"Log in.","tools":[{"type":"function","name":"click","parameters":` + clickSchema + `}]}`},
		{"messages", messagesFormat, fake.Messages, `{"model":"claude-test","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Log in."}],"tools":[{"name":"click","input_schema":` + clickSchema + `}]}`},
	}
	outputs := []request{
		{"chat", chatFormat, fake.Chat, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Weather?"}],"response_format":{"type":"json_schema","json_schema":{"name":"weather","schema":` + weatherSchema + `}}}`},
		{"responses", responsesFormat, fake.Responses, `{"model":"gpt-4o","stream":true,"input":"Weather?","text":{"format":{"type":"json_schema","name":"weather","schema":` + weatherSchema + `}}}`},
	}
	type reply struct {
		name    string
		reply   fake.Reply
		outcome ladder.Outcome
	}
	call := func(args string) []fake.Call { return []fake.Call{{ID: "call_1", Name: "click", Args: args}} }
	var cases []struct {
		request
		reply
	}
	for _, q := range calls {
		for _, r := range []reply{
			// Out at once as it came.
			{"valid", fake.Reply{Text: "Logging in now.", Calls: call(`{"selector":"#login"}`), In: 5, Out: 7}, ladder.OutcomeValid},
			// Held to the end, mended, out as toolguard's.
			{"mended", fake.Reply{Text: "Logging in now.", Calls: call(`{"Selector":"#login"}`), In: 5, Out: 7}, ladder.OutcomeRepaired},
			// Text held while it may be a call written as text, then read as one.
			{"text-call", fake.Reply{Text: "Sure.\n<tool_call>{\"name\":\"click\",\"arguments\":{\"selector\":\"#a\"}}</tool_call>\nDone.", In: 5, Out: 7}, ladder.OutcomeRepaired},
		} {
			cases = append(cases, struct {
				request
				reply
			}{q, r})
		}
	}
	for _, q := range outputs {
		for _, r := range []reply{
			{"output-valid", fake.Reply{Text: weather, In: 5, Out: 7}, ladder.OutcomeValid},
			{"output-mended", fake.Reply{Text: "```json\n" + weather + "\n```", In: 5, Out: 7}, ladder.OutcomeRepaired},
		} {
			cases = append(cases, struct {
				request
				reply
			}{q, r})
		}
	}
	for _, c := range cases {
		t.Run(c.request.name+"/"+c.reply.name, func(t *testing.T) {
			events := c.fake.Events(c.reply.reply, 5)
			copied, copiedCalls, outcome := handleEvents(t, c.f, c.req, events, false)
			if outcome != c.outcome {
				t.Fatalf("outcome %q, want %q; the client got:\n%s", outcome, c.outcome, copied)
			}
			reused, reusedCalls, _ := handleEvents(t, c.f, c.req, events, true)
			if reused != copied {
				t.Errorf("the client's bytes differ when the buffer is reused:\n%s\nfrom copies:\n%s", reused, copied)
			}
			if reusedCalls != copiedCalls {
				t.Errorf("the calls recorded differ when the buffer is reused:\n%s\nfrom copies:\n%s", reusedCalls, copiedCalls)
			}
		})
	}
}

// handleEvents hands events to a new stream of the format, each in a copy
// of its own or, with reuse, in one buffer overwritten after every Handle
// and with an output buffer of its own, and returns what the client got,
// the calls recorded and the outcome.
func handleEvents(t *testing.T, f format, req string, events []string, reuse bool) (string, string, ladder.Outcome) {
	t.Helper()
	h, q, pol := benchExchange(t, f, req)
	ex := h.newExchange(context.Background(), f, q, pol)
	s := q.NewStream(ex.session(), h.cfg.MaxResponseBytes)
	var out bytes.Buffer
	buf := make([]byte, 0, 4096)
	for _, ev := range events {
		in := []byte(ev)
		if reuse {
			buf = append(buf[:0], ev...)
			in = buf
		}
		o := &out
		if reuse {
			o = new(bytes.Buffer)
		}
		done, err := s.Handle(in, o)
		if reuse {
			// The output buffer goes back to a pool too, once the client
			// has it: nothing may be written to it after Handle returns.
			out.Write(o.Bytes())
			o.Reset()
			o.WriteString("written to after Handle returned\n\n")
			for i := range buf {
				buf[i] = 'x'
			}
		}
		if err != nil {
			t.Fatalf("Handle: %v; the client got:\n%s", err, out.String())
		}
		if done {
			return summary(out.String(), ex)
		}
	}
	if ae := s.End(); ae != nil {
		t.Fatalf("End: %v; the client got:\n%s", ae, out.String())
	}
	return summary(out.String(), ex)
}

func summary(out string, ex *exchange) (string, string, ladder.Outcome) {
	var calls strings.Builder
	for _, c := range ex.x.Calls {
		calls.WriteString(c.ID + " " + c.ToolName() + " " + string(c.Args) + " " + c.Raw + "\n")
	}
	return out, calls.String(), ex.x.Outcome
}
