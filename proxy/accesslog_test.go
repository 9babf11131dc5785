package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
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

// heldLog holds each request's log line until the test releases it.
type heldLog struct{ release chan struct{} }

func (heldLog) Enabled(context.Context, slog.Level) bool { return true }
func (h heldLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		<-h.release
	}
	return nil
}
func (h heldLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h heldLog) WithGroup(string) slog.Handler      { return h }

// TestResponseArrivesBeforeItsLogLine holds each request's log line while
// the client reads its response: a response written in full reaches the
// client before toolguard's bookkeeping, not when the handler returns: a
// reply toolguard rewrote, one it passed on as the upstream sent it, and a
// forwarded route's each waited for the line before. An error toolguard
// wrote was sent already, before the rest of its request is drained.
func TestResponseArrivesBeforeItsLogLine(t *testing.T) {
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		args := `"{\"selector\":\"#a\"}"`
		if strings.Contains(string(up.requests()[n].Body), "mend") {
			args = `"{\"selector\": \"#a\",}"` // a trailing comma
		}
		reply := toolReply(`{"total_tokens":1}`, clickCall("call_1", args))
		if r.URL.Path == "/v1/models" {
			reply = `{"object":"list","data":[]}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}
	cfg := policy.Default()
	cfg.UpstreamURL = up.URL + "/v1"
	held := heldLog{release: make(chan struct{})}
	h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(held)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.CloseIdleConnections)
	// Lines still held (a failed case) go, so that the server can close.
	t.Cleanup(func() { close(held.release) })
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		outcome                  string
	}{
		{"mended call", "POST", "/v1/chat/completions", clickRequest(`,"user":"mend"`), 200, "repaired"},
		{"valid call", "POST", "/v1/chat/completions", clickRequest(""), 200, "valid"},
		{"forwarded route", "GET", "/v1/models", "", 200, ""},
		{"error toolguard wrote", "POST", "/v1/chat/completions", `{"model":`, 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Without the response sent first, the client would wait for
			// the line, which waits for the client: the deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, c.method, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("no response while its log line was held: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("the body did not arrive while its log line was held: %v", err)
			}
			if resp.StatusCode != c.status || resp.Header.Get("X-Toolguard-Outcome") != c.outcome || int64(len(body)) != resp.ContentLength {
				t.Fatalf("status %d, outcome %q, %d bytes of %d: %s", resp.StatusCode, resp.Header.Get("X-Toolguard-Outcome"), len(body), resp.ContentLength, body)
			}
			held.release <- struct{}{} // the line was waiting
		})
	}
}
