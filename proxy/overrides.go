package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
)

// Request headers by which a client narrows its own request's handling.
const (
	headerMode      = "X-Toolguard-Mode"
	headerMaxReasks = "X-Toolguard-Max-Reasks"
	// headerResponseFormat narrows TOOLGUARD_RESPONSE_FORMAT.
	headerResponseFormat = "X-Toolguard-Response-Format"
)

// requestPolicy is the server's configuration narrowed by the request's
// headers: a request may ask for less work, never for more.
type requestPolicy struct {
	cfg *policy.Config
	// global is cfg.Rules(""), read once for the server: cfg does not
	// change, and every request asks for it several times.
	global    *policy.Rules
	mode      policy.Mode // a cap on every tool's mode; "" for none
	maxReasks int         // a cap on every tool's re-asks; -1 for none
	// output is a cap on the mode for the content under a JSON
	// response_format; "" for none.
	output policy.Mode
}

// requestPolicyOf reads the override headers. A value it does not accept is
// the client's mistake, answered with a 400 rather than ignored, so that a
// client relying on an override learns at once that it does not apply.
func (h *Handler) requestPolicyOf(r *http.Request) (requestPolicy, *apiError) {
	p := requestPolicy{cfg: &h.cfg, global: &h.global, maxReasks: -1}
	if v := strings.TrimSpace(headerGet(r.Header, headerMode)); v != "" {
		m := policy.Mode(strings.ToLower(v))
		switch {
		case !m.Valid():
			return p, badHeader(headerMode + ": " + strconv.Quote(v) + " is not one of repair, reask, validate, off")
		case m == policy.ModeOff && !h.cfg.AllowClientOff && h.cfg.Mode != policy.ModeOff:
			return p, badHeader(headerMode + ": off is not allowed by this server (TOOLGUARD_ALLOW_CLIENT_OFF)")
		}
		p.mode = m
	}
	if v := strings.TrimSpace(headerGet(r.Header, headerResponseFormat)); v != "" {
		m := policy.Mode(strings.ToLower(v))
		switch {
		case !m.Valid():
			return p, badHeader(headerResponseFormat + ": " + strconv.Quote(v) + " is not one of repair, reask, validate, off")
		case m == policy.ModeOff && !h.cfg.AllowClientOff && h.cfg.ResponseFormat != policy.ModeOff:
			return p, badHeader(headerResponseFormat + ": off is not allowed by this server (TOOLGUARD_ALLOW_CLIENT_OFF)")
		}
		p.output = m
	}
	if v := strings.TrimSpace(headerGet(r.Header, headerMaxReasks)); v != "" {
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

// Rules returns the settings for a tool's calls ("" for the global ones;
// ladder.OutputTool for the content under a JSON response_format, whose
// mode is TOOLGUARD_RESPONSE_FORMAT and whose failure is never a drop:
// content is not a call that can be left out).
func (p *requestPolicy) Rules(tool string) policy.Rules {
	var r policy.Rules
	switch tool {
	case "":
		r = *p.global
	case ladder.OutputTool:
		r = *p.global
		r.Mode = r.Mode.Cap(p.cfg.ResponseFormat)
		if p.output != "" {
			r.Mode = r.Mode.Cap(p.output)
		}
		if r.OnFailure == policy.FailDrop {
			r.OnFailure = policy.FailError
		}
	default:
		r = p.cfg.Rules(tool)
	}
	p.capped(&r)
	return r
}

// capped narrows r by the request's headers.
func (p *requestPolicy) capped(r *policy.Rules) {
	if p.mode != "" {
		r.Mode = r.Mode.Cap(p.mode)
	}
	if p.maxReasks >= 0 {
		r.MaxReasks = min(r.MaxReasks, p.maxReasks)
	}
}

// notInspectable refuses a request whose reply toolguard could not inspect
// (why says what it asks for), where the operator does not let clients turn
// inspection off: passing it would do just that.
func notInspectable(why string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_not_inspectable",
		Msg: "toolguard cannot inspect this request's reply: " + why + ". Send it without that, or ask the operator " +
			"to let clients turn inspection off (TOOLGUARD_ALLOW_CLIENT_OFF)"}
}
