package proxy

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

// Options configure a Handler.
type Options struct {
	// Config is toolguard's configuration, already validated.
	Config policy.Config
	// Logger receives one line per inspected request, one per invalid tool
	// call and every warning. If nil, logs are discarded. The request's line
	// goes to its handler without the caller's position (it would name the
	// same line every time): under HandlerOptions.AddSource its source is
	// empty.
	Logger *slog.Logger
	// AccessLog, if not nil, is where each request's line goes, written
	// without slog when it can be: byte for byte as
	// slog.NewJSONHandler(AccessLog, opts) writes it, for opts without
	// ReplaceAttr or AddSource, in one Write (AccessLog must be safe for
	// concurrent use). Set it only to the writer of Logger's JSONHandler.
	// Logger's level still decides whether the line is written, and a line
	// that cannot be written so goes through Logger.
	AccessLog io.Writer
	// Transport reaches the upstream. If nil, NewTransport(Config) is used.
	Transport http.RoundTripper
	// TracerProvider, if not nil, traces each request and each upstream
	// attempt (see tracing.go).
	TracerProvider trace.TracerProvider
}

// Handler is toolguard's http.Handler.
type Handler struct {
	cfg      policy.Config
	global   policy.Rules // cfg.Rules(""), the global rules, read once: cfg does not change
	upstream *url.URL
	rt       http.RoundTripper
	rp       *httputil.ReverseProxy
	schemas  *validate.Cache
	// upstreamBase is the upstream's path without its trailing slash, to
	// which rewrite appends a request's path below /v1; upstreamRawBase
	// is its escaped form, for a request whose path came escaped.
	upstreamBase, upstreamRawBase string
	// history remembers the conversation prefixes whose calls needed no
	// mending, so that a conversation sent again is not walked again.
	history *ladder.HistoryCache
	// decls remembers the tools that requests declared, so that
	// declarations sent again are not walked again.
	decls *ladder.Declarations
	// requests remembers each client's last two requests of different
	// shapes read in full, so that a request of either shape is not
	// tokenised again.
	requests *wire.Templates
	// replies remembers each client's last two replies of different
	// shapes read in full, so that a reply of either shape is not
	// tokenised again.
	replies *wire.Templates
	// starts remembers the first events of each client's last streams,
	// so that a stream's first events are not tokenised again.
	starts   *wire.Templates
	log      *slog.Logger
	mux      *http.ServeMux
	ready    atomic.Bool
	metrics  *metrics
	keys     keyring
	slots    slots
	decoded  *byteBudget // decoded request bodies in flight (see decodeBody)
	bodies   bodyBuffers // buffers the request bodies are read into (see heldBody)
	fallback *fallback
	secrets  []string                 // keys redacted from what upstreams send back
	serve    http.Handler             // serveHTTP, traced when tracing is on
	inspect  map[string]returnHandler // the inspected routes, by format name
	// posts are the inspected routes by their exact path, for a POST
	// (see shortcut).
	posts map[string]postRoute

	// accessJSON is Options.AccessLog.
	accessJSON io.Writer
	// accessLog is the handler under log's request ids, for the access
	// line, which carries its request_id itself (see finish).
	accessLog slog.Handler
}

var _ http.Handler = (*Handler)(nil)

