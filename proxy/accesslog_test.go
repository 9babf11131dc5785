package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// logLines parses a JSON log into its lines.
func logLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// TestLogsNeverHoldSecrets runs traffic through every path that logs,
// error paths included, with keys in play everywhere (one echoed back by the
// upstream in an error body), and checks that no log line holds a key or an
// Authorization value, while the lines hold the fields operators need.
func TestLogsNeverHoldSecrets(t *testing.T) {
	const (
		clientKey   = "tg-client-secret-1"
		wrongKey    = "tg-wrong-secret-2"
		upstreamKey = "sk-upstream-secret-3"
	)
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/models":
			w.Write([]byte(`{"object":"list","data":[]}`))
		case strings.Contains(r.URL.Path, "broken"):
			// The connection drops: a 502.
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		case !strings.Contains(string(up.requests()[n].Body), `"role":"tool"`):
			w.Write([]byte(toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"selector\": {\"css\": \"#login\"}}"`))))
		default:
			// The re-ask is refused, quoting the key it was sent.
			w.WriteHeader(401)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `"}}`))
		}
	}
	srv, logs := guard(t, up, func(c *policy.Config) {
		c.APIKeys = []string{clientKey}
		c.UpstreamAPIKey = upstreamKey
		c.MaxBodyBytes = 4096
	})
	auth := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }
	traffic := []struct {
		method, path, body string
		header             http.Header
		status             int
	}{
		{"GET", "/v1/models", "", auth(clientKey), 200},
		{"GET", "/v1/models", "", auth(wrongKey), 401},
		{"POST", "/v1/chat/completions", clickRequest(""), auth(wrongKey), 401},
		{"POST", "/v1/chat/completions", clickRequest(""), auth(clientKey), 400},
		{"POST", "/v1/chat/completions", clickRequest(`,"pad":"` + strings.Repeat("x", 5000) + `"`), auth(clientKey), 413},
		{"POST", "/v1/broken", "{}", auth(clientKey), 502},
		{"GET", "/healthz", "", auth(wrongKey), 200},
	}
	for _, tr := range traffic {
		resp, body := do(t, t.Context(), srv, tr.method, tr.path, tr.body, tr.header)
		if resp.StatusCode != tr.status {
			t.Fatalf("%s %s: status %d, want %d: %s", tr.method, tr.path, resp.StatusCode, tr.status, body)
		}
	}
	out := logs.String()
	for _, secret := range []string{clientKey, wrongKey, upstreamKey, "Bearer", "Authorization"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds %q:\n%s", secret, out)
		}
	}

	var requests, invalid int
	for _, l := range logLines(t, out) {
		switch l["msg"] {
		case "request":
			requests++
			for _, k := range []string{"method", "route", "path", "status", "bytes", "duration_ms"} {
				if _, ok := l[k]; !ok {
					t.Errorf("request line lacks %s: %v", k, l)
				}
			}
			if l["route"] == "/v1/chat/completions" && l["status"] == float64(400) {
				for _, k := range []string{"outcome", "attempts", "reasks", "repairs", "upstream_status", "upstream_ms", "overhead_ms", "gave_up"} {
					if _, ok := l[k]; !ok {
						t.Errorf("chat completion line lacks %s: %v", k, l)
					}
				}
				// The upstream's time is measured (timedTransport) and
				// within the request's.
				if up, _ := l["upstream_ms"].(float64); up <= 0 || up > l["duration_ms"].(float64) {
					t.Errorf("upstream_ms %v, duration_ms %v", l["upstream_ms"], l["duration_ms"])
				}
				if !strings.Contains(l["gave_up"].(string), "[redacted]") {
					t.Errorf("gave_up does not show the redaction: %v", l["gave_up"])
				}
			}
		case "invalid tool call":
			invalid++
			if l["tool"] != "click" || !strings.Contains(l["errors"].(string), "/selector") || l["arguments"] != `"{\"selector\": {\"css\": \"#login\"}}"` {
				t.Errorf("invalid call line: %v", l)
			}
		}
	}
	if requests != len(traffic) || invalid != 1 {
		t.Errorf("%d request lines, %d invalid call lines; want %d and 1:\n%s", requests, invalid, len(traffic), out)
	}
}

// TestLogArguments checks that TOOLGUARD_LOG_ARGUMENTS=false keeps argument
// values out of the log (the raw arguments, the values quoted in errors, and
// repaired values), and that they are there by default.
func TestLogArguments(t *testing.T) {
	const secretValue = "4111111111111111"
	tests := []struct {
		name    string
		log     bool
		present bool
	}{
		{"logged-by-default", true, true},
		{"kept-out-when-off", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t,
				// Repaired: a number where a string is due.
				reply{Body: toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"selector\": `+secretValue+`}"`))},
				// Invalid: an unknown key holding the value, another missing.
				reply{Body: toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"selector\": [`+secretValue+`]}"`))},
			)
			srv, logs := guard(t, up, func(c *policy.Config) { c.LogArguments = tt.log; c.MaxReasks = 0 })
			post(t, srv, "/v1/chat/completions", clickRequest(""))
			post(t, srv, "/v1/chat/completions", clickRequest(""))
			out := logs.String()
			if got := strings.Contains(out, secretValue); got != tt.present {
				t.Errorf("log holds the argument value: %v, want %v:\n%s", got, tt.present, out)
			}
			if !strings.Contains(out, `"msg":"invalid tool call"`) || !strings.Contains(out, "/selector") {
				t.Errorf("the invalid call's line lacks its tool or error path:\n%s", out)
			}
		})
	}
}
