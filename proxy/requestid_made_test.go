package proxy

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRequestIDMadeUp: an id made up for a request is 16 lowercase hex
// digits of 64 random bits: over a thousand ids, each half of them takes
// nearly a thousand values.
func TestRequestIDMadeUp(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	var halves [2]map[string]bool
	for i := range halves {
		halves[i] = map[string]bool{}
	}
	for range 1000 {
		id := requestID(r)
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("made-up id %q", id)
		}
		halves[0][id[:8]], halves[1][id[8:]] = true, true
	}
	for i, h := range halves {
		if len(h) < 990 {
			t.Fatalf("half %d of the ids took %d values in 1000", i, len(h))
		}
	}
}