// New builds a Handler. It reports an error only for a configuration that
// does not validate.
func New(o Options) (*Handler, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	u, err := url.Parse(o.Config.UpstreamURL)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg:        o.Config,
		upstream:   u,
		rt:         o.Transport,
		schemas:    validate.NewCache(o.Config.SchemaCacheSize),
		history:    ladder.NewHistoryCache(),
		decls:      ladder.NewDeclarations(),
		requests:   wire.NewTemplates(),
		replies:    wire.NewTemplates(),
		starts:     wire.NewStreamStarts(),
		log:        o.Logger,
		accessJSON: o.AccessLog,
		keys:       newKeyring(o.Config.APIKeys),
		slots:      newSlots(o.Config.MaxConcurrentUpstream),
		decoded:    newByteBudget(decodedInFlight * o.Config.MaxBodyBytes),
	}
	h.global = h.cfg.Rules("")
	h.upstreamBase = strings.TrimSuffix(u.Path, "/")
	h.upstreamRawBase = strings.TrimSuffix(u.EscapedPath(), "/")
	h.schemas.SetMaxBytes(o.Config.SchemaCacheBytes)
	h.secrets = upstreamSecrets(o.Config)
	h.metrics = newMetrics(h.schemas)
	if h.rt == nil {
		h.rt = NewTransport(o.Config)
	}
	h.rt = &timedTransport{next: h.rt, observe: func(d time.Duration) { h.metrics.upstream.Observe(d.Seconds()) }}
	h.serve = http.HandlerFunc(h.serveHTTP)
	if o.TracerProvider != nil {
		tp := boundedProvider{tp: o.TracerProvider}
		h.rt = tracedTransport(h.rt, tp)
		h.serve = tracedHandler(h.serve, tp)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.accessLog = h.log.Handler()
	h.log = slog.New(requestIDs{h.accessLog})
	h.schemas.OnCompileError = func(raw []byte, err error) {
		h.log.Warn("tool schema does not compile; its calls pass unvalidated",
			"error", err.Error(), "schema", wire.Clip(string(raw), 512))
	}
	h.initResilience()
	h.rp = &httputil.ReverseProxy{
		Rewrite:        h.rewrite,
		Transport:      h.rt,
		ModifyResponse: h.modifyResponse,
		ErrorHandler:   h.errorHandler,
		BufferPool:     newBufferPool(),
		// Copying errors reach ErrorLog; route them to the structured log.
		ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("GET /readyz", h.readyz)
	if o.Config.MetricsAddr == "" {
		// With TOOLGUARD_METRICS_ADDR, the embedder serves MetricsHandler
		// there, and the API port does not expose them.
		h.mux.Handle("GET /metrics", h.MetricsHandler())
	}
	h.inspect = map[string]returnHandler{}
	h.posts = map[string]postRoute{}
	for _, f := range []format{chatFormat, responsesFormat, messagesFormat} {
		h.inspect[f.name] = h.inspectRoute(f)
		route := postRoute{pattern: "POST /v1" + f.path, handler: h.handle(h.inspect[f.name])}
		h.mux.HandleFunc(route.pattern, route.handler)
		h.posts["/v1"+f.path] = route
	}
	h.mux.HandleFunc("/v1/", h.handle(h.forward))
	h.mux.HandleFunc("/", h.handle(func(http.ResponseWriter, *http.Request) error { return notFound() }))
	h.ready.Store(true)
	return h, nil
}

// ServeHTTP checks the client's key, routes the request, and logs and
// counts it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serve.ServeHTTP(w, r) }

func (h *Handler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	info := &requestInfo{Context: r.Context(), start: time.Now(), id: requestID(r)}
	headerSetIn(w.Header(), requestIDHeader, &info.idHeader, info.id)
	h.metrics.inFlight.Inc()
	defer h.metrics.inFlight.Dec()
	info.rec = recorder{ResponseWriter: w, firstByte: h.metrics.firstByte, start: info.start}
	rec := &info.rec
	r = r.WithContext(info)
	defer func() {
		h.finish(rec, r, info)
		// Past its log line nothing of the request reads its body but
		// the readers of it that went upstream (see heldBody).
		info.body.drop()
	}()
	if len(h.keys) > 0 && !openPath(r.URL.Path) && !h.keys.allows(r) {
		h.serveError(rec, r, unauthorized())
		return
	}
	if ae := checkRequest(r); ae != nil {
		h.serveError(rec, r, ae)
		return
	}
	if route, ok := h.shortcut(r); ok {
		r.Pattern = route.pattern
		route.handler(rec, r)
		return
	}
	h.mux.ServeHTTP(rec, r)
}

// A postRoute is an inspected route: its pattern and its handler.
type postRoute struct {
	pattern string
	handler http.HandlerFunc
}

// shortcut is the inspected route the mux would take r to, found without
// the mux's search (2 k instructions a request): a POST to the route's
// exact path, as sent. Any other request is the mux's to route.
func (h *Handler) shortcut(r *http.Request) (postRoute, bool) {
	route, ok := h.posts[r.URL.Path]
	return route, ok && r.Method == http.MethodPost && r.URL.RawPath == ""
}

// A returnHandler returns its failure for serveError to write, rather than
// writing it: one place answers and drains every refusal.
type returnHandler func(w http.ResponseWriter, r *http.Request) error

// handle adapts f to http.HandlerFunc.
func (h *Handler) handle(f returnHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			h.serveError(w, r, err)
		}
	}
}

