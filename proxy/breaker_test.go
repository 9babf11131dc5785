package proxy_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// TestBreakerCountsOnlyOutages checks which upstream answers open the
// breaker: a run of 5xx does, 4xx (the upstream is answering) and 501 (a
// route it does not have) do not. Once open, the client gets a 503 with
// Retry-After at once and the upstream sees nothing.
func TestBreakerCountsOnlyOutages(t *testing.T) {
	tests := []struct {
		status int
		opens  bool
	}{
		{500, true}, {502, true}, {503, true}, {504, true},
		{400, false}, {401, false}, {429, false}, {501, false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			up := newUpstream(t, reply{Status: tt.status, Body: `{"error":{"message":"no","type":"server_error"}}`})
			srv, logs := guard(t, up, func(c *policy.Config) { c.BreakerFailures, c.BreakerCooldown = 3, time.Hour })
			for range 3 {
				if resp, body := post(t, srv, "/v1/chat/completions", clickRequest("")); resp.StatusCode != tt.status {
					t.Fatalf("status %d, want the upstream's %d: %s", resp.StatusCode, tt.status, body)
				}
			}
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if !tt.opens {
				if resp.StatusCode != tt.status || len(up.requests()) != 4 {
					t.Errorf("status %d after %d upstream requests: the breaker opened on %d", resp.StatusCode, len(up.requests()), tt.status)
				}
				return
			}
			checkOpenAIError(t, resp, body, 503, "upstream_circuit_open")
			if ra := header(resp, "Retry-After"); ra != "3600" {
				t.Errorf("Retry-After %q, want the cool-down left, 3600", ra)
			}
			// Other routes are upstream requests too.
			if resp, _ := do(t, t.Context(), srv, http.MethodGet, "/v1/models", "", nil); resp.StatusCode != 503 {
				t.Errorf("GET /v1/models: status %d, want 503", resp.StatusCode)
			}
			if n := len(up.requests()); n != 3 {
				t.Errorf("the upstream saw %d requests, want 3", n)
			}
			if !strings.Contains(logs.String(), `"msg":"circuit breaker state changed","upstream":"primary","from":"closed","to":"open"`) {
				t.Errorf("no log line for the transition:\n%s", logs)
			}
			m := series(scrape(t, srv), "toolguard_breaker_")
			if m["toolguard_breaker_state{upstream=primary}"] != 2 || m["toolguard_breaker_rejections_total{upstream=primary}"] != 2 {
				t.Errorf("metrics %v", m)
			}
		})
	}
}

