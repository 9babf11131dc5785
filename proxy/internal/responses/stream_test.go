package responses

import (
	"bytes"
	"testing"
)

// TestMayWait: the two terminal events may wait (they settle calls and may
// re-ask); a delta does not, so the events before it are not held back.
func TestMayWait(t *testing.T) {
	r := &stream{}
	for _, tc := range []struct {
		ev   string
		want bool
	}{
		{"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n", true},
		{"data: {\"type\":\"response.incomplete\",\"response\":{}}\n\n", true},
		{"data: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\",\"output_index\":0}\n\n", false},
		{"data: {\"type\":\"response.function_call_arguments.done\",\"arguments\":\"{}\"}\n\n", false},
		{"data: {\"type\":\"response.output_item.done\",\"item\":{\"status\":\"completed\"}}\n\n", false},
		{"data: {\"type\":\"response.in_progress\",\"response\":{\"status\":\"incomplete\"}}\n\n", false},
	} {
		if got := r.MayWait([]byte(tc.ev)); got != tc.want {
			t.Errorf("MayWait(%q) = %v, want %v", tc.ev, got, tc.want)
		}
	}
	// The same answers as a search for each type, over events cut at
	// every length.
	ev := []byte("data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"x\":\"response.incomplete\"}}\n\n")
	for n := range len(ev) + 1 {
		want := bytes.Contains(ev[:n], []byte("response.completed")) || bytes.Contains(ev[:n], []byte("response.incomplete"))
		if got := r.MayWait(ev[:n]); got != want {
			t.Errorf("MayWait(%q) = %v, want %v", ev[:n], got, want)
		}
		if got := r.MayWait(ev[n:]); got != (bytes.Contains(ev[n:], []byte("response.completed")) || bytes.Contains(ev[n:], []byte("response.incomplete"))) {
			t.Errorf("MayWait(%q) = %v", ev[n:], got)
		}
	}
}
