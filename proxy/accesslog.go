package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// requestInfo follows one request through the handler, for its log line and
// its metrics. It is the request's context too: the client's, with itself
// as the value of requestInfoKey, in the one allocation (context.WithValue
// would make another).
type requestInfo struct {
	context.Context // the client's request context
	start           time.Time
	id              string    // the request id, in the response and every log line
	idHeader        [1]string // the response header's value of id (see headerSetIn)
	// Filled in as the request goes upstream (by timedTransport, possibly
	// from the transport's goroutines).
	upstreamNanos  atomic.Int64
	upstreamStatus atomic.Int64
	// ex is the request's exchange, if it was an inspected chat completion,
	// once it has a result (set by logResult).
	ex *exchange
	// inspected is the exchange while its request is with the reverse
	// proxy: its hooks find it here, so the request needs no context (and
	// no copy of itself) of its own for it.
	inspected *exchange
	// rec records the response on its way out (serveHTTP's writer), held
	// here so that one allocation serves both.
	rec recorder
	// body is the pooled buffer the request's body was read into, if it
	// was (see heldBody).
	body heldBody
	// deadline bounds the request's first upstream request (see proxy).
	deadline upstreamDeadline
}

type requestInfoKey struct{}

// Value is the request's record for requestInfoKey, and the client's
// context's value for any other key.
func (info *requestInfo) Value(key any) any {
	if _, ok := key.(requestInfoKey); ok {
		return info
	}
	return info.Context.Value(key)
}

