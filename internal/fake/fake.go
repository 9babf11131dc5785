// Package fake renders the replies of a scripted model in each wire format
// toolguard inspects, as the OpenAI API writes them: a JSON reply, or the
// events of a stream. It is the one place test upstreams, the demo, the
// fault injector and the load test's model take their replies from; and
// of the conversation the load test sends (AgentHistory).
package fake

import (
	"encoding/json"

	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Call is a tool call the model makes. Args is the arguments text as the
// model writes it (valid JSON or not).
type Call struct{ ID, Name, Args string }

// Reply is what the model answers: some text, calls, or both.
type Reply struct {
	ID, Model string // defaults: a format's own id, "fake-model"
	Text      string
	Calls     []Call
	// In and Out are the tokens of the usage reported.
	In, Out int
}

// A Format writes replies in one wire format.
type Format interface {
	// Path is the route below the API's base URL.
	Path() string
	// JSON is the reply as a non-streamed response.
	JSON(r Reply) string
	// Events is the reply as a stream: each element one whole event, its
	// blank line included. Arguments come in deltas of at most frag bytes
	// (all at once if frag is 0).
	Events(r Reply, frag int) []string
	// Reasked reports whether a request body is toolguard's re-ask: it
	// carries the feedback on the calls of a previous answer.
	Reasked(body []byte) bool
	// Read returns the text and the arguments of the first call of a
	// non-streamed reply in the format, as a client reads them.
	Read(reply []byte) (text, args string)
}

// The formats.
var (
	Chat      Format = chat{}
	Responses Format = responses{}
)

// Quote renders s as a JSON string literal.
func Quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// fragments cuts s into pieces of at most n bytes (one piece if n is 0).
func fragments(s string, n int) []string {
	if n <= 0 || len(s) <= n {
		return []string{s}
	}
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

type chat struct{}

func (chat) Path() string { return "/chat/completions" }

func (chat) usage(r Reply) string {
	return `{"prompt_tokens":` + strconv.Itoa(r.In) + `,"completion_tokens":` + strconv.Itoa(r.Out) + `,"total_tokens":` + strconv.Itoa(r.In+r.Out) + `}`
}

func (c chat) JSON(r Reply) string {
	content := "null"
	if r.Text != "" {
		content = Quote(r.Text)
	}
	msg, finish := `{"role":"assistant","content":`+content+`,"refusal":null}`, "stop"
	if len(r.Calls) > 0 {
		var calls []string
		for _, tc := range r.Calls {
			calls = append(calls, `{"id":`+Quote(tc.ID)+`,"type":"function","function":{"name":`+Quote(tc.Name)+`,"arguments":`+Quote(tc.Args)+`}}`)
		}
		msg = `{"role":"assistant","content":` + content + `,"refusal":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
		finish = "tool_calls"
	}
	return `{"id":` + Quote(orDefault(r.ID, "chatcmpl-fake")) + `,"object":"chat.completion","created":1,"model":` + Quote(orDefault(r.Model, "fake-model")) +
		`,"choices":[{"index":0,"message":` + msg + `,"logprobs":null,"finish_reason":"` + finish + `"}],"usage":` + c.usage(r) + `}`
}

func (c chat) Events(r Reply, frag int) []string {
	ev := func(choices string) string {
		return `data: {"id":` + Quote(orDefault(r.ID, "chatcmpl-fake")) + `,"object":"chat.completion.chunk","created":1,"model":` +
			Quote(orDefault(r.Model, "fake-model")) + `,"choices":` + choices + "}\n\n"
	}
	delta := func(d, finish string) string {
		return ev(`[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]`)
	}
	out := []string{delta(`{"role":"assistant","content":""}`, "null")}
	if r.Text != "" {
		for _, f := range fragments(r.Text, frag) {
			out = append(out, delta(`{"content":`+Quote(f)+`}`, "null"))
		}
	}
	finish := `"stop"`
	for i, tc := range r.Calls {
		finish = `"tool_calls"`
		at := strconv.Itoa(i)
		out = append(out, delta(`{"tool_calls":[{"index":`+at+`,"id":`+Quote(tc.ID)+`,"type":"function","function":{"name":`+Quote(tc.Name)+`,"arguments":""}}]}`, "null"))
		for _, f := range fragments(tc.Args, frag) {
			out = append(out, delta(`{"tool_calls":[{"index":`+at+`,"function":{"arguments":`+Quote(f)+`}}]}`, "null"))
		}
	}
	return append(out, delta(`{}`, finish),
		ev(`[],"usage":`+c.usage(r)),
		"data: [DONE]\n\n")
}

func (chat) Read(reply []byte) (string, string) {
	msg := gjson.GetBytes(reply, "choices.0.message")
	return msg.Get("content").Str, msg.Get("tool_calls.0.function.arguments").Str
}

func (chat) Reasked(body []byte) bool {
	return contains(body, `"role":"tool"`) || contains(body, `"role":"function"`)
}

// contains matches s in body, with or without a space after the colon
// (some gateways re-encode bodies with spaces).
func contains(body []byte, s string) bool {
	return strings.Contains(string(body), s) || strings.Contains(string(body), strings.Replace(s, ":", ": ", 1))
}

type responses struct{}

func (responses) Path() string { return "/responses" }

func (responses) usage(r Reply) string {
	return `{"input_tokens":` + strconv.Itoa(r.In) + `,"input_tokens_details":{"cached_tokens":0},"output_tokens":` + strconv.Itoa(r.Out) +
		`,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":` + strconv.Itoa(r.In+r.Out) + `}`
}

// items are the output items of a reply, complete.
func (responses) items(r Reply) []string {
	var out []string
	if r.Text != "" {
		out = append(out, `{"id":"msg_fake","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":`+Quote(r.Text)+`}],"role":"assistant"}`)
	}
	for i, tc := range r.Calls {
		out = append(out, `{"id":"fc_fake_`+strconv.Itoa(i)+`","type":"function_call","status":"completed","arguments":`+Quote(tc.Args)+`,"call_id":`+Quote(tc.ID)+`,"name":`+Quote(tc.Name)+`}`)
	}
	return out
}

func (f responses) response(r Reply, status, output, usage string) string {
	return `{"id":` + Quote(orDefault(r.ID, "resp_fake")) + `,"object":"response","created_at":1,"status":"` + status + `","error":null,"incomplete_details":null,` +
		`"instructions":null,"model":` + Quote(orDefault(r.Model, "fake-model")) + `,"output":` + output + `,"parallel_tool_calls":true,"store":false,` +
		`"text":{"format":{"type":"text"}},"tool_choice":"auto","usage":` + usage + `}`
}

func (f responses) JSON(r Reply) string {
	return f.response(r, "completed", "["+strings.Join(f.items(r), ",")+"]", f.usage(r))
}

func (f responses) Events(r Reply, frag int) []string {
	seq := 0
	var out []string
	ev := func(typ, rest string) {
		out = append(out, "event: "+typ+"\ndata: {\"type\":\""+typ+"\",\"sequence_number\":"+strconv.Itoa(seq)+rest+"}\n\n")
		seq++
	}
	ev("response.created", `,"response":`+f.response(r, "in_progress", "[]", "null"))
	ev("response.in_progress", `,"response":`+f.response(r, "in_progress", "[]", "null"))
	items := f.items(r)
	i := 0
	if r.Text != "" {
		at := `,"output_index":0`
		ev("response.output_item.added", at+`,"item":{"id":"msg_fake","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
		ev("response.content_part.added", `,"item_id":"msg_fake"`+at+`,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
		for _, d := range fragments(r.Text, frag) {
			ev("response.output_text.delta", `,"item_id":"msg_fake"`+at+`,"content_index":0,"delta":`+Quote(d)+`,"logprobs":[]`)
		}
		ev("response.output_text.done", `,"item_id":"msg_fake"`+at+`,"content_index":0,"text":`+Quote(r.Text)+`,"logprobs":[]`)
		ev("response.content_part.done", `,"item_id":"msg_fake"`+at+`,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":`+Quote(r.Text)+`}`)
		ev("response.output_item.done", at+`,"item":`+items[0])
		i++
	}
	for k, tc := range r.Calls {
		at := `,"output_index":` + strconv.Itoa(i)
		id := `"fc_fake_` + strconv.Itoa(k) + `"`
		ev("response.output_item.added", at+`,"item":{"id":`+id+`,"type":"function_call","status":"in_progress","arguments":"","call_id":`+Quote(tc.ID)+`,"name":`+Quote(tc.Name)+`}`)
		for _, d := range fragments(tc.Args, frag) {
			ev("response.function_call_arguments.delta", `,"item_id":`+id+at+`,"delta":`+Quote(d))
		}
		ev("response.function_call_arguments.done", `,"item_id":`+id+at+`,"name":`+Quote(tc.Name)+`,"arguments":`+Quote(tc.Args))
		ev("response.output_item.done", at+`,"item":`+items[i])
		i++
	}
	ev("response.completed", `,"response":`+f.response(r, "completed", "["+strings.Join(items, ",")+"]", f.usage(r)))
	return out
}

func (responses) Read(reply []byte) (string, string) {
	out := gjson.GetBytes(reply, "output")
	return out.Get(`#(type=="message").content.0.text`).Str, out.Get(`#(type=="function_call").arguments`).Str
}

func (responses) Reasked(body []byte) bool {
	// A re-ask ends with toolguard's instruction after the outputs; a
	// client's tool result ends with its function_call_output.
	return contains(body, `"type":"function_call_output"`) && strings.Contains(string(body), "were invalid and were not executed")
}
