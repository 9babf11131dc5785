package proxy

// The journey of an inspected request, top to bottom.
//
//  1. serveHTTP (handler.go): request id, the client's key, checkRequest
//     (paths, methods, upgrades), then the route: an inspected route's
//     handler is inspectRoute(format).
//  2. inspectRoute, below: read the body (bounded), the override headers,
//     readRequest (charset, encoding, the format's strict reading), mend
//     the history, open the format's request. Without tools declared, the
//     request is proxied as it is. Otherwise an exchange is made and parked
//     in the request's requestInfo, where httputil's hooks find it.
//  3. proxy (handler.go): a concurrency slot, the upstream timeout, then
//     httputil.ReverseProxy, whose hooks run in this order:
//     Rewrite (handler.go: the upstream's URL and credentials, never a
//     host of the request's), Transport (NewTransport, behind the timed
//     transport and the circuit breaker), ModifyResponse (modifyResponse:
//     sanitize, then inspect, below), and ErrorHandler when the round trip
//     or ModifyResponse fails. httputil then copies the (replaced) body,
//     flushing streams at once, with trailers and hop-by-hop headers
//     handled.
//  4. inspect: a JSON reply goes up the ladder (run: Turns, then
//     ladder.Exchange.Settle with the exchange as the Asker (asker.go),
//     then Write or the configured failure); a stream gets a wire.Stream
//     whose events the format handles, settling each choice's calls through
//     the same ladder inside Read.
//  5. After the response: logResult (accesslog.go) logs each call that
//     stayed invalid; finish logs the request's line and counts it.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

// exchange is one inspected request: the client's request, the upstream
// attempts made for it and what became of its tool calls (x).
type exchange struct {
	h   *Handler
	ctx context.Context // the client's request context
	f   format
	req request
	x   ladder.Exchange
	pol requestPolicy // the rules, narrowed by the request's headers
	// outreq is the first attempt's outgoing request, which re-asks clone.
	outreq *http.Request
	// out is the client's response header, where the outcome's headers
	// go (see setHeaders): set by inspectRoute before the exchange is
	// parked for the reverse proxy's hooks, the only way inspect is run.
	out http.Header
	// replies are the bodies of the re-asks' replies, in order.
	replies [][]byte
	model   string // the model the request named, for the metrics
	// repeats reads the reply, compared with the client's last.
	repeats wire.Repeats
	// starts reads a stream's first events, compared with the client's
	// last streams'.
	starts wire.Repeats
	fb     fallbackUse
	// tokens the upstream reported: input and output of the first attempt,
	// then of the re-asks.
	tokens [4]int64
	// outcome holds the values of the outcome's headers (see setHeaders),
	// and reply the client's reply body (see setBody): one allocation, the
	// exchange's, for them.
	outcome [3][1]string
	reply   replyBody
	// received is the size of the request's body as it came in (before
	// decoding), sent as it went upstream; reaskBytes what its re-asks
	// have sent (see reaskAllowance).
	received, sent, reaskBytes int64
}

// credentials are the headers a client's key may come in, which keep the
// caches' entries of one client apart from another's.
func credentials(r *http.Request) (authorization, apiKey, xAPIKey string) {
	return headerGet(r.Header, "Authorization"), headerGet(r.Header, "Api-Key"), headerGet(r.Header, "X-Api-Key")
}

// clientCaches are r's uses of the caches kept apart by format and
// credentials, every header a client's key may come in, so that no client
// learns what another sent: the history cache's verdicts (see
// ladder.HistoryCache); r's body compared with the last requests read in
// full for the same client and format (see wire.Templates), the replies to
// r with the client's last replies, and the first events of its streams
// with the client's last streams' (see wire.EventReader). One seeded hash
// of the format and the credentials keys them all.
func (h *Handler) clientCaches(r *http.Request, f format) (history *ladder.HistoryUse, requests, replies, starts wire.Repeats) {
	a, k, x := credentials(r)
	scope := h.replies.Scope(f.name, a, k, x)
	return h.history.Use(scope), h.requests.For(scope), h.replies.For(scope), h.starts.For(scope)
}

