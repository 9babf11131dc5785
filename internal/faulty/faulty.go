// Package faulty is a scripted OpenAI-compatible upstream that misbehaves on
// demand, for tests and soak runs: it resets connections, stalls, sends
// broken bodies. Each request chooses its reply with headers, so one server
// can serve mixed traffic:
//
//   - X-Reply: valid (default), repairable, reask (invalid until re-asked),
//     never (invalid every time), text (no tool calls);
//   - X-Fault: one of the Fault values, or none.
//
// A request whose body asks for "stream":true is answered with SSE.
package faulty

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Fault names one way of misbehaving.
type Fault string

// The faults.
const (
	ResetMidBody       Fault = "reset-mid-body"       // headers and half a body, then a TCP reset
	StallBeforeHeaders Fault = "stall-before-headers" // no answer until the request is cancelled or Stall passes
	StallBetweenEvents Fault = "stall-between-events" // a stream that stops sending midway
	InvalidJSON        Fault = "invalid-json"         // 200 with a body that is not JSON
	WrongContentType   Fault = "wrong-content-type"   // a JSON reply labelled text/plain
	Gzip               Fault = "gzip"                 // the reply gzip-encoded, asked for or not
	Enormous           Fault = "enormous"             // a reply of Enormous bytes
	ChunkedCutShort    Fault = "chunked-cut-short"    // chunked encoding that ends without its last chunk
	ServerError        Fault = "server-error"         // 500 with an OpenAI error body
)

// Faults lists every fault.
var Faults = []Fault{ResetMidBody, StallBeforeHeaders, StallBetweenEvents, InvalidJSON, WrongContentType, Gzip, Enormous, ChunkedCutShort, ServerError}

// Server is the scripted upstream's handler.
type Server struct {
	// Stall bounds how long a stall lasts if the request is not cancelled
	// first; zero means until it is cancelled.
	Stall time.Duration
	// EnormousBytes is the size of an enormous reply; zero means 64 MiB.
	EnormousBytes int
}

// ClickTools declares the tool every reply calls: click({"selector": string}).
const ClickTools = `[{"type":"function","function":{"name":"click","parameters":{"type":"object",` +
	`"properties":{"selector":{"type":"string"}},"required":["selector"],"additionalProperties":false}}}]`

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	stream := bytes.Contains(body, []byte(`"stream":true`))
	reasked := bytes.Contains(body, []byte(`"role":"tool"`)) || bytes.Contains(body, []byte(`"role":"function"`))
	args := arguments(r.Header.Get("X-Reply"), reasked)
	fault := Fault(r.Header.Get("X-Fault"))

	switch fault {
	case StallBeforeHeaders:
		s.stall(r)
		return
	case ServerError:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		return
	case Enormous:
		n := s.EnormousBytes
		if n == 0 {
			n = 64 << 20
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[],"pad":"`)
		io.Copy(w, io.LimitReader(zeros{}, int64(n)))
		io.WriteString(w, `"}`)
		return
	}
	if stream {
		s.stream(w, r, args, fault)
		return
	}
	reply := Completion(args)
	switch fault {
	case InvalidJSON:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply[:len(reply)/2])
	case WrongContentType:
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, reply)
	case Gzip:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		io.WriteString(gz, reply)
		gz.Close()
	case ResetMidBody:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(reply)))
		io.WriteString(w, reply[:len(reply)/2])
		reset(w)
	case ChunkedCutShort:
		cutChunked(w, "application/json", reply[:len(reply)/2])
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}
}

func (s *Server) stall(r *http.Request) {
	var timeout <-chan time.Time
	if s.Stall > 0 {
		t := time.NewTimer(s.Stall)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-r.Context().Done():
	case <-timeout:
	}
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, args string, fault Fault) {
	events := Stream(args)
	half := len(events) / 2
	switch fault {
	case ResetMidBody:
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(events[:half], ""))
		w.(http.Flusher).Flush()
		reset(w)
		return
	case ChunkedCutShort:
		cutChunked(w, "text/event-stream", strings.Join(events[:half], ""))
		return
	case InvalidJSON:
		events[half] = "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\"\n\n"
	}
	ct := "text/event-stream"
	if fault == WrongContentType {
		ct = "text/plain"
	}
	w.Header().Set("Content-Type", ct)
	f := w.(http.Flusher)
	for i, ev := range events {
		if fault == StallBetweenEvents && i == half {
			s.stall(r)
			return
		}
		io.WriteString(w, ev)
		f.Flush()
	}
}

// arguments returns the click arguments a reply carries.
func arguments(kind string, reasked bool) string {
	switch kind {
	case "repairable":
		return `{"Selector": "myCoolButton"}`
	case "reask":
		if reasked {
			return `{"selector":"#fixed"}`
		}
		return `{}`
	case "never":
		return `{}`
	case "text":
		return ""
	}
	return `{"selector":"#submit"}`
}

// Completion is a non-streamed reply calling click with args ("" for a
// reply with text and no call).
func Completion(args string) string {
	msg := `{"role":"assistant","content":"Done.","refusal":null}`
	finish := "stop"
	if args != "" {
		msg = `{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"click","arguments":` + quote(args) + `}}]}`
		finish = "tool_calls"
	}
	return `{"id":"chatcmpl-f","object":"chat.completion","created":1,"model":"faulty-1","choices":[{"index":0,"message":` + msg +
		`,"logprobs":null,"finish_reason":"` + finish + `"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`
}

// Stream is the same reply as SSE events: some text, then the call in
// fragments, the finish, a usage chunk and [DONE].
func Stream(args string) []string {
	ev := func(choices string) string {
		return `data: {"id":"chatcmpl-f","object":"chat.completion.chunk","created":1,"model":"faulty-1","choices":` + choices + "}\n\n"
	}
	out := []string{
		ev(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`),
		ev(`[{"index":0,"delta":{"content":"Working on it."},"finish_reason":null}]`),
	}
	finish := "stop"
	if args != "" {
		finish = "tool_calls"
		out = append(out, ev(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"click","arguments":""}}]},"finish_reason":null}]`))
		for len(args) > 0 {
			n := min(6, len(args))
			out = append(out, ev(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+quote(args[:n])+`}}]},"finish_reason":null}]`))
			args = args[n:]
		}
	}
	out = append(out, ev(`[{"index":0,"delta":{},"finish_reason":"`+finish+`"}]`),
		`data: {"id":"chatcmpl-f","object":"chat.completion.chunk","created":1,"model":"faulty-1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`+"\n\n",
		"data: [DONE]\n\n")
	return out
}

// quote renders s as a JSON string literal.
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// reset closes the connection with a TCP reset.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// cutChunked writes a chunked response by hand and stops before its last
// chunk, then closes the connection.
func cutChunked(w http.ResponseWriter, contentType, body string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", contentType)
	fmt.Fprintf(buf, "%x\r\n%s\r\n", len(body), body)
	fmt.Fprintf(buf, "%x\r\n%s", 100, body[:min(10, len(body))]) // a chunk that never ends
	buf.Flush()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
