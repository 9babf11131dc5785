package proxy_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/internal/fake"
)

// TestResponsesStreamTextCallsSplit: in a Responses stream, a
// call written in the message's text becomes a function_call item, however
// the network cuts the stream (at every fifth byte: the repair package's
// hold test reads every prefix); the client keeps the text around it, and
// reads a stream whose numbers and terminal response agree with what it
// was sent.
func TestResponsesStreamTextCallsSplit(t *testing.T) {
	for _, tc := range []struct {
		name, text, wantText string
		wantCalls            []string
	}{
		{name: "hermes after text", text: "Clicking now.\n<tool_call>{\"name\": \"click\", \"arguments\": {\"Selector\": \"#a\"}}</tool_call>",
			wantText: "Clicking now.", wantCalls: []string{`call_text_0_0 click {"selector":"#a"}`}},
		{name: "harmony alone", text: "<|channel|>commentary to=functions.click <|constrain|>json<|message|>{\"selector\":\"#h\"}<|call|>",
			wantCalls: []string{`call_text_0_0 click {"selector":"#h"}`}},
		{name: "kimi with text after", text: "<|tool_calls_section_begin|><|tool_call_begin|>functions.click:0<|tool_call_argument_begin|>{\"selector\": \"#k\"}<|tool_call_end|><|tool_calls_section_end|>\nDone.",
			wantText: "Done.", wantCalls: []string{`call_text_0_0 click {"selector":"#k"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := strings.Join(fake.Responses.Events(fake.Reply{Text: tc.text}, 5), "")
			var split atomic.Int64
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "text/event-stream")
				at := int(split.Load())
				w.Write([]byte(stream[:at]))
				w.(http.Flusher).Flush()
				w.Write([]byte(stream[at:]))
			}
			srv, _ := guard(t, up, nil)
			for at := 0; at <= len(stream); at += 5 {
				split.Store(int64(at))
				_, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
				s := readResponseStream(t, body)
				var calls []string
				for _, c := range s.calls {
					f := strings.SplitN(c, " ", 3)
					calls = append(calls, f[0]+" "+f[1]+" "+compact(f[2]))
				}
				if diff := cmp.Diff(calls, tc.wantCalls); diff != "" || s.errCode != "" {
					t.Fatalf("split at byte %d: error %q, calls (-got +want):\n%s\n%s", at, s.errCode, diff, body)
				}
				if s.text != tc.wantText {
					t.Fatalf("split at byte %d: text %q, want %q", at, s.text, tc.wantText)
				}
				msg := s.completed.Get(`output.#(type=="message")`)
				if got := msg.Get("content.0.text").Str; got != tc.wantText || (tc.wantText == "") == msg.Exists() {
					t.Fatalf("split at byte %d: the terminal response's message %s, want text %q", at, msg.Raw, tc.wantText)
				}
				if !strings.Contains(s.comment, "outcome=repaired") {
					t.Fatalf("split at byte %d: comment %q", at, s.comment)
				}
			}
		})
	}
}

// TestResponsesStreamTextWithoutCallsPasses: a Responses stream whose text
// holds no call passes byte for byte with tools declared, markers' first
// bytes, a call quoted as an example, and a harmony final answer included.
func TestResponsesStreamTextWithoutCallsPasses(t *testing.T) {
	for _, text := range []string{
		"No call here, just plain text about clicking.",
		"No call here: just [text] with {braces} and <tags>.",
		"For example:\n<tool_call>{\"name\": \"click\", \"arguments\": {}}</tool_call>",
		"<|channel|>final<|message|>The page is open.<|return|>",
	} {
		stream := strings.Join(fake.Responses.Events(fake.Reply{Text: text}, 3), "")
		up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: stream})
		srv, _ := guard(t, up, nil)
		if _, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`)); string(body) != stream {
			t.Errorf("%q changed:\n got %s\nwant %s", text, body, stream)
		}
	}
}