// inspectRoute is the handler of a route whose replies are inspected in
// format f, when the request declares function tools; other requests pass
// through.
func (h *Handler) inspectRoute(f format) returnHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := h.readBody(w, r)
		if err != nil {
			return err
		}
		received := int64(len(body))
		pol, perr := h.requestPolicyOf(r)
		if perr != nil {
			return perr
		}
		var req request
		var replies, starts wire.Repeats
		if pol.Rules("").Mode != policy.ModeOff {
			var turn *ladder.HistoryUse
			var requests wire.Repeats
			turn, requests, replies, starts = h.clientCaches(r, f)
			m, release, err := readRequest(r, body, h.cfg.MaxBodyBytes, h.decoded, f, turn.KnownPrefix(), h.decls, requests)
			defer release()
			if err != nil {
				return err
			}
			// m is needed until the request is opened, below; the
			// deferred call releases the m of the moment.
			defer func() { m.Release() }()
			body = m.Body()
			if pol.Rules("").Mode.Repairs() {
				mended, edits, err := f.mendHistory(m, turn)
				if err != nil {
					return writeFailed(err)
				}
				if len(edits) > 0 {
					// The patched body was read strictly before its
					// patches: its members are found with gjson.
					body, m = mended, wire.ReadMembers(mended, f.items)
					h.log.InfoContext(r.Context(), "mended tool calls in the request's history",
						"count", len(edits), "edits", editSummary(edits[:min(len(edits), 20)]))
				}
			}
			req = f.open(m, h.decls, pol.Rules(ladder.OutputTool).Mode != policy.ModeOff)
			if f.uninspectable != nil {
				if why := f.uninspectable(m, req != nil); why != "" {
					if !h.cfg.AllowClientOff {
						return notInspectable(why)
					}
					req = nil // the operator lets clients turn inspection off
				}
			}
		}
		if req == nil {
			return h.proxy(w, r, body)
		}
		if why := req.Stateful(); why != "" && pol.maxReasks != 0 {
			// Validation and local repair only: the failure, if calls stay
			// invalid, is the configured one.
			pol.maxReasks = 0
			h.log.InfoContext(r.Context(), "no re-asks for this request", "format", f.name, "reason", why)
		}
		ex := h.newExchange(r.Context(), f, req, pol)
		ex.received, ex.sent = received, int64(len(body))
		ex.repeats, ex.starts = replies, starts
		ex.out = w.Header()
		info := requestInfoFrom(r.Context())
		info.inspected = ex
		err = h.proxy(w, r, body)
		info.inspected = nil
		ex.logResult(r)
		return err
	}
}

// newExchange starts the exchange of a request that f's request req
// inspects, under the request's policy pol.
func (h *Handler) newExchange(ctx context.Context, f format, req request, pol requestPolicy) *exchange {
	ex := &exchange{h: h, ctx: ctx, f: f, req: req, pol: pol, model: req.Model()}
	ex.x = ladder.Exchange{
		Tools:   req.Tools(),
		Policy:  &ex.pol,
		Schemas: h.schemas,
		Work:    validate.NewBudget(ladder.RequestSteps),
		Log:     h.log,
		Ctx:     ctx,
	}
	return ex
}

// noteUsage adds the usage a reply reports to the exchange's token counts.
func (ex *exchange) noteUsage(body []byte, reask bool) {
	in, out, ok := ex.req.Usage(body)
	if !ok {
		return
	}
	i := 0
	if reask {
		i = 2
	}
	ex.tokens[i] += in
	ex.tokens[i+1] += out
}

// exchangeFrom returns the exchange that a request to the reverse proxy is
// part of, or nil for a request passed through uninspected.
func exchangeFrom(ctx context.Context) *exchange {
	if info := requestInfoFrom(ctx); info != nil {
		return info.inspected
	}
	return nil
}

