package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
)

func TestOtherRoutesPassThroughUnchanged(t *testing.T) {
	emb := cassette(t, "embeddings-basic")
	for _, tc := range []struct {
		name, method, path, body string
		up                       reply
		wantPath                 string
	}{
		{"models", "GET", "/v1/models?limit=2", "", reply{Body: `{"object":"list","data":[{"id":"gpt-x","object":"model"}]}`}, "/v1/models"},
		{"embeddings", "POST", "/v1/embeddings", emb.Request.Body, reply{Header: emb.Header(), Body: emb.Response.Body}, "/v1/embeddings"},
		{"delete", "DELETE", "/v1/files/file-1", "", reply{Body: `{"id":"file-1","deleted":true}`}, "/v1/files/file-1"},
		{"rate-limited", "POST", "/v1/chat/completions", clickRequest(""), reply{Status: 429, Header: http.Header{"Retry-After": {"7"}, "X-Ratelimit-Remaining-Requests": {"0"}}, Body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}, "/v1/chat/completions"},
		{"server-error", "POST", "/v1/chat/completions", clickRequest(""), reply{Status: 500, Body: `{"error":{"message":"The server had an error","type":"server_error"}}`}, "/v1/chat/completions"},
		{"unknown-model", "POST", "/v1/chat/completions", cassette(t, "chat-unknown-model").Request.Body, reply{Status: 404, Header: cassette(t, "chat-unknown-model").Header(), Body: cassette(t, "chat-unknown-model").Response.Body}, "/v1/chat/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, tc.up)
			srv, _ := guard(t, up, nil)
			resp, body := do(t, context.Background(), srv, tc.method, tc.path, tc.body, http.Header{"Authorization": {"Bearer sk-client"}, "X-Custom": {"kept"}})
			want := tc.up.Status
			if want == 0 {
				want = 200
			}
			if resp.StatusCode != want || string(body) != tc.up.Body {
				t.Errorf("status %d body %q; want %d and the upstream's body", resp.StatusCode, body, want)
			}
			for k, v := range tc.up.Header {
				if got := resp.Header.Get(k); got != v[0] {
					t.Errorf("header %s = %q, want %q", k, got, v[0])
				}
			}
			if resp.Header.Get("X-Toolguard-Outcome") != "" {
				t.Errorf("outcome header on a response toolguard did not judge")
			}
			reqs := up.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method || r.Path != tc.wantPath || string(r.Body) != tc.body {
				t.Errorf("upstream got %s %s %q", r.Method, r.Path, r.Body)
			}
			if r.Header.Get("Authorization") != "Bearer sk-client" || r.Header.Get("X-Custom") != "kept" {
				t.Errorf("headers not passed on: %v", r.Header)
			}
		})
	}
}

func TestQueryAndUpstreamBasePath(t *testing.T) {
	// The request's path below /v1 goes after the upstream's base path,
	// whatever that is; an upstream at /v1 gets the path as it came.
	for _, c := range []struct{ base, want string }{
		{"/openai/v1/", "/openai/v1/models"},
		{"/v1", "/v1/models"},
		{"/v1/", "/v1/models"},
		{"", "/models"},
		{"/", "/models"},
		{"/v10", "/v10/models"},
		{"/api/v1", "/api/v1/models"},
	} {
		up := newUpstream(t, reply{Body: `{}`})
		srv, _ := guard(t, up, func(cfg *policy.Config) { cfg.UpstreamURL = up.URL + c.base })
		do(t, context.Background(), srv, "GET", "/v1/models?after=a%2Fb", "", nil)
		r := up.requests()[0]
		if r.Path != c.want || r.RawQuery != "after=a%2Fb" {
			t.Errorf("upstream at %q: got path %q query %q, want %q", c.base, r.Path, r.RawQuery, c.want)
		}
	}
	// A path that came escaped keeps its escapes, after the upstream's
	// base path as it was configured, escapes and all.
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, func(cfg *policy.Config) { cfg.UpstreamURL = up.URL + "/open%41i/v1/" })
	do(t, context.Background(), srv, "GET", "/v1/files/a%41b", "", nil)
	if got, want := up.requests()[0].EscapedPath, "/open%41i/v1/files/a%41b"; got != want {
		t.Errorf("an escaped path: the upstream got %q, want %q", got, want)
	}
}

