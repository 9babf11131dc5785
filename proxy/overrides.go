package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/policy"
)

// Request headers by which a client narrows its own request's handling.
const (
	headerMode      = "X-Toolguard-Mode"
	headerMaxReasks = "X-Toolguard-Max-Reasks"
)

// requestPolicy is the server's configuration narrowed by the request's
// headers: a request may ask for less work, never for more.
type requestPolicy struct {
	cfg       *policy.Config
	mode      policy.Mode // a cap on every tool's mode; "" for none
	maxReasks int         // a cap on every tool's re-asks; -1 for none
}

// requestPolicyOf reads the override headers. A value it does not accept is
// the client's mistake, answered with a 400 rather than ignored, so that a
// client relying on an override learns at once that it does not apply.
func (h *Handler) requestPolicyOf(r *http.Request) (requestPolicy, *apiError) {
	p := requestPolicy{cfg: &h.cfg, maxReasks: -1}
	if v := strings.TrimSpace(r.Header.Get(headerMode)); v != "" {
		m := policy.Mode(strings.ToLower(v))
		switch {
		case !m.Valid():
			return p, badHeader(headerMode + ": " + strconv.Quote(v) + " is not one of repair, reask, validate, off")
		case m == policy.ModeOff && !h.cfg.AllowClientOff && h.cfg.Mode != policy.ModeOff:
			return p, badHeader(headerMode + ": off is not allowed by this server (TOOLGUARD_ALLOW_CLIENT_OFF)")
		}
		p.mode = m
	}
	if v := strings.TrimSpace(r.Header.Get(headerMaxReasks)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, badHeader(headerMaxReasks + ": " + strconv.Quote(v) + " is not a whole number")
		}
		p.maxReasks = n
	}
	return p, nil
}

func badHeader(msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_toolguard_header", Msg: msg}
}

// Rules returns the settings for a tool's calls ("" for the global ones).
func (p *requestPolicy) Rules(tool string) policy.Rules {
	r := p.cfg.Rules(tool)
	if p.mode != "" {
		r.Mode = r.Mode.Cap(p.mode)
	}
	if p.maxReasks >= 0 {
		r.MaxReasks = min(r.MaxReasks, p.maxReasks)
	}
	return r
}
