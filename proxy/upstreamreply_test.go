package proxy_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// TestForgedOutcomeHeadersAreRemoved: an upstream's X-Toolguard-* headers
// never reach the client, on any route, streamed or not, failed or not.
func TestForgedOutcomeHeadersAreRemoved(t *testing.T) {
	forged := http.Header{"X-Toolguard-Outcome": {"valid"}, "X-Toolguard-Reasks": {"0"}, "X-Toolguard-Custom": {"x"}}
	stream := chunk(callStart(0, 0, "c1", "click")) + chunk(argsDelta(0, 0, `{}`)) + chunk(finish(0, "tool_calls")) + done
	withType := func(ct string) http.Header {
		h := forged.Clone()
		h.Set("Content-Type", ct)
		return h
	}
	tests := []struct {
		name, path, body string
		up               reply
		wantOutcome      string // "" when toolguard sets none
	}{
		{name: "plain route", path: "/v1/models", up: reply{Header: forged, Body: `{"data":[]}`}},
		{name: "upstream error", path: "/v1/chat/completions", body: clickRequest(""),
			up: reply{Status: 500, Header: forged, Body: `{"error":{"message":"boom"}}`}},
		{name: "tools-free chat", path: "/v1/chat/completions", body: `{"model":"m","messages":[]}`,
			up: reply{Header: forged, Body: toolReply(`{}`, clickCall("c1", `"{}"`))}},
		{name: "stream with an invalid call", path: "/v1/chat/completions", body: clickRequest(`,"stream":true`),
			up: reply{Header: withType("text/event-stream"), Body: stream}},
		{name: "inspected, failed", path: "/v1/chat/completions", body: clickRequest(""),
			up: reply{Header: forged, Body: toolReply(`{}`, clickCall("c1", `"{}"`))}, wantOutcome: "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.up)
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
			method := http.MethodGet
			if tt.body != "" {
				method = http.MethodPost
			}
			resp, body := do(t, t.Context(), srv, method, tt.path, tt.body, nil)
			if got := header(resp, "X-Toolguard-Outcome"); got != tt.wantOutcome {
				t.Errorf("X-Toolguard-Outcome %q, want %q (body %s)", got, tt.wantOutcome, body)
			}
			for _, k := range []string{"X-Toolguard-Outcome", "X-Toolguard-Reasks"} {
				if vs := resp.Header.Values(k); len(vs) > 1 {
					t.Errorf("%s sent %d times: %q", k, len(vs), vs)
				}
			}
			if got := header(resp, "X-Toolguard-Custom"); got != "" {
				t.Errorf("X-Toolguard-Custom %q reached the client", got)
			}
			if strings.Contains(string(body), "outcome=valid") {
				t.Errorf("the stream vouches for an invalid call: %s", body)
			}
		})
	}
}

// TestUpstreamKeyIsRedactedFromReplies: an upstream that echoes the key it
// was sent, in an error body or a header, does not show it to the client.
func TestUpstreamKeyIsRedactedFromReplies(t *testing.T) {
	const key = "sk-upstream-secret-0123456789"
	tests := []struct {
		name    string
		gzipped bool
	}{{name: "identity"}, {name: "client accepts gzip", gzipped: true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("X-Debug", "auth="+r.Header.Get("Authorization"))
				w.Header().Set("Content-Type", "application/json")
				// The key twice, the second time at the very end.
				b := []byte(`{"error":{"message":"Incorrect API key provided: ` + key + `.","code":"invalid_api_key"},"k":"` + key + `"}`)
				if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
					w.Header().Set("Content-Encoding", "gzip")
					var z bytes.Buffer
					zw := gzip.NewWriter(&z)
					zw.Write(b)
					zw.Close()
					b = z.Bytes()
				}
				w.WriteHeader(http.StatusUnauthorized)
				w.Write(b)
			}
			srv, _ := guard(t, up, func(c *policy.Config) { c.UpstreamAPIKey = key })
			h := http.Header{}
			if tt.gzipped {
				// The client's transport would decode gzip itself; ask
				// explicitly so that the raw answer is seen.
				h.Set("Accept-Encoding", "gzip")
			}
			for _, path := range []string{"/v1/models", "/v1/chat/completions"} {
				resp, body := do(t, t.Context(), srv, http.MethodPost, path, clickRequest(""), h)
				if resp.Header.Get("Content-Encoding") == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					body, _ = io.ReadAll(zr)
				}
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want the upstream's 401", path, resp.StatusCode)
				}
				if strings.Contains(string(body), key) || strings.Contains(resp.Header.Get("X-Debug"), key) {
					t.Fatalf("%s: the key reached the client: %s %v", path, body, resp.Header)
				}
				if !strings.Contains(string(body), "Incorrect API key provided: [redacted].") {
					t.Errorf("%s: the error body lost its message: %s", path, body)
				}
			}
		})
	}
}

// TestRedirectsDoNotRevealTheUpstream: a Location on the upstream's host is
// mapped to toolguard's /v1 path or dropped; elsewhere it is the upstream's
// to give.
func TestRedirectsDoNotRevealTheUpstream(t *testing.T) {
	up := newUpstream(t)
	var loc atomic.Value // a handler may run on a connection of its own
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Location", strings.ReplaceAll(loc.Load().(string), "UPSTREAM", up.URL))
		w.WriteHeader(http.StatusFound)
	}
	srv, _ := guard(t, up, nil)
	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tests := []struct{ loc, want string }{
		{loc: "UPSTREAM/v1/files/abc?x=1", want: "/v1/files/abc?x=1"},
		{loc: "/v1/files/abc", want: "/v1/files/abc"},
		{loc: "UPSTREAM/internal/admin", want: ""},
		{loc: "/internal/admin", want: ""},
		{loc: "https://cdn.example.com/f.jsonl", want: "https://cdn.example.com/f.jsonl"},
		{loc: "abc", want: "abc"},
	}
	for _, tt := range tests {
		loc.Store(tt.loc)
		resp, err := client.Get(srv.URL + "/v1/files/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Location"); got != tt.want {
			t.Errorf("Location %q became %q, want %q", tt.loc, got, tt.want)
		}
	}
}
