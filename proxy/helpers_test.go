package proxy_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/recording"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// received is one request as the fake upstream saw it.
type received struct {
	Method, Path, RawQuery string
	EscapedPath            string // the path as it was sent
	Header                 http.Header
	Body                   []byte
}

// reply is one scripted upstream answer.
type reply struct {
	Status int
	Header http.Header
	Body   string
}

// fakeUpstream answers with scripted replies, in order (the last one
// repeats), and records what it received.
type fakeUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	got     []received
	replies []reply
	// handle, if set, answers instead of the script.
	handle func(w http.ResponseWriter, r *http.Request, n int)
}

func newUpstream(t *testing.T, replies ...reply) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{replies: replies}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	n := len(u.got)
	u.got = append(u.got, received{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, EscapedPath: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body})
	handle := u.handle
	var rp reply
	if len(u.replies) > 0 {
		rp = u.replies[min(n, len(u.replies)-1)]
	}
	u.mu.Unlock()
	if handle != nil {
		handle(w, r, n)
		return
	}
	for k, v := range rp.Header {
		w.Header()[k] = v
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	if rp.Status == 0 {
		rp.Status = http.StatusOK
	}
	w.WriteHeader(rp.Status)
	io.WriteString(w, rp.Body)
}

func (u *fakeUpstream) requests() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.got...)
}

// guard starts toolguard in front of up, with the test's changes to the
// default configuration. Its log goes to the returned buffer.
func guard(t *testing.T, up *fakeUpstream, change func(*policy.Config)) (*httptest.Server, *syncBuffer) {
	t.Helper()
	cfg := policy.Default()
	cfg.UpstreamURL = up.URL + "/v1"
	if change != nil {
		change(&cfg)
	}
	logs := &syncBuffer{}
	h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	served := newServed(h)
	logs.settle = served.wait
	srv := httptest.NewServer(served)
	t.Cleanup(h.CloseIdleConnections)
	t.Cleanup(srv.Close)
	return srv, logs
}

// served is a handler that knows when the requests it serves have
// finished: toolguard sends a complete response before it logs, counts and
// traces the request, so a client has its answer before those are written.
type served struct {
	next http.Handler
	mu   sync.Mutex
	n    int // requests being served
	idle sync.Cond
}

func newServed(next http.Handler) *served {
	s := &served{next: next}
	s.idle.L = &s.mu
	return s
}

func (s *served) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.n--; s.n == 0 {
			s.idle.Broadcast()
		}
		s.mu.Unlock()
	}()
	s.next.ServeHTTP(w, r)
}

// wait returns once no request is being served.
func (s *served) wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.n > 0 {
		s.idle.Wait()
	}
}

// syncBuffer is a log sink safe for the server's goroutines. With settle
// set, String waits for it first: for the requests being served to finish
// their lines.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	settle func()
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	if s.settle != nil {
		s.settle()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// post sends a chat completion request and returns the response and its body.
func post(t *testing.T, srv *httptest.Server, path, body string) (*http.Response, []byte) {
	t.Helper()
	return do(t, context.Background(), srv, http.MethodPost, path, body, nil)
}

func do(t *testing.T, ctx context.Context, srv *httptest.Server, method, path, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// cassette loads a recorded exchange from testdata.
func cassette(t *testing.T, name string) recording.Interaction {
	t.Helper()
	in, err := recording.Load("../testdata/openai-recordings", name)
	if err != nil {
		t.Fatal(err)
	}
	return in[0]
}

// The click tool of the original problem reports.
const clickTools = `[{"type":"function","function":{"name":"click","description":"Click an element",` +
	`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]`

func clickRequest(extra string) string {
	return `{"model":"gpt-test","messages":[{"role":"user","content":"Click the button."}],"tools":` + clickTools + extra + `}`
}

// toolReply is an upstream completion holding the given tool calls
// (each a JSON object text) with the given usage.
func toolReply(usage string, calls ...string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-2025",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]},"finish_reason":"tool_calls"}],` +
		`"usage":` + usage + `}`
}

// clickCall is a click call whose arguments field holds args (a JSON
// string literal, or any raw JSON value).
func clickCall(id, argsField string) string {
	return `{"id":"` + id + `","type":"function","function":{"name":"click","arguments":` + argsField + `}}`
}

func header(resp *http.Response, k string) string { return resp.Header.Get(k) }

func mustJSON(t *testing.T, b []byte) gjson.Result {
	t.Helper()
	if !gjson.ValidBytes(b) {
		t.Fatalf("not JSON: %s", b)
	}
	return gjson.ParseBytes(b)
}
