package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// fallback is where the last re-ask goes when a fallback is configured.
type fallback struct {
	// url and rt reach the fallback endpoint, behind a breaker of its own;
	// nil when the fallback only changes the model.
	url *url.URL
	rt  http.RoundTripper
	// key, if set, is the Bearer token for the fallback endpoint.
	key string
	// primaryKey set means the client's credentials never go to the
	// fallback endpoint: TOOLGUARD_UPSTREAM_API_KEY replaced them upstream.
	primaryKey bool
	reasks     *prometheus.CounterVec // upstream
}

// fallbackUse records the exchange's fallback re-ask, if any.
type fallbackUse struct {
	attempt int    // the re-ask that went to the fallback; 0 for none
	model   string // the "model" of its reply, as the upstream gave it
}

// initResilience puts the circuit breakers in front of the upstreams and
// prepares the fallback. It wraps h.rt, so it runs before the ReverseProxy
// is built on it; re-asks use h.rt too, so they count as upstream requests.
func (h *Handler) initResilience() {
	cfg := h.cfg
	fb := &fallback{
		key:        cfg.FallbackUpstreamAPIKey,
		primaryKey: cfg.UpstreamAPIKey != "",
		reasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_fallback_reasks_total",
			Help: "Last re-asks sent to the fallback, by endpoint (primary when only the model changes, fallback for TOOLGUARD_FALLBACK_UPSTREAM_URL).",
		}, []string{"upstream"}),
	}
	h.metrics.reg.MustRegister(fb.reasks)
	var bm *breakerMetrics
	if cfg.BreakerFailures > 0 {
		bm = newBreakerMetrics(h.metrics.reg)
	}
	if cfg.FallbackUpstreamURL != "" {
		// Validate has checked it.
		fb.url, _ = url.Parse(cfg.FallbackUpstreamURL)
		fb.rt = h.rt
		if bm != nil {
			fb.rt = newBreaker(upstreamFallback, h.rt, cfg.BreakerFailures, cfg.BreakerCooldown, bm, h.logBreaker)
		}
	}
	if bm != nil {
		h.rt = newBreaker(upstreamPrimary, h.rt, cfg.BreakerFailures, cfg.BreakerCooldown, bm, h.logBreaker)
	}
	h.fallback = fb
}

// logBreaker logs a breaker's change of state: opening is a warning, the
// rest is news.
func (h *Handler) logBreaker(name string, from, to gobreaker.State) {
	level := slog.LevelInfo
	if to == gobreaker.StateOpen {
		level = slog.LevelWarn
	}
	h.log.Log(context.Background(), level, "circuit breaker state changed",
		"upstream", name, "from", from.String(), "to", to.String(),
		"failures", h.cfg.BreakerFailures, "cooldown", h.cfg.BreakerCooldown.String())
}

// fallback routes the last re-ask of a choice to the fallback, when one is
// configured and every tool whose calls are still invalid allows it: the
// body names the fallback model, and the request goes to the fallback
// endpoint if there is one. Anything else is returned as it was, with the
// primary upstream's transport.
func (ex *exchange) fallback(outreq *http.Request, body []byte, ch *choice) (http.RoundTripper, *http.Request, []byte, error) {
	fb := ex.h.fallback
	model, ok := ex.fallbackModel(ch)
	if !ok || ex.reasks != ex.reaskBudget(ch) {
		return ex.h.rt, outreq, body, nil
	}
	rt, where := ex.h.rt, upstreamPrimary
	if model != "" {
		var err error
		if body, err = wire.Patch(body, "model", wire.Quote(model)); err != nil {
			return nil, nil, nil, err
		}
	}
	if fb.url != nil {
		rt, where, outreq = fb.rt, upstreamFallback, fb.request(outreq)
	}
	ex.fb = fallbackUse{attempt: ex.reasks}
	fb.reasks.WithLabelValues(where).Inc()
	ex.h.log.InfoContext(ex.ctx, "re-asking the fallback", "attempt", ex.reasks, "upstream", where,
		"model", gjson.GetBytes(body, "model").String())
	return rt, outreq, body, nil
}

// fallbackModel says whether the choice's last re-ask may go to the
// fallback, and with which model ("" keeps the request's)
// (policy.FallbackModel).
func (ex *exchange) fallbackModel(ch *choice) (string, bool) {
	return policy.FallbackModel(ex.failingRules(ch))
}

// request points a clone of the first attempt's outgoing request at the
// fallback endpoint's /chat/completions, with the fallback's credentials:
// its own key if set; none if TOOLGUARD_UPSTREAM_API_KEY is set, so the
// upstream's key never goes to another host; the client's otherwise.
func (fb *fallback) request(outreq *http.Request) *http.Request {
	req := outreq.Clone(outreq.Context())
	u := *fb.url
	u.Path = strings.TrimSuffix(u.Path, "/") + "/chat/completions"
	u.RawPath = ""
	req.URL, req.Host = &u, ""
	if fb.key != "" || fb.primaryKey {
		for _, k := range []string{"Authorization", "Api-Key", "X-Api-Key"} {
			req.Header.Del(k)
		}
	}
	if fb.key != "" {
		req.Header.Set("Authorization", "Bearer "+fb.key)
	}
	return req
}

// noteReply keeps the model that answered the fallback's re-ask.
func (ex *exchange) noteReply(attempt int, reply []byte) {
	if attempt == ex.fb.attempt {
		ex.fb.model = gjson.GetBytes(reply, "model").String()
	}
}

// fallbackChunk gives a released chunk that carries a call of the
// fallback's reply the fallback's model: the stream's other chunks keep the
// first chunk's envelope, but these were written by another model.
func (ex *exchange) fallbackChunk(chunk []byte, c *call) ([]byte, error) {
	if ex.fb.attempt == 0 || c.attempt != ex.fb.attempt || ex.fb.model == "" {
		return chunk, nil
	}
	return wire.Patch(chunk, "model", wire.Quote(ex.fb.model))
}
