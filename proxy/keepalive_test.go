package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// TestClientConnectionIsReused sends requests with bodies of every kind
// toolguard reads, one after another on one connection: each must find the
// connection the last one left, so no request leaves part of its body
// unread or its connection marked to close. (A request refused before its
// body is read, a 401, closes its connection once it has drained a large
// body, as net/http's server does: not checked here.)
func TestClientConnectionIsReused(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{"prompt_tokens":1,"completion_tokens":1}`, clickCall("call_1", `"{\"selector\":\"#b\"}"`))})
	srv, _ := guard(t, up, func(c *policy.Config) { c.APIKeys = []string{"tg-key"} })
	key := http.Header{"Authorization": {"Bearer tg-key"}}
	// More than the server would discard of a body its handler left
	// unread (256 KiB) before giving the connection up.
	large := `{"model":"m","input":"` + strings.Repeat("x", 300<<10) + `"}`
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	cases := []struct {
		name, method, path, body string
		header                   http.Header
		chunked                  bool // no Content-Length: chunked
	}{
		{name: "inspected", method: "POST", path: "/v1/chat/completions", body: clickRequest(""), header: key},
		{name: "inspected, chunked", method: "POST", path: "/v1/chat/completions", body: clickRequest(""), header: key, chunked: true},
		{name: "inspected, 100-continue", method: "POST", path: "/v1/chat/completions", body: clickRequest(""),
			header: http.Header{"Authorization": key["Authorization"], "Expect": {"100-continue"}}},
		{name: "passed through", method: "POST", path: "/v1/embeddings", body: `{"model":"e","input":"x"}`, header: key},
		{name: "passed through, chunked", method: "POST", path: "/v1/embeddings", body: `{"model":"e","input":"x"}`, header: key, chunked: true},
		{name: "passed through, large", method: "POST", path: "/v1/embeddings", body: large, header: key},
		{name: "no body", method: "GET", path: "/v1/models", header: key},
		{name: "refused after its body", method: "POST", path: "/v1/chat/completions", body: `{"model":"m","messages":[`, header: key},
	}
	for i, c := range cases {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
			if c.chunked {
				body = struct{ io.Reader }{body} // hides the length
			}
		}
		reused := false
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		})
		req, err := http.NewRequestWithContext(ctx, c.method, srv.URL+c.path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close || (i > 0 && !reused) {
			t.Errorf("%s: status %d, response closes the connection %v, connection reused %v", c.name, resp.StatusCode, resp.Close, reused)
		}
	}
}

// A stream whose upstream ends its body a moment after the last event
// (the last chunk in a write of its own) leaves the upstream's connection
// for the next request: toolguard reads the body to its end, as a plain
// proxy does. A chat stream's handling ends at "data: [DONE]", and the
// body is read on from there; a Messages stream's goes on to the body's
// end itself.
func TestUpstreamConnectionIsReusedAfterAStream(t *testing.T) {
	for _, c := range []struct {
		name, path, request, stream, last string
	}{
		{"chat", "/v1/chat/completions", streamRequest(""),
			chunk(textDelta(0, "Hello")) + chunk(finish(0, "stop")) + done, "data: [DONE]"},
		{"messages", "/v1/messages", messagesRequest(`,"stream":true`),
			thinkingStream(`{"selector":"#a"}`), `data: {"type":"message_stop"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 3
			var ended [n]chan struct{}
			for i := range ended {
				ended[i] = make(chan struct{})
			}
			var mu sync.Mutex
			conns := map[string]bool{}
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
				mu.Lock()
				conns[r.RemoteAddr] = true
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, c.stream)
				w.(http.Flusher).Flush()
				// The body ends once the client has had the last event.
				select {
				case <-ended[i]:
				case <-r.Context().Done():
				}
			}
			srv, _ := guard(t, up, nil)
			for i := range n {
				resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.request))
				if err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(resp.Body)
				saw := false
				for sc.Scan() {
					if sc.Text() == c.last {
						saw = true
						close(ended[i])
					}
				}
				resp.Body.Close()
				if !saw {
					t.Fatalf("request %d: no %s", i, c.last)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(conns) != 1 {
				t.Errorf("%d upstream connections for %d streams, want 1", len(conns), n)
			}
		})
	}
}

// An upstream that never ends its body after the last event holds the
// client's end back for no more than the drain's wait (or the reading of
// its bytes bound), and what it sends after the last event does not reach
// the client.
func TestStreamEndsWhenTheUpstreamBodyDoesNot(t *testing.T) {
	for name, after := range map[string]string{
		"nothing after the last event": "",
		"200 KB after the last event":  strings.Repeat(chunk(textDelta(0, "after the end")), 2000),
	} {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, _ int) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, chunk(textDelta(0, "Hello"))+chunk(finish(0, "stop"))+done)
				w.(http.Flusher).Flush()
				io.WriteString(w, after)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
			srv, _ := guard(t, up, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(streamRequest("")))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || !strings.HasSuffix(string(body), done) {
				t.Fatalf("read %.300q, %v: want the stream through [DONE] and its end", body, err)
			}
		})
	}
}
