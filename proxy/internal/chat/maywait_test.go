package chat

import (
	"bytes"
	"testing"
)

// TestMayWait: an event may wait when a finish_reason is set or the stream
// ends, and not while every finish_reason is null; the name found inside
// a longer one, or without its quotes, is not it.
func TestMayWait(t *testing.T) {
	for _, tc := range []struct {
		ev   string
		want bool
	}{
		{`data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}` + "\n\n", false},
		{`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n", true},
		{`data: {"choices":[{"index":0,"delta":{},"finish_reason" : "stop"}]}` + "\n\n", true},
		{`data: {"choices":[{"finish_reason":null},{"finish_reason":"length"}]}` + "\n\n", true},
		{`data: {"choices":[{"delta":{"content":"finish_reason\": x"},"finish_reason":null}]}` + "\n\n", false},
		{`data: {"choices":[{"delta":{},"my_finish_reason":"stop","finish_reason":null}]}` + "\n\n", false},
		{`data: {"choices":[{"delta":{},"finish_reason":`, true},
		{"data: [DONE]\n\n", true},
		{"data:[DONE]\n\n", true},
		{`data: {"choices":[{"index":0,"delta":{"content":"[DONE]"},"finish_reason":null}]}` + "\n\n", false},
		{`data: {"choices":[]}` + "\n\n", false},
	} {
		if got := mayWait([]byte(tc.ev)); got != tc.want {
			t.Errorf("mayWait(%q) = %v, want %v", tc.ev, got, tc.want)
		}
	}
	// The same answers as a search that includes the quote, over events
	// cut at every length.
	ev := []byte(`data: {"id":"c","choices":[{"index":0,"delta":{"content":"a\"finish_reason\"b"},"finish_reason":null},{"index":1,"finish_reason":"stop"}]}` + "\n\n")
	for n := range len(ev) + 1 {
		if got, want := mayWait(ev[:n]), quotedMayWait(ev[:n]); got != want {
			t.Errorf("mayWait(%q) = %v, want %v", ev[:n], got, want)
		}
	}
}

// quotedMayWait is mayWait searching for the name with its opening quote.
func quotedMayWait(ev []byte) bool {
	if bytes.Contains(ev, []byte("[DONE]")) {
		return true
	}
	for rest := ev; ; {
		i := bytes.Index(rest, []byte(`"finish_reason"`))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(`"finish_reason"`):], " \t:")
		if !bytes.HasPrefix(rest, []byte("null")) {
			return true
		}
	}
}
