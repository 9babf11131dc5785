package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The weather a structured output must be, as the model sends it when
// right, and a copy that is not valid for the schema.
const (
	weatherValid   = `{"city":"Paris","temperature":21}`
	weatherInvalid = `{"city":"Paris"}`
)

// outputScenarios are replies whose output text a client reads in more
// than one place, or in a shape other than one string: each must reach the
// client as a valid object, or as an error. The names say the API
// (chat-, responses-) that openai-output-shapes.mjs calls.
var outputScenarios = []scenario{
	{name: "chat-content-parts", wantError: true, wantStatus: 502, wantMessage: malformedMessage},
	{name: "chat-content-number", wantError: true, wantStatus: 502, wantMessage: malformedMessage},
	{name: "chat-no-content", corrected: weatherValid, wantReasks: 1},
	{name: "responses-invalid-deltas"},
	{name: "responses-invalid-completed"},
	{name: "responses-two-parts", wantError: true, wantStatus: 502, wantMessage: malformedMessage},
	{name: "responses-text-and-refusal", wantError: true, wantStatus: 502, wantMessage: malformedMessage},
}

// malformedMessage is in toolguard's error for a reply it cannot check.
const malformedMessage = "does not read as clients would"

// TestOutputShapeClients runs openai-node's parse and stream helpers, on
// both APIs, against replies that carry their output text in more than one
// copy or shape: straight to the model, then through toolguard.
func TestOutputShapeClients(t *testing.T) {
	runClients(t, &report{markers: "output-shape tables", clients: []client{nodeClient("openai-node", "openai-output-shapes.mjs")}, scenarios: outputScenarios}, startOutputUpstream)
}

// startOutputUpstream starts a chat completions and Responses endpoint
// whose model answers with sc's shape, and with a valid output to
// toolguard's re-ask.
func startOutputUpstream(t *testing.T, sc scenario) *upstream {
	return startScripted(t, sc, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		var body []byte
		path := "/v1/chat/completions"
		if strings.HasPrefix(sc.name, "responses-") {
			path = "/v1/responses"
		}
		if !readScripted(w, r, path, func(b []byte) bool { body = b; return true }) {
			return
		}
		kind := kindFirst
		if strings.Contains(string(body), "not valid for the requested response format") {
			kind = kindReask
		}
		u.record(kind)
		stream := strings.Contains(string(body), `"stream":true`)
		w.Header().Set("Content-Type", map[bool]string{true: "text/event-stream", false: "application/json"}[stream])
		io.WriteString(w, outputReply(sc.name, kind == kindReask, stream))
	})
}

// outputReply is the body of the reply with the shape named.
func outputReply(name string, reask, stream bool) string {
	chat := func(message string) string {
		return `{"id":"chatcmpl-e2e","object":"chat.completion","created":1755137933,"model":"gpt-e2e","choices":[{"index":0,"message":` + message +
			`,"logprobs":null,"finish_reason":"stop"}],"usage":` + usageJSON + `}`
	}
	chunks := func(deltas ...string) string {
		var b strings.Builder
		for i, d := range deltas {
			finish := "null"
			if i == len(deltas)-1 {
				finish = `"stop"`
			}
			fmt.Fprintf(&b, `data: {"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1755137933,"model":"gpt-e2e","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`+"\n\n", d, finish)
		}
		return b.String() + "data: [DONE]\n\n"
	}
	text := func(s string) string { return `{"type":"output_text","annotations":[],"text":` + jsonString(s) + `}` }
	switch {
	case reask && stream:
		return chunks(`{"role":"assistant","content":`+jsonString(weatherValid)+`}`, `{}`)
	case reask:
		return chat(`{"role":"assistant","content":` + jsonString(weatherValid) + `,"refusal":null}`)
	}
	half := len(weatherValid) / 2
	switch name {
	case "chat-content-parts":
		if stream {
			return chunks(`{"role":"assistant","content":""}`, `{"content":[`+jsonString(weatherInvalid)+`]}`, `{}`)
		}
		return chat(`{"role":"assistant","content":[` + text(weatherInvalid) + `]}`)
	case "chat-content-number":
		// Joined as a client joins them, the deltas read as the valid
		// object; the number is what toolguard would not have checked.
		if stream {
			return chunks(`{"role":"assistant","content":`+jsonString(`{"city":"Paris","temperature":`)+`}`, `{"content":21}`, `{"content":"}"}`, `{}`)
		}
		return chat(`{"role":"assistant","content":21}`)
	case "chat-no-content":
		if stream {
			return chunks(`{"role":"assistant"}`, `{}`)
		}
		return chat(`{"role":"assistant","content":null}`)
	case "responses-invalid-deltas":
		return responsesReply(stream, []string{text(weatherValid)}, []string{weatherInvalid}, weatherValid)
	case "responses-invalid-completed":
		return responsesReply(stream, []string{text(weatherValid)}, []string{weatherValid[:half], weatherValid[half:]}, weatherInvalid)
	case "responses-two-parts":
		return responsesReply(stream, []string{text(weatherValid), text(weatherInvalid)}, nil, "")
	case "responses-text-and-refusal":
		return responsesReply(stream, []string{text(weatherInvalid), `{"type":"refusal","refusal":"I can't."}`}, nil, "")
	}
	return chat(`{"role":"assistant","content":` + jsonString(weatherValid) + `}`)
}