// inspect is the ReverseProxy's ModifyResponse for an exchange: it runs the
// ladder on a successful JSON reply and replaces the body if it must, or
// puts a stream's body behind the format's handling of its events.
func (ex *exchange) inspect(resp *http.Response) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil
	}
	ex.outreq = resp.Request
	// A successful reply is judged by its body, not its label: a stream or a
	// completion served as text/plain must be checked all the same, or its
	// calls would reach the client unchecked.
	mt := headerGet(resp.Header, "Content-Type")
	if mt != "application/json" {
		// Parsing allocates a map of parameters; the plain label, the
		// usual one, is already its own media type.
		mt, _, _ = mime.ParseMediaType(mt)
	}
	if mt == "text/event-stream" || (mt != "application/json" && looksLikeSSE(resp)) {
		if mt != "text/event-stream" {
			// Label it for what it is, so clients parse it as a stream.
			headerSet(resp.Header, "Content-Type", "text/event-stream")
		}
		ex.stream(resp)
		return nil
	}
	raw, err := readLimited(resp.Body, resp.ContentLength, ex.h.cfg.MaxResponseBytes)
	resp.Body.Close()
	if err != nil {
		return ex.readFailure(resp.Request.Context(), err)
	}
	if err := ex.req.ReadReply(raw, ex.repeats); err != nil {
		return err
	}
	ex.noteUsage(raw, false)
	status, body, err := ex.run(raw)
	if err != nil {
		return err
	}
	if status != 0 && status != resp.StatusCode {
		resp.StatusCode = status
		resp.Status = strconv.Itoa(status) + " " + http.StatusText(status)
		headerSet(resp.Header, "Content-Type", "application/json")
		headerSet(resp.Header, "X-Should-Retry", "false")
	}
	setBody(resp, body, &ex.reply)
	// Straight to the client's header: the reverse proxy would copy them
	// there from resp's, each name made canonical again. An upstream's
	// X-Toolguard- headers are gone from resp's (see sanitize), so nothing
	// of the upstream's joins them.
	ex.setHeaders(ex.out)
	return nil
}

// run takes a JSON reply up the ladder: local checks and repair, then
// re-asks while calls stay invalid and the budget allows, then the
// configured failure. It returns the status and body for the client;
// status 0 keeps the upstream's.
func (ex *exchange) run(first []byte) (int, []byte, error) {
	x := &ex.x
	turns, err := ex.req.Turns(ex.ctx, x, first)
	if err != nil {
		if ex.ctx.Err() != nil {
			return 0, nil, ex.ctx.Err()
		}
		return 0, nil, malformedReply(err)
	}
	if len(turns) == 0 {
		x.Outcome = ladder.OutcomeNone
		return 0, first, nil
	}
	if err := x.Settle(ex.ctx, turns, ex); err != nil {
		return 0, nil, err
	}
	if !ladder.AnyInvalid(turns) {
		if x.Decide(false) == ladder.OutcomeValid {
			return 0, first, nil
		}
		return ex.write(first, turns)
	}
	x.Decide(true)
	switch x.Failure(turns...) {
	case policy.FailPassthrough:
		if len(ex.replies) == 0 {
			return 0, first, nil
		}
		body, err := ex.req.SumUsage(first, ex.replies)
		if err != nil {
			return 0, nil, writeFailed(err)
		}
		return 0, body, nil
	case policy.FailDrop:
		return ex.write(first, turns)
	default:
		ae := x.FailureError(turns, ex.redact)
		if ex.f.errorBody != nil {
			return http.StatusBadRequest, ex.f.errorBody(ae), nil
		}
		return http.StatusBadRequest, ae.Body(), nil
	}
}

// write is the format's Write for run: a failure to write is the client's
// 502.
func (ex *exchange) write(first []byte, turns []*ladder.Turn) (int, []byte, error) {
	body, err := ex.req.Write(first, turns, ex.replies)
	if err != nil {
		return 0, nil, writeFailed(err)
	}
	return 0, body, nil
}