// serveError answers a request that toolguard refused or could not serve
// with err in the OpenAI error shape (see statusError), then drains what
// the client still sends of its body (see drainBody): after a 413, up to
// drainAfter413; otherwise up to what a body may be.
func (h *Handler) serveError(w http.ResponseWriter, r *http.Request, err error) {
	ae := statusError(r.Context(), err)
	writeError(w, r, ae)
	limit := min(h.cfg.MaxBodyBytes, drainAfter413)
	if ae.Status == http.StatusRequestEntityTooLarge {
		limit = drainAfter413
	}
	drainBody(w, r, limit)
}

// Metrics returns the registry behind GET /metrics, for embedders that serve
// it elsewhere or add their own collectors.
func (h *Handler) Metrics() *prometheus.Registry { return h.metrics.reg }

// MetricsHandler serves the Prometheus exposition of Metrics.
func (h *Handler) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(h.metrics.reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	})
}

// SetReady sets what /readyz answers; a server that is draining is not ready.
func (h *Handler) SetReady(ready bool) { h.ready.Store(ready) }

func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	headerSet(w.Header(), "Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok"}`)
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	headerSet(w.Header(), "Content-Type", "application/json")
	if !h.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"draining"}`)
		return
	}
	io.WriteString(w, `{"status":"ready"}`)
}

// forward passes a request through unchanged, but for a chat completion or
// a response under another prefix (see inspectedPath), which is inspected.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request) error {
	if f, ok := inspectedPath(r.URL.Path); ok && r.Method == http.MethodPost {
		return h.inspect[f.name](w, r)
	}
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	return h.proxy(w, r, body)
}

// proxy sends r upstream with body (already read) as its body. It fails
// only when no upstream slot is free; httputil's ErrorHandler answers the
// failures of the round trip itself.
func (h *Handler) proxy(w http.ResponseWriter, r *http.Request, body []byte) error {
	release, ok := h.slots.acquire()
	if !ok {
		return overloaded()
	}
	defer release()
	// The deadline lives in the request's record (serveHTTP's), where
	// modifyResponse finds it when the headers arrive.
	d := &requestInfoFrom(r.Context()).deadline
	ctx := d.begin(r.Context(), h.cfg.UpstreamHeaderTimeout, h.cfg.UpstreamTimeout)
	defer d.end()
	r = r.WithContext(ctx)
	// Trailers would reach the upstream after the body toolguard read: a
	// client could put its key, or anything else, there unseen.
	r.Trailer = nil
	if body == nil {
		h.rp.ServeHTTP(w, r)
		return nil
	}
	rc, err := upstreamBody(ctx, body)
	if err != nil {
		return err
	}
	r.Body = rc
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return upstreamBody(ctx, body) }
	h.rp.ServeHTTP(w, r)
	// The reverse proxy lets nothing read the body it sent once it
	// returns (it closes its own wrapper of it, which passes no Close
	// on): closing it here waits for a Read still under way and gives
	// up its hold. A transport that asked for the body again (GetBody)
	// closes what it was given.
	rc.Close()
	return nil
}

// readBody reads the whole request body, up to the configured limit. Bodies
// are read before they go upstream, not streamed: a body streamed through
// ReverseProxy to an upstream that answers before reading all of it can cut
// the response short (golang/go#40747), and chat bodies must be inspected
// anyway. It returns nil for a request without a body.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > h.cfg.MaxBodyBytes {
		return nil, tooLarge(h.cfg.MaxBodyBytes, nil)
	}
	body := http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
	var buf []byte
	info := requestInfoFrom(r.Context())
	if info != nil && info.body.buf == nil {
		buf = h.bodies.get(r.ContentLength)
	}
	var b []byte
	var err error
	if buf != nil {
		info.body.hold(&h.bodies, buf)
		b, err = readInto(buf, body, h.cfg.MaxBodyBytes)
	} else {
		b, err = readSized(body, r.ContentLength, h.cfg.MaxBodyBytes)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.Limit, err)
		}
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "body_read_error", Msg: "could not read the request body", Err: err}
	}
	// Read to its end, the body is closed: the server, finding it so,
	// does not look for more of it (a reader of its own and a read)
	// before it answers.
	r.Body.Close()
	return b, nil
}

