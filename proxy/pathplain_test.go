package proxy

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"
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