// responsesReply is a response holding one message with parts. Streamed,
// the first part's text goes out as deltas (its own text when deltas is
// nil), and the text of the first part in response.completed is completed
// ("" keeps the part's).
func responsesReply(stream bool, parts, deltas []string, completed string) string {
	message := func(parts []string) string {
		return `{"id":"msg_e2e","type":"message","status":"completed","role":"assistant","content":[` + strings.Join(parts, ",") + `]}`
	}
	response := func(status, output string) string {
		return `{"id":"resp_e2e","object":"response","created_at":1755137933,"status":"` + status + `","error":null,"incomplete_details":null,` +
			`"model":"gpt-e2e","output":` + output + `,"parallel_tool_calls":true,"store":false,"usage":` + responsesUsageJSON + `}`
	}
	if !stream {
		return response("completed", "["+message(parts)+"]")
	}
	var b strings.Builder
	seq := 0
	ev := func(typ, fields string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, seq, fields)
		seq++
	}
	ev("response.created", `,"response":`+response("in_progress", "[]"))
	ev("response.output_item.added", `,"output_index":0,"item":`+message(nil))
	final := parts
	for i, p := range parts {
		at := fmt.Sprintf(`,"item_id":"msg_e2e","output_index":0,"content_index":%d`, i)
		text, isText := between(p, `"text":`, `}`)
		if !isText {
			ev("response.content_part.added", at+`,"part":{"type":"refusal","refusal":""}`)
			ev("response.content_part.done", at+`,"part":`+p)
			continue
		}
		ev("response.content_part.added", at+`,"part":{"type":"output_text","annotations":[],"text":""}`)
		ds := deltas
		if i > 0 || ds == nil {
			ds = []string{unquote(text)}
		}
		for _, d := range ds {
			ev("response.output_text.delta", at+`,"delta":`+jsonString(d))
		}
		ev("response.output_text.done", at+`,"text":`+text)
		ev("response.content_part.done", at+`,"part":`+p)
	}
	ev("response.output_item.done", `,"output_index":0,"item":`+message(parts))
	if completed != "" {
		final = append([]string{`{"type":"output_text","annotations":[],"text":` + jsonString(completed) + `}`}, parts[1:]...)
	}
	ev("response.completed", `,"response":`+response("completed", "["+message(final)+"]"))
	return b.String()
}

// between returns what of s lies after the first from and before the last
// to.
func between(s, from, to string) (string, bool) {
	i, j := strings.Index(s, from), strings.LastIndex(s, to)
	if i < 0 || j < i+len(from) {
		return "", false
	}
	return s[i+len(from) : j], true
}

func unquote(s string) string {
	var out string
	fmt.Sscanf(s, "%q", &out)
	return out
}
