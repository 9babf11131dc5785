package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"
)

// The fake Responses upstream answers as OpenAI did in captured streams and
// replies: ids resp_…, fc_…, msg_…, a status on the response and on each
// item, usage with its details, the request's settings echoed back, and in
// streams `event:` lines that repeat the type, a sequence_number from 0, no
// [DONE], and the usage only in response.completed.

// startResponsesUpstream starts a scripted OpenAI Responses endpoint
// (POST /v1/responses) that plays sc, streamed or not as each request asks.
func startResponsesUpstream(t *testing.T, sc scenario) *upstream {
	return startScripted(t, sc, (*upstream).serveResponses)
}

// responsesKind tells a client's tool result (the last input item is a
// function_call_output) from toolguard's re-ask (function_call_output items,
// then toolguard's instruction) and from a new turn.
func responsesKind(body []byte) string {
	items := gjson.GetBytes(body, "input").Array() // a string input is a new turn
	if n := len(items); n > 0 && items[n-1].Get("type").String() == "function_call_output" {
		return kindToolResult
	}
	for _, it := range items {
		if it.Get("type").String() == "function_call_output" {
			return kindReask
		}
	}
	return kindFirst
}

func (u *upstream) serveResponses(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if !readScripted(w, r, "/v1/responses", func(b []byte) bool { body = b; return gjson.ValidBytes(b) }) {
		return
	}
	n, m := u.answer(responsesKind(body))
	resp := responseObject{n: n, req: body}
	if gjson.GetBytes(body, "stream").Bool() {
		writeResponsesStream(w, resp, m)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, resp.json("completed", "["+outputItem(n, m, "completed", true)+"]", responsesUsageJSON))
}

const responsesUsageJSON = `{"input_tokens":50,"input_tokens_details":{"cached_tokens":0},"output_tokens":10,` +
	`"output_tokens_details":{"reasoning_tokens":0},"total_tokens":60}`

// itemID is an id as OpenAI makes them: a prefix, then 48 hex digits.
func itemID(prefix string, n int) string {
	return fmt.Sprintf("%s_68e2e0%042x", prefix, n)
}

// responseObject is the n-th response of the fake, to the request req.
type responseObject struct {
	n   int
	req []byte
}

func (o responseObject) id() string { return itemID("resp", o.n) }

// json renders the response object with the given status, output items and
// usage, echoing the request's settings as OpenAI does.
func (o responseObject) json(status, output, usage string) string {
	echo := func(path, def string) string {
		if v := gjson.GetBytes(o.req, path); v.Exists() {
			return v.Raw
		}
		return def
	}
	completedAt := "null"
	if status == "completed" {
		completedAt = "1763852401"
	}
	return `{"id":"` + o.id() + `","object":"response","created_at":1763852400,"status":"` + status +
		`","background":false,"completed_at":` + completedAt + `,"error":null,"incomplete_details":null,` +
		`"instructions":` + echo("instructions", "null") + `,"max_output_tokens":` + echo("max_output_tokens", "null") +
		`,"max_tool_calls":null,"model":` + echo("model", `"gpt-e2e"`) + `,"output":` + output +
		`,"parallel_tool_calls":` + echo("parallel_tool_calls", "true") +
		`,"previous_response_id":` + echo("previous_response_id", "null") +
		`,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,` +
		`"service_tier":"default","store":` + echo("store", "true") + `,"temperature":` + echo("temperature", "1.0") +
		`,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":` + echo("tool_choice", `"auto"`) +
		`,"tools":` + echo("tools", "[]") + `,"top_logprobs":0,"top_p":` + echo("top_p", "1.0") +
		`,"truncation":"disabled","usage":` + usage + `,"user":null,"metadata":` + echo("metadata", "{}") + `}`
}

// outputItem renders the model's message as an output item: a function_call
// item for a click call, a message item for text. Unless full, the item is
// as output_item.added first shows it: no arguments, no content yet.
func outputItem(n int, m reply, status string, full bool) string {
	if m.callID != "" {
		args := ""
		if full {
			args = m.args
		}
		return `{"id":"` + itemID("fc", n) + `","type":"function_call","status":"` + status + `","arguments":` +
			jsonString(args) + `,"call_id":` + jsonString(m.callID) + `,"name":"click"}`
	}
	content := "[]"
	if full {
		content = "[" + outputText(m.content) + "]"
	}
	return `{"id":"` + itemID("msg", n) + `","type":"message","status":"` + status + `","content":` + content + `,"role":"assistant"}`
}

func outputText(text string) string {
	return `{"type":"output_text","annotations":[],"logprobs":[],"text":` + jsonString(text) + `}`
}

// responsesStream writes Responses SSE events: an `event:` line with the
// type, a data line whose JSON carries the type and the next sequence_number,
// each event flushed.
type responsesStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	seq     int
}

func (s *responsesStream) event(typ, fields string) {
	io.WriteString(s.w, "event: "+typ+"\ndata: {\"type\":\""+typ+"\",\"sequence_number\":"+strconv.Itoa(s.seq)+","+fields+"}\n\n")
	s.seq++
	if s.flusher != nil {
		s.flusher.Flush()
	}
}

// writeResponsesStream answers as OpenAI streams one output item: the
// response created and in progress, the item added empty, its arguments (or
// text) in fragments, the item done, then the response completed with its
// output and usage.
func writeResponsesStream(w http.ResponseWriter, resp responseObject, m reply) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	s := &responsesStream{w: w, flusher: flusher}
	inProgress := resp.json("in_progress", "[]", "null")
	s.event("response.created", `"response":`+inProgress)
	s.event("response.in_progress", `"response":`+inProgress)

	done := outputItem(resp.n, m, "completed", true)
	s.event("response.output_item.added", `"output_index":0,"item":`+outputItem(resp.n, m, "in_progress", false))
	at := `"item_id":"` + gjson.Get(done, "id").String() + `","output_index":0`
	if m.callID != "" {
		for _, frag := range fragments(m.args, 7) {
			s.event("response.function_call_arguments.delta", at+`,"delta":`+jsonString(frag)+`,"obfuscation":"e2e0pad"`)
		}
		s.event("response.function_call_arguments.done", at+`,"name":"click","arguments":`+jsonString(m.args))
	} else {
		at += `,"content_index":0`
		s.event("response.content_part.added", at+`,"part":`+outputText(""))
		for _, frag := range fragments(m.content, 4) {
			s.event("response.output_text.delta", at+`,"delta":`+jsonString(frag)+`,"logprobs":[],"obfuscation":"e2e0pad"`)
		}
		s.event("response.output_text.done", at+`,"text":`+jsonString(m.content)+`,"logprobs":[]`)
		s.event("response.content_part.done", at+`,"part":`+outputText(m.content))
	}
	s.event("response.output_item.done", `"output_index":0,"item":`+done)
	s.event("response.completed", `"response":`+resp.json("completed", "["+done+"]", responsesUsageJSON))
}
