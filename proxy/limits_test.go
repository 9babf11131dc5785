package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// hangingListener accepts connections and never answers on them, like an
// upstream whose TLS handshake stalls. It stops when the test ends.
func hangingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestUpstreamTimeoutsAre504 covers each upstream timeout: the connect (TLS
// handshake), the response headers, and the whole request, body included.
func TestUpstreamTimeoutsAre504(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *policy.Config, up *fakeUpstream, t *testing.T)
	}{
		{"connect-and-tls", func(c *policy.Config, up *fakeUpstream, t *testing.T) {
			c.UpstreamURL = "https://" + hangingListener(t) + "/v1"
			c.UpstreamConnectTimeout = 50 * time.Millisecond
		}},
		{"response-headers", func(c *policy.Config, up *fakeUpstream, t *testing.T) {
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() }
			c.UpstreamHeaderTimeout = 50 * time.Millisecond
		}},
		{"whole-request-body-included", func(c *policy.Config, up *fakeUpstream, t *testing.T) {
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"chatcmpl-1","choices":[`)
				http.NewResponseController(w).Flush()
				<-r.Context().Done()
			}
			c.UpstreamTimeout = 100 * time.Millisecond
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			srv, _ := guard(t, up, func(c *policy.Config) { tt.change(c, up, t) })
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			checkOpenAIError(t, resp, body, 504, "upstream_timeout")
		})
	}
}

// TestConcurrencyCapIs503 fills the only upstream slot with a request the
// upstream holds, first at its first attempt, then at its re-ask, and checks
// that another request is refused at once with 503 and Retry-After, and that
// the one in flight completes.
func TestConcurrencyCapIs503(t *testing.T) {
	tests := []struct {
		name   string
		holdAt int // which upstream request of the first client request to hold
	}{
		{"first-attempt", 0},
		{"reask", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arrived, release := make(chan struct{}), make(chan struct{})
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "application/json")
				if n == tt.holdAt {
					close(arrived)
					<-release
				}
				args := `"{\"selector\":\"#ok\"}"`
				if n < tt.holdAt {
					args = `"{}"`
				}
				io.WriteString(w, toolReply(`{"total_tokens":1}`, clickCall("call_1", args)))
			}
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxConcurrentUpstream = 1 })

			type result struct {
				status int
				body   string
			}
			done := make(chan result, 1)
			go func() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(clickRequest("")))
				resp, err := srv.Client().Do(req)
				if err != nil {
					done <- result{body: err.Error()}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- result{resp.StatusCode, string(b)}
			}()
			<-arrived
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			checkOpenAIError(t, resp, body, 503, "toolguard_overloaded")
			if got := resp.Header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After %q, want 1", got)
			}
			// Routes that do not go upstream are not limited.
			if resp, _ := do(t, t.Context(), srv, http.MethodGet, "/healthz", "", nil); resp.StatusCode != 200 {
				t.Errorf("/healthz: status %d", resp.StatusCode)
			}
			close(release)
			if r := <-done; r.status != 200 {
				t.Errorf("request in flight: status %d: %s", r.status, r.body)
			}
			// The slot is free again.
			if resp, body := post(t, srv, "/v1/chat/completions", clickRequest("")); resp.StatusCode != 200 {
				t.Errorf("after release: status %d: %s", resp.StatusCode, body)
			}
		})
	}
}

// TestDeclaredLengthDoesNotSizeBuffers: a request's buffer grows with what
// arrives, never from the Content-Length a client declares. Sixteen
// connections declaring 32 MiB each and sending ten bytes allocated 512 MiB
// when the declared length sized the buffer; they allocate a few hundred KiB
// now (64 KiB at most each, and the connections' own buffers).
func TestDeclaredLengthDoesNotSizeBuffers(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxBodyBytes = 32 << 20 })
	const conns = 16
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var open []*net.TCPConn
	for i := range conns {
		c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		path := []string{"/v1/chat/completions", "/v1/files"}[i%2]
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", path, 32<<20)
		open = append(open, c.(*net.TCPConn))
	}
	for _, c := range open {
		// The body ends ten bytes in: each handler has read all there is
		// and answers 400, so the allocations are done when it answers.
		c.CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400 for a body cut short", resp.StatusCode)
		}
	}
	runtime.ReadMemStats(&after)
	t.Logf("allocated %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10)
	if got := after.TotalAlloc - before.TotalAlloc; got > conns<<20 {
		t.Errorf("%d connections that sent ten bytes each allocated %d MiB", conns, got>>20)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d requests", n)
	}
}

// TestUpstreamDeclaredLengthDoesNotSizeBuffers: the reply buffer grows with
// what the upstream sends, never from the Content-Length it declares. An
// upstream (or whatever answers in its place) declaring 32 MiB and sending
// ten bytes made toolguard allocate the 32 MiB for each reply it inspects;
// sixteen such replies allocate a few MiB now.
func TestUpstreamDeclaredLengthDoesNotSizeBuffers(t *testing.T) {
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, _ int) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"choices\"", 32<<20)
		buf.Flush()
	}
	// Without the breaker, which opens on bodies cut short: every reply is
	// read.
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxResponseBytes = 32 << 20; c.MaxReasks = 0; c.BreakerFailures = 0 })
	const replies = 16
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range replies {
		resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("status %d, want 502 for a reply cut short: %s", resp.StatusCode, body)
		}
	}
	runtime.ReadMemStats(&after)
	t.Logf("allocated %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10)
	if got := after.TotalAlloc - before.TotalAlloc; got > replies<<20 {
		t.Errorf("%d replies that sent ten bytes each allocated %d MiB", replies, got>>20)
	}
}
