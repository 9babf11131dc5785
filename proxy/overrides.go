package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
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

// rules returns the settings for a tool's calls ("" for the global ones).
func (p requestPolicy) rules(tool string) policy.Rules {
	r := p.cfg.Rules(tool)
	if p.mode != "" {
		r.Mode = r.Mode.Cap(p.mode)
	}
	if p.maxReasks >= 0 {
		r.MaxReasks = min(r.MaxReasks, p.maxReasks)
	}
	return r
}

// rulesOf returns the settings for one call: its tool's, or the global ones
// for a call naming no declared tool.
func (ex *exchange) rulesOf(c *call) policy.Rules {
	if c.tool == nil {
		return ex.pol.rules("")
	}
	return ex.pol.rules(c.tool.name)
}

// failingRules are the rules of the choices' invalid calls, one per call,
// for the decisions of policy (decide.go).
func (ex *exchange) failingRules(choices ...*choice) []policy.Rules {
	var out []policy.Rules
	for _, ch := range choices {
		for _, c := range ch.calls {
			if !c.valid() {
				out = append(out, ex.rulesOf(c))
			}
		}
	}
	return out
}

// reaskBudget is how many re-asks the choice's invalid calls allow in all
// (policy.ReaskBudget).
func (ex *exchange) reaskBudget(ch *choice) int { return policy.ReaskBudget(ex.failingRules(ch)) }

// failurePolicy is what happens when calls stay invalid
// (policy.FailureBehaviour).
func (ex *exchange) failurePolicy(choices []*choice) policy.OnFailure {
	return policy.FailureBehaviour(ex.failingRules(choices...))
}

// forceToolChoice sets tool_choice to the failing tool on the last re-ask
// of a choice whose invalid calls all name one declared tool, when that
// tool's policy asks for it: servers with grammar-constrained decoding then
// guarantee the syntax of its call. The body is returned as it was otherwise.
func (ex *exchange) forceToolChoice(body []byte, ch *choice) ([]byte, error) {
	var tools []string
	for _, c := range ch.calls {
		if c.valid() {
			continue
		}
		name := ""
		if c.tool != nil {
			name = c.tool.name
		}
		tools = append(tools, name)
	}
	var rules policy.Rules
	if len(tools) > 0 && tools[0] != "" {
		rules = ex.pol.rules(tools[0])
	}
	only, force := policy.ForceToolChoice(tools, rules)
	if !force || ex.reasks != ex.reaskBudget(ch) {
		return body, nil
	}
	name := wire.Quote(only)
	if ch.legacy || (ex.tools.legacy && !gjson.GetBytes(body, "tools").Exists()) {
		return wire.Patch(body, "function_call", `{"name":`+name+`}`)
	}
	return wire.Patch(body, "tool_choice", `{"type":"function","function":{"name":`+name+`}}`)
}
