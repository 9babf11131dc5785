package responses

import "testing"

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
	} {
		if got := r.MayWait([]byte(tc.ev)); got != tc.want {
			t.Errorf("MayWait(%q) = %v, want %v", tc.ev, got, tc.want)
		}
	}
}
