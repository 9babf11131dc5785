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
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/messages"
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

// toFallback routes a turn's last re-ask to the fallback (its body already
// names the fallback's model, if the policy names one): to the fallback
// endpoint if there is one, through its breaker, and to the primary
// upstream otherwise.
func (ex *exchange) toFallback(attempt int, body []byte) (http.RoundTripper, *http.Request) {
	fb := ex.h.fallback
	rt, outreq, where := ex.h.rt, ex.outreq, upstreamPrimary
	if fb.url != nil {
		rt, where, outreq = fb.rt, upstreamFallback, fb.request(outreq, ex.f.path)
	}
	ex.fb = fallbackUse{attempt: attempt}
	fb.reasks.WithLabelValues(where).Inc()
	ex.h.log.InfoContext(ex.ctx, "re-asking the fallback", "attempt", attempt, "upstream", where,
		"model", gjson.GetBytes(body, "model").String())
	return rt, outreq
}

// request points a clone of the first attempt's outgoing request at the
// fallback endpoint's path (the format's route below its base URL), with the fallback's credentials:
// its own key if set; none if TOOLGUARD_UPSTREAM_API_KEY is set, so the
// upstream's key never goes to another host; the client's otherwise.
func (fb *fallback) request(outreq *http.Request, path string) *http.Request {
	req := outreq.Clone(outreq.Context())
	u := *fb.url
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	req.URL, req.Host = &u, ""
	if fb.key != "" || fb.primaryKey {
		headerDel(req.Header, "Authorization")
		headerDel(req.Header, "Api-Key")
		headerDel(req.Header, "X-Api-Key")
	}
	switch {
	case fb.key != "" && path == messages.Path:
		headerSet(req.Header, "X-Api-Key", fb.key)
	case fb.key != "":
		headerSet(req.Header, "Authorization", "Bearer "+fb.key)
	}
	return req
}

// fallbackModelOf names the model of the fallback's reply for a call it
// wrote, "" for any other call: a stream's chunks keep the first chunk's
// envelope, but these calls were written by another model.
func (ex *exchange) fallbackModelOf(c *ladder.Call) string {
	if ex.fb.attempt == 0 || c.Attempt != ex.fb.attempt {
		return ""
	}
	return ex.fb.model
}
