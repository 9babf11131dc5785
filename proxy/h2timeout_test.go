package proxy_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// TestUpstreamTimeoutsOverHTTP2 lets each upstream timeout pass with an
// upstream that speaks HTTP/2, as the providers' endpoints do. Its
// transport reports a request it stopped with the context's error, not
// the context's cause: the client must still get a 504 upstream_timeout
// (or a stream's error event of that code), and the circuit breaker must
// count a timeout before the body as the upstream's failure, not as a
// client that left.
func TestUpstreamTimeoutsOverHTTP2(t *testing.T) {
	const (
		stallMidBody = "stall-mid-body" // headers and a part of a JSON body, then nothing
		stallReask   = "stall-reask"    // an invalid call, then no headers for the re-ask
	)
	var (
		mu     sync.Mutex
		protos []int
	)
	faults := &faulty.Server{}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.ProtoMajor)
		mu.Unlock()
		if r.Header.Get("X-Fault") == stallReask {
			if b, _ := io.ReadAll(r.Body); bytes.Contains(b, []byte(`"role":"tool"`)) {
				<-r.Context().Done() // the re-ask: no headers
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{}"`)))
			return
		}
		if r.Header.Get("X-Fault") == stallMidBody {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-1","choices":[`)
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return
		}
		faults.ServeHTTP(w, r)
	}))
	up.EnableHTTP2 = true
	up.StartTLS()
	t.Cleanup(up.Close)
	// start serves toolguard in front of up, over up's HTTP/2 transport,
	// its breaker opened by one failure.
	start := func(t *testing.T, change func(*policy.Config)) *httptest.Server {
		cfg := policy.Default()
		cfg.UpstreamURL = up.URL + "/v1"
		cfg.BreakerFailures = 1
		change(&cfg)
		h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Transport: up.Client().Transport})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	tests := []struct {
		name          string
		fault         faulty.Fault
		stream        bool
		header, total time.Duration
	}{
		{"headers", faulty.StallBeforeHeaders, false, 200 * time.Millisecond, time.Minute},
		{"whole-before-headers", faulty.StallBeforeHeaders, false, time.Minute, 200 * time.Millisecond},
		{"whole-mid-body", stallMidBody, false, 200 * time.Millisecond, 500 * time.Millisecond},
		{"whole-between-events", faulty.StallBetweenEvents, true, 200 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, func(c *policy.Config) { c.UpstreamHeaderTimeout, c.UpstreamTimeout = tt.header, tt.total })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, body := do(t, ctx, srv, "POST", "/v1/chat/completions", faultRequest(tt.stream), http.Header{"X-Fault": {string(tt.fault)}})
			code := gjson.GetBytes(body, "error.code").String()
			if tt.stream {
				code = gjson.Get(assemble(t, body).Error, "code").String()
			}
			if (resp.StatusCode != 504 && !tt.stream) || code != "upstream_timeout" {
				t.Errorf("status %d, error code %q, want upstream_timeout: %.300s", resp.StatusCode, code, body)
			}
			if tt.stream {
				return // a stream is judged at its first bytes (see judgedBody)
			}
			resp, body = do(t, ctx, srv, "POST", "/v1/chat/completions", faultRequest(false), nil)
			if resp.StatusCode != 503 || gjson.GetBytes(body, "error.code").String() != "upstream_circuit_open" {
				t.Errorf("after the timeout: status %d, want the open breaker's 503: %.300s", resp.StatusCode, body)
			}
		})
	}
	t.Run("re-ask-headers", func(t *testing.T) {
		srv := start(t, func(c *policy.Config) {
			c.UpstreamHeaderTimeout, c.UpstreamTimeout = 200*time.Millisecond, time.Minute
			c.Mode, c.MaxReasks, c.OnFailure = policy.ModeReask, 1, policy.FailError
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := faultRequest(false)
		_, body := do(t, ctx, srv, "POST", "/v1/chat/completions", req, http.Header{"X-Fault": {stallReask}})
		if msg := gjson.GetBytes(body, "error.message").String(); !strings.Contains(msg, "TOOLGUARD_UPSTREAM_HEADER_TIMEOUT") {
			t.Errorf("the client is not told the re-ask timed out: %.400s", body)
		}
		resp, body := do(t, ctx, srv, "POST", "/v1/chat/completions", req, nil)
		if resp.StatusCode != 503 || gjson.GetBytes(body, "error.code").String() != "upstream_circuit_open" {
			t.Errorf("after the re-ask's timeout: status %d, want the open breaker's 503: %.300s", resp.StatusCode, body)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	for _, p := range protos {
		if p != 2 {
			t.Fatalf("the upstream was reached over HTTP/%d", p)
		}
	}
}