// rewrite points the outgoing request at the configured upstream: the
// request's path below /v1 is appended to the upstream's base path, and its
// host is never taken from the request.
func (h *Handler) rewrite(pr *httputil.ProxyRequest) {
	path := pr.In.URL.Path
	rest, v1 := strings.CutPrefix(path, "/v1")
	out := pr.Out.URL
	out.Scheme = h.upstream.Scheme
	out.Host = h.upstream.Host
	if v1 && h.upstreamBase == "/v1" {
		// An upstream at an API's /v1, the usual one: the join would be
		// the path as it came, which is taken without making it again.
		out.Path = path
	} else {
		out.Path = h.upstreamBase + rest
	}
	out.RawPath = ""
	if pr.In.URL.RawPath != "" {
		out.RawPath = h.upstreamRawBase + strings.TrimPrefix(pr.In.URL.EscapedPath(), "/v1")
	}
	pr.Out.Host = ""
	if pr.In.GetBody != nil && pr.Out.Body != nil {
		// The body is one proxy gave (upstreamBody; a server's request has
		// no GetBody), not empty (an empty one the reverse proxy sends as
		// none, with a length of 0, not as an empty chunked body). The
		// reverse proxy hands the transport a wrapper of
		// it, which keeps the transport from closing a client's body and
		// from reading one after the handler returned. This body needs
		// neither: closing it gives up only its own hold, which proxy gives
		// up too, and a late read finds toolguard's own bytes (in memory) or
		// nothing (a pooled buffer's reader reads nothing once closed). The
		// wrapper is not one of the readers net/http knows to be in memory,
		// so the transport would send the request's headers in a write of
		// their own before the body (FlushHeaders): two writes for a request
		// that fits in one.
		pr.Out.Body = pr.In.Body
	}
	if len(h.keys) > 0 {
		// The client's key is toolguard's, not the upstream's: it never
		// leaves. The upstream gets TOOLGUARD_UPSTREAM_API_KEY, if set.
		headerDel(pr.Out.Header, "Authorization")
		headerDel(pr.Out.Header, "X-Api-Key")
	}
	if h.cfg.UpstreamAPIKey != "" {
		if anthropicPath(pr.In.URL.Path) {
			// The Messages API takes its key as x-api-key; the client's
			// anthropic-version and anthropic-beta headers pass as sent.
			headerDel(pr.Out.Header, "Authorization")
			headerSet(pr.Out.Header, "X-Api-Key", h.cfg.UpstreamAPIKey)
		} else {
			headerSet(pr.Out.Header, "Authorization", "Bearer "+h.cfg.UpstreamAPIKey)
		}
	}
	for k := range pr.Out.Header {
		if strings.HasPrefix(k, "X-Toolguard-") {
			delete(pr.Out.Header, k)
		}
	}
	if exchangeFrom(pr.In.Context()) != nil || len(h.secrets) > 0 {
		// Let the transport negotiate compression and decode it, so the
		// body can be inspected, or redacted if it is an error that echoes
		// a configured key (see sanitize); the client gets it uncompressed.
		headerDel(pr.Out.Header, "Accept-Encoding")
	}
}

func (h *Handler) modifyResponse(resp *http.Response) error {
	info := requestInfoFrom(resp.Request.Context())
	if info != nil {
		info.deadline.headersIn()
	}
	if err := h.sanitize(resp); err != nil {
		return err
	}
	if info == nil || info.inspected == nil {
		return nil
	}
	return info.inspected.inspect(resp)
}

func (h *Handler) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	ae := statusError(r.Context(), err)
	if ae.Status == statusClientClosed {
		return
	}
	if ae.Status == http.StatusBadGateway || ae.Status == http.StatusGatewayTimeout || ae.Code == "upstream_circuit_open" {
		h.metrics.upErrors.WithLabelValues(upstreamErrorKind(ae.Code)).Inc()
	}
	level := slog.LevelWarn
	if ae.Code == "upstream_circuit_open" {
		// The breaker logged when it opened; a line per refused request
		// would flood the log for the whole outage.
		level = slog.LevelDebug
	}
	h.log.Log(r.Context(), level, "upstream request failed", "method", r.Method, "path", r.URL.Path, "status", ae.Status, "error", ae.Error())
	writeError(w, r, ae)
}
