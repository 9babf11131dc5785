package proxy_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"log/slog"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// TestUpstreamErrorsSayWhatFailed: a name that does not resolve, a port
// where nothing listens, an untrusted certificate and a stall each give
// their own code and message, and their own metric label, without quoting
// an address or a secret.
func TestUpstreamErrorsSayWhatFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()
	tlsUp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsUp.Close()
	stall := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stall }))
	defer stalled.Close()
	defer close(stall)
	tests := []struct {
		name, url, code, kind string
		status                int
	}{
		// An empty label: the resolver refuses the name without asking
		// the network.
		{name: "dns", url: "http://toolguard..invalid/v1", code: "upstream_dns_error", kind: "dns", status: 502},
		{name: "refused", url: "http://" + closedPort + "/v1", code: "upstream_connection_refused", kind: "connection_refused", status: 502},
		{name: "tls", url: tlsUp.URL + "/v1", code: "upstream_tls_error", kind: "tls", status: 502},
		{name: "timeout", url: stalled.URL + "/v1", code: "upstream_timeout", kind: "timeout", status: 504},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := policy.Default()
			cfg.UpstreamURL = tt.url
			cfg.UpstreamHeaderTimeout = 200 * time.Millisecond
			cfg.UpstreamAPIKey = "sk-secret-upstream-key"
			cfg.BreakerFailures = 0
			h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer h.CloseIdleConnections()
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if resp.StatusCode != tt.status || mustJSON(t, body).Get("error.code").String() != tt.code {
				t.Fatalf("status %d body %s, want %d %s", resp.StatusCode, body, tt.status, tt.code)
			}
			for _, leak := range []string{"sk-secret", "127.0.0.1", "invalid"} {
				if strings.Contains(string(body), leak) {
					t.Errorf("the error quotes %q: %s", leak, body)
				}
			}
			mresp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			m, _ := io.ReadAll(mresp.Body)
			mresp.Body.Close()
			if !strings.Contains(string(m), `toolguard_upstream_errors_total{kind="`+tt.kind+`"} 1`) {
				t.Errorf("no upstream error counted as %s", tt.kind)
			}
		})
	}
}
