package policy

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// MaxBreakerFailures bounds TOOLGUARD_BREAKER_FAILURES: a breaker that needs
// more failures in a row than this never opens in practice.
const MaxBreakerFailures = 1000

// baseURL reports whether s is an absolute http(s) URL without query or
// fragment: a base that request paths are appended to.
func baseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// FallbackConfigured reports whether the last re-ask may go to a fallback:
// another model, another endpoint, or both.
func (c Config) FallbackConfigured() bool {
	return c.FallbackModel != "" || c.FallbackUpstreamURL != ""
}

// resilienceProblems checks the fallback and circuit-breaker settings.
func (c Config) resilienceProblems() []problem {
	var errs []problem
	bad := func(name, format string, a ...any) {
		errs = append(errs, problem{name, fmt.Sprintf(format, a...)})
	}
	if c.FallbackModel != strings.TrimSpace(c.FallbackModel) {
		bad("TOOLGUARD_FALLBACK_MODEL", "%q has white space around the model name", c.FallbackModel)
	}
	if c.FallbackUpstreamURL != "" && !baseURL(c.FallbackUpstreamURL) {
		bad("TOOLGUARD_FALLBACK_UPSTREAM_URL", "%q is not an absolute http(s) URL without query or fragment (for example https://api.openai.com/v1)", c.FallbackUpstreamURL)
	}
	switch k := c.FallbackUpstreamAPIKey; {
	case k != "" && c.FallbackUpstreamURL == "":
		// The key would have nowhere to go; saying so beats ignoring it.
		bad("TOOLGUARD_FALLBACK_UPSTREAM_API_KEY", "is set but TOOLGUARD_FALLBACK_UPSTREAM_URL is not (set it, to TOOLGUARD_UPSTREAM_URL if the endpoint is the same)")
	case strings.ContainsAny(k, " \t\r\n"):
		// The value itself is a secret: never echo it.
		bad("TOOLGUARD_FALLBACK_UPSTREAM_API_KEY", "holds white space")
	}
	if c.BreakerFailures < 0 || c.BreakerFailures > MaxBreakerFailures {
		bad("TOOLGUARD_BREAKER_FAILURES", "%d is out of range: 0 (off) to %d", c.BreakerFailures, MaxBreakerFailures)
	}
	if c.BreakerCooldown <= 0 {
		bad("TOOLGUARD_BREAKER_COOLDOWN", "%v must be a positive duration (for example 30s)", c.BreakerCooldown)
	} else if c.BreakerCooldown < time.Second {
		// Retry-After counts whole seconds; a shorter cool-down would tell
		// clients to wait longer than the breaker does.
		bad("TOOLGUARD_BREAKER_COOLDOWN", "%v is shorter than 1s", c.BreakerCooldown)
	}
	return errs
}

// setFallback parses the fallback settings of a tool policy:
// fallback=on|off and fallback_model=<model>.
func (tp *ToolPolicy) setFallback(k, v string) error {
	if k == "fallback_model" {
		tp.FallbackModel = v
		return nil
	}
	var on bool
	switch strings.ToLower(v) {
	case "on", "true":
		on = true
	case "off", "false":
	default:
		return fmt.Errorf("fallback %q is not on or off", v)
	}
	tp.Fallback = &on
	return nil
}

// fallbackText renders the fallback settings in the TOOLGUARD_TOOL_POLICIES
// format.
func (tp ToolPolicy) fallbackText() []string {
	var kv []string
	if tp.Fallback != nil {
		kv = append(kv, "fallback="+map[bool]string{true: "on", false: "off"}[*tp.Fallback])
	}
	if tp.FallbackModel != "" {
		kv = append(kv, "fallback_model="+tp.FallbackModel)
	}
	return kv
}

// fallback applies the tool's fallback settings over the global ones
// (enabled, model): fallback=off turns it off, a fallback_model turns it on
// with that model, even where no global fallback is configured.
func (tp ToolPolicy) fallback(enabled bool, model string) (bool, string) {
	if tp.FallbackModel != "" {
		enabled, model = true, tp.FallbackModel
	}
	if tp.Fallback != nil && !*tp.Fallback {
		enabled = false
	}
	return enabled, model
}
