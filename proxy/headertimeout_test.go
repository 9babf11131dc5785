package proxy_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// TestHeaderTimeoutEndsWithTheHeaders sends the headers of the first
// request and of a re-ask at once and their bodies after
// TOOLGUARD_UPSTREAM_HEADER_TIMEOUT: the header timeout no longer counts
// once the headers are in, so both are served. A re-ask whose headers do
// not come in that time is cut off there, not at TOOLGUARD_UPSTREAM_TIMEOUT.
func TestHeaderTimeoutEndsWithTheHeaders(t *testing.T) {
	const headerTime = 250 * time.Millisecond
	broken := toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{}"`))
	valid := toolReply(`{"total_tokens":1}`, clickCall("call_2", `"{\"selector\":\"#a\"}"`))
	answer := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}
	slowBody := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-time.After(3 * headerTime) // the condition under test: time passes with the headers in
		w.Write([]byte(body))
	}
	config := func(c *policy.Config) {
		c.UpstreamHeaderTimeout = headerTime
		c.UpstreamTimeout = time.Minute
		c.Mode = policy.ModeReask
	}
	t.Run("first request", func(t *testing.T) {
		up := newUpstream(t)
		up.handle = func(w http.ResponseWriter, r *http.Request, n int) { slowBody(w, valid) }
		srv, _ := guard(t, up, config)
		resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
		if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "valid" {
			t.Errorf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
		}
	})
	t.Run("re-ask", func(t *testing.T) {
		up := newUpstream(t)
		up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				answer(w, broken)
				return
			}
			slowBody(w, valid)
		}
		srv, _ := guard(t, up, config)
		resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
		if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "reasked" {
			t.Errorf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
		}
	})
	t.Run("re-ask without headers", func(t *testing.T) {
		cut := make(chan struct{})
		up := newUpstream(t)
		up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				answer(w, broken)
				return
			}
			<-r.Context().Done()
			close(cut)
		}
		srv, _ := guard(t, up, config)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		do(t, ctx, srv, "POST", "/v1/chat/completions", clickRequest(""), nil)
		select {
		case <-cut:
		case <-ctx.Done():
			t.Errorf("the re-ask was not cut off")
		}
		if len(up.requests()) != 2 {
			t.Errorf("upstream got %d requests, want 2", len(up.requests()))
		}
	})
}
