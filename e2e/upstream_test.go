package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A request kind is what the fake upstream was asked for.
const (
	kindFirst      = "first"       // a new turn: the model calls the tool
	kindReask      = "reask"       // toolguard's re-ask, with its errors in tool messages
	kindToolResult = "tool-result" // the client's loop sends the tool's result back
)

// upstream is a scripted OpenAI-compatible endpoint that plays one
// scenario, streamed or not as each request asks: chat completions here,
// the Responses API in upstream_responses_test.go.
type upstream struct {
	sc  scenario
	srv *httptest.Server

	mu    sync.Mutex
	kinds []string
}

// startUpstream starts a scripted chat completions endpoint that plays sc.
func startUpstream(t *testing.T, sc scenario) *upstream {
	return startScripted(t, sc, (*upstream).serve)
}

// startScripted starts a fake upstream that plays sc with serve, until the
// test ends.
func startScripted(t *testing.T, sc scenario, serve func(*upstream, http.ResponseWriter, *http.Request)) *upstream {
	t.Helper()
	u := &upstream{sc: sc}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(u, w, r) }))
	t.Cleanup(u.srv.Close)
	return u
}

// baseURL is the OpenAI base URL of the fake upstream.
func (u *upstream) baseURL() string { return u.srv.URL + "/v1" }

// requests lists the kinds of the requests received so far.
func (u *upstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.kinds...)
}

// record notes a request of the given kind and returns its number, from 1.
func (u *upstream) record(kind string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.kinds = append(u.kinds, kind)
	return len(u.kinds)
}

// modelTurns counts the requests that asked the model for tool calls.
func (u *upstream) modelTurns() int {
	n := 0
	for _, k := range u.requests() {
		if k != kindToolResult {
			n++
		}
	}
	return n
}

type chatRequest struct {
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

// kind tells a client's tool result (the last message is a tool message)
// from toolguard's re-ask (tool messages, then toolguard's instruction).
func (r chatRequest) kind() string {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
		return kindToolResult
	}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			return kindReask
		}
	}
	return kindFirst
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !readScripted(w, r, "/v1/chat/completions", func(body []byte) bool { return json.Unmarshal(body, &req) == nil }) {
		return
	}
	n, m := u.answer(req.kind())
	id := fmt.Sprintf("chatcmpl-e2e%d", n)
	if req.Stream {
		writeStream(w, id, m, req.StreamOptions.IncludeUsage)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, completion(id, m))
}

// readScripted reads the body of a POST to path and hands it to parse. It
// answers 404 to another request, 400 to a body that cannot be read or that
// parse refuses, and then returns false.
func readScripted(w http.ResponseWriter, r *http.Request, path string, parse func(body []byte) bool) bool {
	if r.Method != http.MethodPost || r.URL.Path != path {
		http.Error(w, `{"error":{"message":"not scripted","type":"invalid_request_error"}}`, http.StatusNotFound)
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || !parse(body) {
		http.Error(w, `{"error":{"message":"bad request body","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return false
	}
	return true
}

// answer records a request of the given kind and returns its number and
// the model's scripted reply to it.
func (u *upstream) answer(kind string) (int, reply) {
	n := u.record(kind)
	switch kind {
	case kindFirst:
		if u.sc.text != "" {
			return n, reply{content: u.sc.text}
		}
		return n, reply{callID: fmt.Sprintf("call_%d", n), args: u.sc.first}
	case kindReask:
		return n, reply{callID: fmt.Sprintf("call_%d", n), args: u.sc.corrected}
	default:
		return n, reply{content: "Clicked."}
	}
}

// reply is the model's message: a click call, or text.
type reply struct {
	callID, args string
	content      string
}

const usageJSON = `{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}`

func completion(id string, m reply) string {
	msg, finish := `{"role":"assistant","content":`+jsonString(m.content)+`,"refusal":null,"annotations":[]}`, "stop"
	if m.callID != "" {
		msg, finish = `{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":`+jsonString(m.callID)+
			`,"type":"function","function":{"name":"click","arguments":`+jsonString(m.args)+`}}]}`, "tool_calls"
	}
	return `{"id":"` + id + `","object":"chat.completion","created":1755133856,"model":"gpt-e2e","choices":[{"index":0,"message":` + msg +
		`,"logprobs":null,"finish_reason":"` + finish + `"}],"usage":` + usageJSON + `,"service_tier":"default","system_fingerprint":null}`
}

// writeStream answers as OpenAI streams: a first chunk with the role (and the
// call's id, type, name and empty arguments), the arguments in fragments,
// a chunk with the finish reason, the usage if asked for, then [DONE].
func writeStream(w http.ResponseWriter, id string, m reply, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(data string) {
		io.WriteString(w, "data: "+data+"\n\n")
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(choices string) string {
		return `{"id":"` + id + `","object":"chat.completion.chunk","created":1755137933,"model":"gpt-e2e","service_tier":"default","system_fingerprint":null,"choices":` + choices + `}`
	}
	delta := func(d, finish string) string {
		return chunk(`[{"index":0,"delta":` + d + `,"logprobs":null,"finish_reason":` + finish + `}]`)
	}
	finish := `"stop"`
	if m.callID != "" {
		event(delta(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":`+jsonString(m.callID)+
			`,"type":"function","function":{"name":"click","arguments":""}}],"refusal":null}`, "null"))
		for _, frag := range fragments(m.args, 7) {
			event(delta(`{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(frag)+`}}]}`, "null"))
		}
		finish = `"tool_calls"`
	} else {
		event(delta(`{"role":"assistant","content":"","refusal":null}`, "null"))
		event(delta(`{"content":`+jsonString(m.content)+`}`, "null"))
	}
	event(delta(`{}`, finish))
	if includeUsage {
		event(strings.TrimSuffix(chunk(`[]`), "}") + `,"usage":` + usageJSON + `}`)
	}
	event("[DONE]")
}

// fragments cuts s into pieces of at most n bytes, as a model streams its
// arguments token by token.
func fragments(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