func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// recorder remembers the status and size of a response on its way out.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	// firstByte, if set, observes the seconds from start to the first
	// byte of an event stream.
	firstByte prometheus.Observer
	start     time.Time
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 || w.status < 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.bytes == 0 && len(p) > 0 && w.firstByte != nil && strings.HasPrefix(headerGet(w.Header(), "Content-Type"), "text/event-stream") {
		w.firstByte.Observe(time.Since(w.start).Seconds())
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush keeps streaming working for code that asserts http.Flusher;
// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Flush() {
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sendComplete sends a response whose body is written in full (as many
// bytes as its Content-Length declares) before the request's log line and
// metrics. net/http holds a small response in its buffers until the handler
// returns, so the client would otherwise wait for toolguard's bookkeeping.
// Over HTTP/1 only (HTTP/2 would end the stream in a frame of its own), and
// never a response of unknown length, which a flush now would send chunked.
// A flush that fails has lost the client, as net/http finds again when the
// handler returns.
func (w *recorder) sendComplete(r *http.Request) {
	if r.ProtoMajor != 1 || w.bytes == 0 {
		return
	}
	var n [20]byte
	if headerGet(w.Header(), "Content-Length") != string(strconv.AppendInt(n[:0], w.bytes, 10)) {
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// routeOf names the route a request took, from a fixed set: metric labels
// and log fields never hold a raw path.
func routeOf(r *http.Request) string {
	switch r.Pattern {
	case "POST /v1/chat/completions":
		return "/v1/chat/completions"
	case "POST /v1/responses":
		return "/v1/responses"
	case "POST /v1/messages":
		return "/v1/messages"
	case "/v1/":
		return "/v1/*"
	case "GET /healthz":
		return "/healthz"
	case "GET /readyz":
		return "/readyz"
	case "GET /metrics":
		return "/metrics"
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		// Refused before routing (401).
		return "/v1/*"
	}
	return "other"
}

// finish sends a complete response on its way (see sendComplete), then
// writes the request's one log line and counts it. Probes and scrapes log
// at debug: at info they would drown the traffic every few seconds.
func (h *Handler) finish(rec *recorder, r *http.Request, info *requestInfo) {
	rec.sendComplete(r)
	status := rec.status
	if status == 0 {
		// Nothing written: the client left (or the handler aborted) first.
		status = statusClientClosed
	}
	route := routeOf(r)
	h.metrics.request(route, status)
	traceRoute(r.Context(), r.Method, route)
	total := time.Since(info.start)
	upstream := time.Duration(info.upstreamNanos.Load())
	ex := info.ex
	if ex != nil && ex.x.Outcome == "" {
		ex = nil
	}
	var overhead time.Duration
	if ex != nil {
		traceResult(r.Context(), ex)
		h.metrics.exchange(ex)
		overhead = max(total-upstream, 0)
		h.metrics.overhead.Observe(overhead.Seconds())
	}
	level := slog.LevelInfo
	if openPath(r.URL.Path) {
		level = slog.LevelDebug
	}
	if !h.log.Enabled(r.Context(), level) {
		// The line would be dropped: do not build it.
		return
	}
	// Sized for every attribute below, so appending never grows it.
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.String("path", wire.Clip(r.URL.Path, 256)),
		slog.Int("status", status),
		slog.Int64("bytes", rec.bytes),
		slog.Float64("duration_ms", millis(total)),
	)
	if up := info.upstreamStatus.Load(); up != 0 {
		attrs = append(attrs, slog.Int64("upstream_status", up), slog.Float64("upstream_ms", millis(upstream)))
	}
	if ex != nil {
		var repairs []string
		for _, c := range ex.x.Calls {
			if c.Valid() {
				for _, e := range c.Edits {
					repairs = append(repairs, string(e.Kind)+" "+ladder.PointerOrRoot(e.Path))
				}
			}
		}
		attrs = append(attrs,
			slog.String("format", ex.f.name),
			slog.String("outcome", string(ex.x.Outcome)),
			slog.Int("attempts", ex.x.Reasks+1),
			slog.Int("reasks", ex.x.Reasks),
			slog.Any("repairs", repairs),
			slog.Float64("overhead_ms", millis(overhead)),
		)
		if ex.x.GaveUp != nil {
			attrs = append(attrs, slog.String("gave_up", h.redact(ex.x.GaveUp.Error(), r)))
		}
	}
	// The record is handed to the handler directly, as Logger.LogAttrs
	// would, without the caller's program counter, which costs a stack walk
	// and would name this line on every access line (the line carries no
	// source); and with its request_id among its attributes, where
	// requestIDs would add it last, so the record grows once.
	attrs = append(attrs, requestIDAttr(info.id))
	now := time.Now()
	if h.accessJSON != nil && writeAccessLine(h.accessJSON, now, level, "request", attrs) {
		return
	}
	rl := slog.NewRecord(now, level, "request", 0)
	rl.AddAttrs(attrs...)
	h.accessLog.Handle(r.Context(), rl)
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// logResult writes one line per call that could not be made valid, so
// users can study their model's failures, and hands the exchange to the
// request's log line. With TOOLGUARD_LOG_ARGUMENTS=false no argument value
// is logged: neither the raw arguments nor the values the errors quote.
func (ex *exchange) logResult(r *http.Request) {
	if info := requestInfoFrom(r.Context()); info != nil {
		info.ex = ex
	}
	h := ex.h
	for _, c := range ex.x.Calls {
		if c.Valid() {
			continue
		}
		attrs := []slog.Attr{
			slog.String("tool", wire.Clip(c.Name, 128)),
			slog.String("call_id", wire.Clip(c.ID, 128)),
			slog.Int("attempt", c.Attempt),
		}
		if h.cfg.LogArguments {
			attrs = append(attrs,
				slog.String("errors", h.redact(wire.Clip(ladder.Describe(c), 2048), r)),
				slog.String("arguments", h.redact(wire.Clip(c.RawArgs, 2048), r)))
		} else {
			attrs = append(attrs, slog.String("errors", errorLocations(c)))
		}
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "invalid tool call", attrs...)
	}
}

// errorLocations renders a call's errors as paths and keywords only: the
// validator's messages may quote the value found.
func errorLocations(c *ladder.Call) string {
	var b strings.Builder
	for i, e := range c.Errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(ladder.PointerOrRoot(e.Path) + ": " + e.Keyword)
	}
	return wire.Clip(b.String(), 2048)
}

// redact removes every secret toolguard knows of from a text bound for the
// log: the configured keys and the token the request carried. Upstream error
// bodies may echo a key ("Incorrect API key provided: ..."), and re-ask
// failures quote them. Without r, the text is for the client: its own token
// is left alone.
func (h *Handler) redact(s string, r *http.Request) string {
	secrets := append([]string{h.cfg.UpstreamAPIKey, h.cfg.FallbackUpstreamAPIKey}, h.cfg.APIKeys...)
	if r != nil {
		if tok, ok := clientToken(r); ok {
			secrets = append(secrets, tok)
		}
	}
	for _, k := range secrets {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// timedTransport measures each upstream request, from sending it to the end
// (or close) of its response body, for the latency histogram and for the
// request's split between upstream time and toolguard's own.
type timedTransport struct {
	next    http.RoundTripper
	observe func(time.Duration)
}

func (t *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tb := &timedBody{t: t, start: time.Now(), info: requestInfoFrom(req.Context())}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		tb.done()
		return nil, err
	}
	if tb.info != nil {
		tb.info.upstreamStatus.Store(int64(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The body is the upgraded connection; ReverseProxy needs it as it is.
		tb.done()
		return resp, nil
	}
	tb.ReadCloser = resp.Body
	resp.Body = tb
	return resp, nil
}

// timedBody measures its upstream request once, at the end of the body or
// when it is closed.
type timedBody struct {
	io.ReadCloser
	t     *timedTransport
	start time.Time
	info  *requestInfo // nil outside a request toolguard serves
	once  sync.Once
}

// done records the time since the request was sent.
func (b *timedBody) done() {
	d := time.Since(b.start)
	b.t.observe(d)
	if b.info != nil {
		b.info.upstreamNanos.Add(int64(d))
	}
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

// editSummary names each edit by kind and path, without the values (they are
// argument values, which the log may not hold).
func editSummary(edits []repair.Edit) []string {
	out := make([]string, len(edits))
	for i, e := range edits {
		out[i] = string(e.Kind) + " " + e.Path
	}
	return out
}