func TestUpstreamAPIKeyReplacesClientAuthorization(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.UpstreamAPIKey = "sk-upstream" })
	do(t, context.Background(), srv, "GET", "/v1/models", "", http.Header{"Authorization": {"Bearer sk-client"}})
	if got := up.requests()[0].Header.Get("Authorization"); got != "Bearer sk-upstream" {
		t.Errorf("Authorization %q", got)
	}
}

func TestHostHeaderCannotChooseUpstream(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, nil)
	req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
	req.Host = "evil.example"
	req.Header.Set("X-Forwarded-Host", "evil.example")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(up.requests()) != 1 {
		t.Errorf("status %d, upstream requests %d", resp.StatusCode, len(up.requests()))
	}
}

func TestUnknownRouteIs404InOpenAIShape(t *testing.T) {
	up := newUpstream(t)
	srv, _ := guard(t, up, nil)
	for _, p := range []string{"/", "/v2/models", "/admin"} {
		resp, body := do(t, context.Background(), srv, "GET", p, "", nil)
		e := mustJSON(t, body).Get("error")
		if resp.StatusCode != 404 || e.Get("message").String() == "" || e.Get("type").String() == "" {
			t.Errorf("%s: status %d body %s", p, resp.StatusCode, body)
		}
	}
	if len(up.requests()) != 0 {
		t.Errorf("upstream got a request")
	}
}

func TestHealthz(t *testing.T) {
	up := newUpstream(t)
	srv, _ := guard(t, up, nil)
	resp, body := do(t, context.Background(), srv, "GET", "/healthz", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

func TestBodyOverLimitIs413(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxBodyBytes = 1000 })
	big := clickRequest(`,"pad":"` + strings.Repeat("x", 2000) + `"`)
	for _, tc := range []struct {
		name    string
		chunked bool
		path    string
	}{{"chat-content-length", false, "/v1/chat/completions"}, {"chat-chunked", true, "/v1/chat/completions"}, {"embeddings-chunked", true, "/v1/embeddings"}} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(big)
			if tc.chunked {
				body = io.MultiReader(strings.NewReader(big)) // unknown length: sent chunked
			}
			req, _ := http.NewRequest("POST", srv.URL+tc.path, body)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			e := mustJSON(t, b).Get("error")
			if resp.StatusCode != 413 || e.Get("code").String() != "request_too_large" {
				t.Errorf("status %d body %s", resp.StatusCode, b)
			}
		})
	}
	if len(up.requests()) != 0 {
		t.Errorf("upstream got %d requests", len(up.requests()))
	}
}

func TestUnreachableUpstreamIs502(t *testing.T) {
	up := newUpstream(t)
	up.Close()
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	// A closed server's port refuses connections, and the code says so.
	if resp.StatusCode != 502 || mustJSON(t, body).Get("error.code").String() != "upstream_connection_refused" {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

func TestSlowUpstreamIs504(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	srv, _ := guard(t, up, func(c *policy.Config) { c.UpstreamHeaderTimeout = 50 * time.Millisecond })
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	if resp.StatusCode != 504 || mustJSON(t, body).Get("error.code").String() != "upstream_timeout" {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

// TestPassThroughUnderLoad sends many POSTs with sizeable bodies to an
// upstream that answers at once with a large body, and checks every response
// arrives whole: streaming a request body through ReverseProxy to such an
// upstream can cut responses short (golang/go#40747).
func TestPassThroughUnderLoad(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB answer
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		// Answer before reading the request body.
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(payload)
	}
	srv, _ := guard(t, up, nil)
	reqBody := strings.Repeat("y", 64<<10)
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				resp, err := srv.Client().Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(reqBody))
				if err != nil {
					errs <- err
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(b, payload) {
					errs <- fmt.Errorf("worker %d request %d: %d of %d bytes, err %v", w, i, len(b), len(payload), err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
