package proxy

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// TestPlainPathIsUnambiguous: a path that plainPath lets through without
// the full check is one the full check finds nothing in, and the API's
// paths are plain. Random paths of the bytes each case of the check looks
// for, as sent and as net/http reads them.
func TestPlainPathIsUnambiguous(t *testing.T) {
	for _, p := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/models", "/healthz"} {
		if !plainPath(p) {
			t.Fatalf("%s is not plain", p)
		}
	}
	const alphabet = "/aZ09-_.%2fF5c;\\\x00\x7f "
	rng := rand.New(rand.NewPCG(1, 2))
	plain := 0
	for range 200_000 {
		b := make([]byte, 1+rng.IntN(10))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		u, err := url.Parse("http://h/v1/" + string(b))
		if err != nil {
			continue
		}
		r := &http.Request{URL: u}
		if u.RawPath == "" && plainPath(u.Path) {
			plain++
			if why := pathAmbiguity(r); why != "" {
				t.Fatalf("plain path %q (sent as %q): %s", u.Path, b, why)
			}
		}
		if ambiguousPath(r) != pathAmbiguity(r) {
			t.Fatalf("%q: %q, want %q", u.Path, ambiguousPath(r), pathAmbiguity(r))
		}
	}
	if plain < 1000 {
		t.Fatalf("%d plain paths", plain)
	}
}

// TestPostRoutesAreTheMuxs: serveHTTP's shortcut takes a request only
// where the mux would route it, under the mux's pattern, and takes every
// POST to an inspected route's path as sent.
func TestPostRoutesAreTheMuxs(t *testing.T) {
	cfg := policy.Default()
	cfg.UpstreamURL = "http://127.0.0.1:9/v1"
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.posts) != 3 {
		t.Fatalf("%d inspected routes, want 3", len(h.posts))
	}
	taken := 0
	for path := range h.posts {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodGet, http.MethodOptions} {
			for _, target := range []string{path, path + "/", fmt.Sprintf("/v1/%%%02x%s", path[4], path[5:]), "/x" + path} {
				r := httptest.NewRequest(method, target, nil)
				route, ok := h.shortcut(r)
				if !ok {
					if method == http.MethodPost && target == path {
						t.Errorf("POST %s did not take the shortcut", path)
					}
					continue
				}
				taken++
				if _, pattern := h.mux.Handler(r); pattern != route.pattern {
					t.Errorf("%s %s: the mux routes it to %q, the shortcut to %q", method, target, pattern, route.pattern)
				}
				if got := routeOf(&http.Request{Pattern: route.pattern, URL: r.URL}); got != path {
					t.Errorf("%s %s is logged as route %q", method, target, got)
				}
			}
		}
	}
	if taken != len(h.posts) {
		t.Errorf("%d requests took the shortcut, want %d", taken, len(h.posts))
	}
}
