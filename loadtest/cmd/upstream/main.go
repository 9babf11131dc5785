// Command upstream is the fake OpenAI-compatible model behind every arm of
// the load comparison. It answers POST .../chat/completions with a fixed
// completion holding one call to the click tool
// ({"selector": string}, required), chosen by the request's model:
//
//   - "valid" (or any other model): valid arguments, {"selector":"#login-button"}.
//   - "repair": {"Selector":"#login-button"}, which toolguard mends locally
//     by renaming the key, written in another case, to the declared one.
//   - "reask": {}, which misses the required selector and cannot be mended;
//     a re-ask (a request whose messages hold a "role":"tool" message) is
//     answered with valid arguments.
//
// A request with "stream":true gets the same completion as server-sent
// events: a role event, -events content events, the tool call in two
// argument deltas, a finish event and [DONE], each flushed, -event-interval
// apart. Every reply waits -latency first. The body is matched by substring,
// not decoded, so the fake costs every arm the same little CPU.
//
// POST .../responses is answered the same way on the Responses API, in the
// replies of internal/fake: one function_call item, or its stream.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/loadtest/internal/loopback"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

type options struct {
	latency  time.Duration
	pad      int
	events   int
	interval time.Duration
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9000", "where to listen (a loopback address)")
	var o options
	fs.DurationVar(&o.latency, "latency", 0, "wait this long before answering")
	fs.IntVar(&o.pad, "pad", 0, "bytes of assistant content added to each reply (reply size)")
	fs.IntVar(&o.events, "events", 50, "content events in a streamed reply")
	fs.DurationVar(&o.interval, "event-interval", 0, "pause between streamed events (a trickling model)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return loopback.Serve(ctx, *addr, newModel(o))
}

// The arguments field (a JSON string literal) of each kind of call.
var arguments = map[string]string{
	"valid":  `"{\"selector\":\"#login-button\"}"`,
	"repair": `"{\"Selector\":\"#login-button\"}"`,
	"reask":  `"{}"`,
}

type model struct {
	o        options
	complete map[string][]byte   // non-streamed reply by kind
	stream   map[string][][]byte // streamed events by kind
	// The same on the Responses API.
	responses       map[string][]byte
	responsesStream map[string][][]byte
}

func newModel(o options) *model {
	m := &model{o: o, complete: map[string][]byte{}, stream: map[string][][]byte{},
		responses: map[string][]byte{}, responsesStream: map[string][][]byte{}}
	content := "null"
	if o.pad > 0 {
		content = strconv.Quote(strings.Repeat("x", o.pad))
	}
	for kind, args := range arguments {
		m.complete[kind] = []byte(`{"id":"chatcmpl-load","object":"chat.completion","created":1,"model":"fake-` + kind + `",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":` + content + `,"tool_calls":[` +
			`{"id":"call_Xc4Aiih37EUJvqjoZlu4Vdoi","type":"function","function":{"name":"click","arguments":` + args + `}}]},` +
			`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}`)
		m.stream[kind] = streamEvents(kind, args, o.events)
		unq, _ := strconv.Unquote(args)
		r := fake.Reply{ID: "resp_load", Model: "fake-" + kind, Calls: []fake.Call{{ID: "call_Xc4Aiih37EUJvqjoZlu4Vdoi", Name: "click", Args: unq}}, In: 82, Out: 17}
		m.responses[kind] = []byte(fake.Responses.JSON(r))
		for _, ev := range fake.Responses.Events(r, (len(unq)+1)/2) {
			m.responsesStream[kind] = append(m.responsesStream[kind], []byte(ev))
		}
	}
	return m
}

func streamEvents(kind, args string, n int) [][]byte {
	ev := func(choices string) []byte {
		return []byte(`data: {"id":"chatcmpl-load","object":"chat.completion.chunk","created":1,"model":"fake-` + kind + `","choices":` + choices + "}\n\n")
	}
	out := [][]byte{ev(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`)}
	for i := range n {
		out = append(out, ev(`[{"index":0,"delta":{"content":"word`+strconv.Itoa(i)+` "},"finish_reason":null}]`))
	}
	// The arguments arrive in two deltas, as models send them.
	unq, _ := strconv.Unquote(args)
	half := len(unq) / 2
	out = append(out,
		ev(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"click","arguments":`+strconv.Quote(unq[:half])+`}}]},"finish_reason":null}]`),
		ev(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+strconv.Quote(unq[half:])+`}}]},"finish_reason":null}]`),
		ev(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`),
		[]byte("data: [DONE]\n\n"))
	return out
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	responses := strings.HasSuffix(r.URL.Path, "/responses")
	if r.Method != http.MethodPost || (!strings.HasSuffix(r.URL.Path, "/chat/completions") && !responses) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	kind := kindOf(body)
	if responses && fake.Responses.Reasked(body) {
		kind = "valid"
	}
	if m.o.latency > 0 {
		t := time.NewTimer(m.o.latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if has(body, `"stream":true`) {
		events := m.stream[kind]
		if responses {
			events = m.responsesStream[kind]
		}
		m.serveStream(w, r, events)
		return
	}
	reply := m.complete[kind]
	if responses {
		reply = m.responses[kind]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
	w.Write(reply)
}

func (m *model) serveStream(w http.ResponseWriter, r *http.Request, events [][]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f := w.(http.Flusher)
	var tick *time.Ticker
	if m.o.interval > 0 {
		tick = time.NewTicker(m.o.interval)
		defer tick.Stop()
	}
	for i, ev := range events {
		if tick != nil && i > 0 {
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		f.Flush()
	}
}

// kindOf picks the reply for a request: a re-ask is always answered validly.
func kindOf(body []byte) string {
	switch {
	case has(body, `"role":"tool"`):
		return "valid"
	case has(body, `"model":"repair"`):
		return "repair"
	case has(body, `"model":"reask"`):
		return "reask"
	}
	return "valid"
}

// has matches s in body, with or without a space after the colon (some
// gateways re-encode the body with spaces).
func has(body []byte, s string) bool {
	return bytes.Contains(body, []byte(s)) || bytes.Contains(body, []byte(strings.Replace(s, ":", ": ", 1)))
}