// TestBreakerOff checks that TOOLGUARD_BREAKER_FAILURES=0 lets every request
// through.
func TestBreakerOff(t *testing.T) {
	up := newUpstream(t, reply{Status: 500, Body: `{}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.BreakerFailures = 0 })
	for range 20 {
		post(t, srv, "/v1/chat/completions", clickRequest(""))
	}
	if n := len(up.requests()); n != 20 {
		t.Errorf("the upstream saw %d of 20 requests", n)
	}
}

// TestBreakerOpenEndsReasking checks that a re-ask refused by an open
// breaker ends re-asking, and the failure says why.
func TestBreakerOpenEndsReasking(t *testing.T) {
	arrived, proceed := make(chan struct{}), make(chan struct{})
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		if n == 0 {
			// The first attempt of the first request answers with an
			// invalid call once the second request has opened the breaker.
			close(arrived)
			<-proceed
			io.WriteString(w, toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{}"`)))
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"down"}}`)
	}
	srv, _ := guard(t, up, func(c *policy.Config) { c.BreakerFailures = 1 })
	type result struct {
		resp *http.Response
		body []byte
	}
	first := make(chan result, 1)
	go func() {
		resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
		first <- result{resp, body}
	}()
	<-arrived
	if resp, _ := post(t, srv, "/v1/chat/completions", clickRequest("")); resp.StatusCode != 500 {
		t.Fatalf("second request: status %d, want the upstream's 500", resp.StatusCode)
	}
	close(proceed)
	r := <-first
	checkOpenAIError(t, r.resp, r.body, 400, "tool_call_invalid")
	if !strings.Contains(string(r.body), "circuit breaker") && !strings.Contains(string(r.body), "TOOLGUARD_BREAKER_COOLDOWN") {
		t.Errorf("the failure does not say re-asking met the open breaker: %s", r.body)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("the upstream saw %d requests, want 2 (the re-ask was never sent)", n)
	}
}

// TestBreakerCoolsDownAndProbes follows the breaker through a whole outage
// on a fake clock: it opens after the configured failures, answers 503 with
// the cool-down left in Retry-After while the upstream sees nothing, lets
// one probe through after the cool-down (others still get a 503), reopens
// when the probe fails, and closes when the upstream has recovered.
//
// It runs in a synctest bubble, over HTTP on in-memory connections: the
// breaker's time is the bubble's, so the cool-down passes in time.Sleep at
// no cost and nothing is waited for by polling.
func TestBreakerCoolsDownAndProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			seen    int
			status  = http.StatusInternalServerError
			holding chan struct{} // if set, the upstream waits on it
		)
		upstream := serveMem(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			mu.Lock()
			seen++
			st, hold := status, holding
			mu.Unlock()
			if hold != nil {
				<-hold
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st)
			io.WriteString(w, `{"object":"list","data":[]}`)
		}))
		cfg := policy.Default()
		cfg.UpstreamURL = "http://upstream/v1"
		cfg.BreakerFailures, cfg.BreakerCooldown = 2, 30*time.Second
		toUpstream := &http.Transport{DialContext: upstream.dial}
		h, err := proxy.New(proxy.Options{Config: cfg, Transport: toUpstream, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		guard := serveMem(t, h)
		client := &http.Client{Transport: &http.Transport{DialContext: guard.dial}}
		t.Cleanup(func() {
			client.CloseIdleConnections()
			toUpstream.CloseIdleConnections()
		})
		get := func() (int, string) {
			t.Helper()
			resp, err := client.Get("http://guard/v1/models")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get("Retry-After")
		}
		upstreamSaw := func() int {
			mu.Lock()
			defer mu.Unlock()
			return seen
		}
		expect := func(step string, wantStatus int, wantRetry string, wantSeen int) {
			t.Helper()
			st, ra := get()
			if st != wantStatus || ra != wantRetry || upstreamSaw() != wantSeen {
				t.Errorf("%s: status %d Retry-After %q upstream saw %d; want %d %q %d", step, st, ra, upstreamSaw(), wantStatus, wantRetry, wantSeen)
			}
		}

		expect("first failure", 500, "", 1)
		expect("second failure opens it", 500, "", 2)
		expect("open", 503, "30", 2)
		time.Sleep(10 * time.Second)
		expect("open, later", 503, "20", 2)
		time.Sleep(20*time.Second + time.Millisecond)

		// The cool-down is over: one probe goes through, and is held.
		hold := make(chan struct{})
		mu.Lock()
		holding = hold
		mu.Unlock()
		probe := make(chan int)
		go func() { st, _ := get(); probe <- st }()
		synctest.Wait()
		if upstreamSaw() != 3 {
			t.Fatalf("the probe did not reach the upstream")
		}
		expect("half-open, probe out", 503, "1", 3)
		close(hold)
		if st := <-probe; st != 500 {
			t.Errorf("probe: status %d, want 500", st)
		}
		expect("the failed probe reopens it", 503, "30", 3)

		// The upstream recovers; after the cool-down the probe closes it.
		mu.Lock()
		status, holding = http.StatusOK, nil
		mu.Unlock()
		time.Sleep(30*time.Second + time.Millisecond)
		expect("probe succeeds", 200, "", 4)
		expect("closed", 200, "", 5)

		m := series(scrapeHandler(t, h), "toolguard_breaker_")
		want := map[string]float64{
			"toolguard_breaker_state{upstream=primary}":                          0,
			"toolguard_breaker_rejections_total{upstream=primary}":               4,
			"toolguard_breaker_transitions_total{to=open,upstream=primary}":      2,
			"toolguard_breaker_transitions_total{to=half-open,upstream=primary}": 2,
			"toolguard_breaker_transitions_total{to=closed,upstream=primary}":    1,
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s = %v, want %v", k, m[k], v)
			}
		}
	})
}

// memServer is an http.Server on an in-memory listener: connections are
// net.Pipe pairs, on which goroutines of a synctest bubble block durably.
type memServer struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func serveMem(t *testing.T, h http.Handler) *memServer {
	t.Helper()
	l := &memServer{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l
}

func (l *memServer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *memServer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memServer) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memServer) Addr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// scrapeHandler gathers h's metrics without a request.
func scrapeHandler(t *testing.T, h *proxy.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := h.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestBreakerCountsBodiesThatFail: an upstream that sends its headers and
// then breaks off every body failed every request, and the breaker, judging
// by the headers alone, never opened. Bodies cut short count as failures
// now (a stream's, when it breaks off before its first bytes); a body read
// to its end is a success.
func TestBreakerCountsBodiesThatFail(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				ct := "application/json"
				if stream {
					ct = "text/event-stream"
				}
				w.Header().Set("Content-Type", ct)
				w.Header().Set("Content-Length", "100000")
				if !stream {
					io.WriteString(w, `{"choices":`)
				}
				w.(http.Flusher).Flush() // then the connection closes
			}
			srv, _ := guard(t, up, func(c *policy.Config) { c.BreakerFailures, c.BreakerCooldown = 3, time.Hour })
			req := clickRequest("")
			if stream {
				req = clickRequest(`,"stream":true`)
			}
			for range 3 {
				post(t, srv, "/v1/chat/completions", req)
			}
			resp, body := post(t, srv, "/v1/chat/completions", req)
			if resp.StatusCode != 503 || !strings.Contains(string(body), "upstream_circuit_open") {
				t.Errorf("after three bodies cut short: status %d %.300s, want the breaker open", resp.StatusCode, body)
			}
			if n := len(up.requests()); n != 3 {
				t.Errorf("the upstream saw %d requests, want 3", n)
			}
		})
	}
	// Bodies read whole keep it closed.
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{\"selector\":\"#a\"}"`))})
	srv, _ := guard(t, up, func(c *policy.Config) { c.BreakerFailures, c.BreakerCooldown = 1, time.Hour })
	for range 3 {
		if resp, body := post(t, srv, "/v1/chat/completions", clickRequest("")); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
}