// redact cleans a text for the client of every key toolguard knows of.
func (ex *exchange) redact(s string) string { return ex.h.redact(s, nil) }

// stream puts a streamed reply's body behind the format's handling of its
// events (see wire.Stream).
func (ex *exchange) stream(resp *http.Response) {
	events := ex.req.NewStream(ex.session(), ex.h.cfg.MaxResponseBytes)
	upstream := resp.Request.Context()
	s := wire.NewStream(resp.Body, events, ex.h.cfg.MaxResponseBytes, func(err error) *wire.Error {
		if ex.ctx.Err() != nil {
			return nil // the client is gone: nobody to tell
		}
		return statusError(upstream, err)
	})
	s.OnFail = func(ae *wire.Error) {
		if ae.Err != nil {
			ex.h.log.WarnContext(ex.ctx, "streamed reply failed", "format", ex.f.name, "code", ae.Code, "error", ae.Error())
		}
	}
	resp.Body = s
	resp.ContentLength = -1
	headerDel(resp.Header, "Content-Length")
}

// session is what a format's stream handling needs of the exchange.
func (ex *exchange) session() ladder.Session {
	return ladder.Session{
		Ctx:     ex.ctx,
		X:       &ex.x,
		Ask:     ex,
		Replies: func() [][]byte { return ex.replies },
		Log:     ex.h.log,
		Usage:   func(data []byte) { ex.noteUsage(data, false) },
		ModelOf: ex.fallbackModelOf,
		Redact:  ex.redact,
		Starts:  ex.starts,
	}
}

func (ex *exchange) setHeaders(h http.Header) {
	// In the exchange's room for the three values, where Set allocates a
	// slice each.
	headerSetIn(h, "X-Toolguard-Outcome", &ex.outcome[0], string(ex.x.Outcome))
	headerSetIn(h, "X-Toolguard-Reasks", &ex.outcome[1], strconv.Itoa(ex.x.Reasks))
	headerSetIn(h, "X-Toolguard-Repairs", &ex.outcome[2], strconv.Itoa(ex.x.Repairs()))
}

func (ex *exchange) readFailure(upstream context.Context, err error) error {
	if ex.ctx.Err() != nil {
		return err
	}
	if ae := statusError(upstream, err); ae.Status == http.StatusGatewayTimeout {
		// TOOLGUARD_UPSTREAM_TIMEOUT fired while the body was arriving.
		return ae
	}
	return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_response_unreadable",
		Msg: "the upstream's response could not be read in full (over TOOLGUARD_MAX_RESPONSE_BYTES, or cut short)", Err: err}
}

// replyBody is a reply's body read from memory: one allocation, where
// io.NopCloser(bytes.NewReader(b)) makes two.
type replyBody struct {
	bytes.Reader
	length [1]string // the Content-Length header's value (see setBody)
}

func (*replyBody) Close() error { return nil }

// looksLikeSSE peeks at the start of a body whose media type says neither
// JSON nor SSE, and keeps what it read for the next reader.
func looksLikeSSE(resp *http.Response) bool {
	br := bufio.NewReader(resp.Body)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	start, _ := br.Peek(5)
	return bytes.HasPrefix(start, []byte("data:")) || bytes.HasPrefix(start, []byte(":"))
}

// readLimited reads all of r, failing past limit bytes. size is the length
// the upstream declared (-1 if unknown), a hint that sizes the buffer once
// (see readSized).
func readLimited(r io.Reader, size, limit int64) ([]byte, error) {
	b, err := readSized(r, size, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("response larger than %d bytes", limit)
	}
	return b, nil
}

// setBody makes b resp's body, read through rb, which holds its
// Content-Length header's value too.
func setBody(resp *http.Response, b []byte, rb *replyBody) {
	rb.Reset(b)
	resp.Body = rb
	resp.ContentLength = int64(len(b))
	headerSetIn(resp.Header, "Content-Length", &rb.length, strconv.Itoa(len(b)))
	resp.TransferEncoding = nil
}
