package proxy_test

import (
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// chatWith is a request for the click tool whose user message is content.
func chatWith(content string) string {
	return `{"model":"gpt-test","messages":[{"role":"user","content":` + strconv.Quote(content) + `}],"tools":` + clickTools + `}`
}

// wordy is n bytes of words drawn from a few, which gzip compresses about
// ten to one: text of a real ratio, unlike a run of one byte.
func wordy(n int) string {
	words := []string{"select ", "button ", "click ", "the "}
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()[:n]
}

// TestCompressedBodiesDecodeWithinARatio: a gzip body of 31 KB decoded to
// 31 MiB, inside TOOLGUARD_MAX_BODY_BYTES, and went upstream. A body may
// decode to 1 MiB, or to 20 times its compressed size, and no more: past
// that it is a 413 and nothing goes upstream. Real bodies pass.
func TestCompressedBodiesDecodeWithinARatio(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{\"selector\":\"#a\"}"`))})
	srv, _ := guard(t, up, nil)
	gz := http.Header{"Content-Encoding": {"gzip"}}

	bomb := compressed(gzip.NewWriter, chatWith(strings.Repeat("a", 31<<20)))
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	resp, body := do(t, t.Context(), srv, "POST", "/v1/chat/completions", bomb, gz)
	checkOpenAIError(t, resp, body, http.StatusRequestEntityTooLarge, "request_too_large")
	if !strings.Contains(string(body), "uncompressed") {
		t.Errorf("the refusal does not say what to do: %s", body)
	}
	if n := len(up.requests()); n != 0 {
		t.Fatalf("%d upstream requests for a refused body", n)
	}

	for _, tt := range []struct{ name, body string }{
		{"900 KB of one byte, under the floor", chatWith(strings.Repeat("a", 900<<10))},
		{"8 MiB of words, about 10:1", chatWith(wordy(8 << 20))},
	} {
		z := compressed(gzip.NewWriter, tt.body)
		resp, rb := do(t, t.Context(), srv, "POST", "/v1/chat/completions", z, gz)
		if resp.StatusCode != 200 {
			t.Errorf("%s (%d:1): status %d: %.300s", tt.name, len(tt.body)/len(z), resp.StatusCode, rb)
		}
	}
	if got := up.requests(); len(got) != 2 || len(got[1].Body) != len(chatWith(wordy(8<<20))) {
		t.Errorf("the upstream did not get the two decoded bodies")
	}
}

// TestDecodedBodiesInFlightAreBounded: decoded bodies count against what
// the requests in flight may hold, twice TOOLGUARD_MAX_BODY_BYTES: with two
// bodies of 700 KB held (the upstream holding their requests) and a limit of
// 1 MiB, a third compressed body is a 503 with Retry-After, before anything
// goes upstream; a body sent as it is does not count; once the two are
// answered, the budget is back.
func TestDecodedBodiesInFlightAreBounded(t *testing.T) {
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		if n < 2 {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, toolReply(`{}`, clickCall("c1", `"{\"selector\":\"#a\"}"`)))
	}
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxBodyBytes = 1 << 20 })
	plain := chatWith(strings.Repeat("a", 700<<10))
	z := compressed(gzip.NewWriter, plain)
	gz := http.Header{"Content-Encoding": {"gzip"}}
	send := func(body string, h http.Header) (int, string) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	statuses := make(chan string, 2)
	for range 2 {
		go func() {
			status, body := send(z, gz)
			statuses <- strconv.Itoa(status) + " " + body
		}()
	}
	<-arrived
	<-arrived
	resp, body := do(t, t.Context(), srv, "POST", "/v1/chat/completions", z, gz)
	checkOpenAIError(t, resp, body, http.StatusServiceUnavailable, "toolguard_overloaded")
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After on the 503")
	}
	if status, body := send(plain, nil); status != 200 {
		t.Errorf("a body sent as it is: status %d: %.300s", status, body)
	}
	close(release)
	for range 2 {
		if s := <-statuses; !strings.HasPrefix(s, "200 ") {
			t.Errorf("a request in flight: %.300s", s)
		}
	}
	if status, body := send(z, gz); status != 200 {
		t.Errorf("after the two: status %d: %.300s", status, body)
	}
}

// TestReasksAreBoundedByTheRequest: a re-ask resends the whole request, so
// a compressed body had each re-ask send upstream many times what came in.
// Re-asks send at most four times the request as received, and 4 MiB: a
// 7 MiB body sent as 0.7 MB of gzip gets none (its calls get the configured
// failure, which says why), the same body sent as it is gets its two.
func TestReasksAreBoundedByTheRequest(t *testing.T) {
	content := wordy(7 << 20)
	plain := chatWith(content)
	z := compressed(gzip.NewWriter, plain)
	if r := len(plain) / len(z); r < 8 || r > 19 {
		t.Fatalf("the body compresses %d:1", r)
	}
	t.Logf("%d bytes, %d compressed", len(plain), len(z))
	for _, tt := range []struct {
		name, body string
		header     http.Header
		upstream   int
		reasks     string
	}{
		{"gzip", z, http.Header{"Content-Encoding": {"gzip"}}, 1, "0"},
		{"as it is", plain, nil, 3, "2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{}"`))})
			srv, _ := guard(t, up, nil)
			resp, body := do(t, t.Context(), srv, "POST", "/v1/chat/completions", tt.body, tt.header)
			checkOpenAIError(t, resp, body, http.StatusBadRequest, "tool_call_invalid")
			if got := resp.Header.Get("X-Toolguard-Reasks"); got != tt.reasks {
				t.Errorf("X-Toolguard-Reasks %q, want %q", got, tt.reasks)
			}
			var sent int
			for _, r := range up.requests() {
				sent += len(r.Body)
			}
			if n := len(up.requests()); n != tt.upstream {
				t.Errorf("%d upstream requests (%d bytes), want %d", n, sent, tt.upstream)
			}
			if tt.upstream == 1 && !strings.Contains(string(body), "re-asks send upstream") {
				t.Errorf("the failure does not say why nothing was re-asked: %.500s", body)
			}
		})
	}
}
