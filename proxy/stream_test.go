package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// A stream with text, then one valid call and one that needs mending.
var mixedStream = chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`) +
	chunk(textDelta(0, "Let me ")) + chunk(textDelta(0, "click — ünïcode.")) +
	streamCall(0, 0, "call_a", `{"selector":"#a"}`) +
	streamCall(0, 1, "call_b", `{"Selector":"#b"}`) +
	chunk(finish(0, "tool_calls")) + usageChunk(9) + done

func TestStreamSplitAtEveryByte(t *testing.T) {
	// Atomic: a handler may still be running, on a connection of its own,
	// when the next split is set.
	var split atomic.Int64
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		at := int(split.Load())
		io.WriteString(w, mixedStream[:at])
		f.Flush()
		io.WriteString(w, mixedStream[at:])
	}
	srv, _ := guard(t, up, nil)
	want := assembled{
		Content: map[int]string{0: "Let me click — ünïcode."},
		Calls:   map[int][]string{0: {`call_a click {"selector":"#a"}`, `call_b click {"selector":"#b"}`}},
		Finish:  map[int]string{0: "tool_calls"},
		Usage:   `{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}`,
		Comment: ": toolguard outcome=repaired reasks=0",
		Done:    true,
	}
	for at := 0; at <= len(mixedStream); at++ {
		split.Store(int64(at))
		_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
		if diff := cmp.Diff(assemble(t, body), want); diff != "" {
			t.Fatalf("split at byte %d (-got +want):\n%s", at, diff)
		}
	}
}

func TestStreamShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		want   assembled
	}{
		{
			name:   "indices-start-at-one",
			stream: streamCall(0, 1, "call_1", `{"selector":"#x"}`) + chunk(finish(0, "tool_calls")) + done,
			want:   assembled{Calls: map[int][]string{0: {`call_1 click {"selector":"#x"}`}}, Finish: map[int]string{0: "tool_calls"}},
		},
		{
			name: "parallel-calls-interleaved",
			stream: chunk(callStart(0, 0, "call_a", "click")) + chunk(callStart(0, 1, "call_b", "click")) +
				chunk(argsDelta(0, 0, `{"selector":`)) + chunk(argsDelta(0, 1, `{"selector":`)) +
				chunk(argsDelta(0, 1, `"#b"}`)) + chunk(argsDelta(0, 0, `"#a"}`)) +
				chunk(finish(0, "tool_calls")) + done,
			want: assembled{Calls: map[int][]string{0: {`call_a click {"selector":"#a"}`, `call_b click {"selector":"#b"}`}}, Finish: map[int]string{0: "tool_calls"}},
		},
		{
			name: "missing-index",
			stream: chunk(`[{"index":0,"delta":{"tool_calls":[{"id":"call_a","type":"function","function":{"name":"click","arguments":"{\"selector\""}}]},"finish_reason":null}]`) +
				chunk(`[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":\"#a\"}"}}]},"finish_reason":null}]`) +
				chunk(`[{"index":0,"delta":{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#b\"}"}}]},"finish_reason":null}]`) +
				chunk(finish(0, "tool_calls")) + done,
			want: assembled{Calls: map[int][]string{0: {`call_a click {"selector":"#a"}`, `call_b click {"selector":"#b"}`}}, Finish: map[int]string{0: "tool_calls"}},
		},
		{
			name:   "crlf-line-endings",
			stream: strings.ReplaceAll(chunk(textDelta(0, "a"))+streamCall(0, 0, "call_1", `{"selector":"#x"}`)+chunk(finish(0, "tool_calls"))+done, "\n", "\r\n"),
			want:   assembled{Content: map[int]string{0: "a"}, Calls: map[int][]string{0: {`call_1 click {"selector":"#x"}`}}, Finish: map[int]string{0: "tool_calls"}},
		},
		{
			name:   "text-then-tools",
			stream: chunk(textDelta(0, "Sure.")) + streamCall(0, 0, "call_1", `{"selector":"#x"}`) + chunk(finish(0, "tool_calls")) + done,
			want:   assembled{Content: map[int]string{0: "Sure."}, Calls: map[int][]string{0: {`call_1 click {"selector":"#x"}`}}, Finish: map[int]string{0: "tool_calls"}},
		},
		{
			name: "n-greater-than-one",
			stream: streamCall(0, 0, "call_a", `{"selector":"#a"}`) + streamCall(1, 0, "call_b", `"#b"`) +
				chunk(finish(0, "tool_calls")) + chunk(finish(1, "tool_calls")) + done,
			want: assembled{Calls: map[int][]string{0: {`call_a click {"selector":"#a"}`}, 1: {`call_b click {"selector":"#b"}`}}, Finish: map[int]string{0: "tool_calls", 1: "tool_calls"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(tc.stream))
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/chat/completions", streamRequest(`,"n":2`))
			got := assemble(t, body)
			tc.want.Done = true
			if tc.want.Content == nil {
				tc.want.Content = map[int]string{}
			}
			for ci := range tc.want.Finish {
				if _, ok := tc.want.Content[ci]; !ok {
					tc.want.Content[ci] = ""
				}
			}
			got.Comment = ""
			if diff := cmp.Diff(got, tc.want); diff != "" {
				t.Errorf("(-got +want):\n%s\nstream:\n%s", diff, body)
			}
		})
	}
}

func TestStreamBrokenCallsBehaveAsWithoutStreaming(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   string // the click arguments the model streams
		second  string // what a re-ask answers, "" if none expected
		calls   []string
		comment string
		error   bool
		reqs    int
		usage   string
	}{
		{"bare-string", `"myCoolButton"`, "", []string{`call_1 click {"selector":"myCoolButton"}`}, "outcome=repaired reasks=0", false, 1, `{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}`},
		{"other-case-key", `{"Selector": "myCoolButton"}`, "", []string{`call_1 click {"selector":"myCoolButton"}`}, "outcome=repaired reasks=0", false, 1, `{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}`},
		{"truncated", `{"selector": "myCoolButton"`, "", []string{`call_1 click {"selector":"myCoolButton"}`}, "outcome=repaired reasks=0", false, 1, `{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}`},
		{"missing-field-reasked", `{}`, `{"selector":"#fixed"}`, []string{`call_2 click {"selector":"#fixed"}`}, "outcome=reasked reasks=1", false, 2, `{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}`},
		{"never-corrects", `{}`, `{}`, nil, "outcome=failed reasks=2", true, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				body, _ := io.ReadAll(r.Body)
				_ = body
				if n == 0 {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, chunk(textDelta(0, "On it."))+streamCall(0, 0, "call_1", tc.first)+chunk(finish(0, "tool_calls"))+usageChunk(5)+done)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, toolReply(`{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}`, clickCall("call_2", quote(tc.second))))
			}
			srv, _ := guard(t, up, nil)
			resp, body := post(t, srv, "/v1/chat/completions", streamRequest(`,"stream_options":{"include_usage":true}`))
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := assemble(t, body)
			if diff := cmp.Diff(got.Calls[0], tc.calls); diff != "" {
				t.Errorf("calls (-got +want):\n%s\n%s", diff, body)
			}
			if got.Content[0] != "On it." {
				t.Errorf("content %q", got.Content[0])
			}
			if got.Comment != ": toolguard "+tc.comment {
				t.Errorf("comment %q, want %q", got.Comment, tc.comment)
			}
			if reqs := up.requests(); len(reqs) != tc.reqs {
				t.Errorf("upstream got %d requests, want %d", len(reqs), tc.reqs)
			} else if len(reqs) > 1 {
				re := gjson.ParseBytes(reqs[1].Body)
				if re.Get("stream").Bool() || re.Get("stream_options").Exists() {
					t.Errorf("re-ask is streamed: %s", reqs[1].Body)
				}
				if re.Get(`messages.#(role=="assistant").content`).String() != "On it." {
					t.Errorf("re-ask lost the streamed text: %s", re.Get("messages").Raw)
				}
			}
			if tc.error {
				e := gjson.Parse(got.Error)
				if e.Get("type").String() != "invalid_tool_call" || e.Get("code").String() != "tool_call_invalid" || got.Done {
					t.Errorf("want an error event and no [DONE]: %s", body)
				}
				return
			}
			if got.Usage != tc.usage || !got.Done {
				t.Errorf("usage %s, want %s (done %v)", got.Usage, tc.usage, got.Done)
			}
		})
	}
}

func TestStreamWithoutToolCallsIsByteIdentical(t *testing.T) {
	rec := cassette(t, "chat-streaming")
	up := newUpstream(t, reply{Header: rec.Header(), Body: rec.Response.Body})
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/chat/completions", streamRequest(`,"stream_options":{"include_usage":true}`))
	if diff := cmp.Diff(string(body), rec.Response.Body); diff != "" {
		t.Errorf("stream changed (-got +want):\n%s", diff)
	}
}

func TestStreamUpstreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(w http.ResponseWriter)
		code string
	}{
		{"no-done", func(w http.ResponseWriter) {
			io.WriteString(w, streamCall(0, 0, "call_1", `{"selector":"#a"}`)+chunk(finish(0, "tool_calls")))
		}, "upstream_stream_truncated"},
		{"truncated-event", func(w http.ResponseWriter) {
			io.WriteString(w, chunk(textDelta(0, "hi"))+`data: {"id":"x","choi`)
		}, "upstream_stream_truncated"},
		{"reset-mid-call", func(w http.ResponseWriter) {
			io.WriteString(w, chunk(callStart(0, 0, "call_1", "click"))+chunk(argsDelta(0, 0, `{"sel`)))
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}, "upstream_unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "text/event-stream")
				tc.send(w)
			}
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
			got := assemble(t, body)
			if gjson.Get(got.Error, "code").String() != tc.code || got.Done {
				t.Errorf("want error event %s and no [DONE]; got %s", tc.code, body)
			}
			if tc.name == "reset-mid-call" && len(got.Calls) != 0 {
				t.Errorf("the call cut short was released: %v", got.Calls)
			}
		})
	}
}

func TestStreamUpstreamErrorStatusPassesThrough(t *testing.T) {
	up := newUpstream(t, reply{Status: 429, Header: http.Header{"Retry-After": {"3"}}, Body: `{"error":{"message":"slow down"}}`})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || string(body) != `{"error":{"message":"slow down"}}` {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

// TestStreamReleasesEarly checks that text is not held back and that a
// valid call goes out as soon as the next call starts, while the upstream is
// still streaming: the upstream waits for the client to see each before it
// goes on, so a proxy that held them would never finish.
func TestStreamReleasesEarly(t *testing.T) {
	sawText := make(chan struct{})
	sawCall := make(chan struct{})
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, chunk(textDelta(0, "first words")))
		f.Flush()
		waitOrFail(t, r, sawText)
		io.WriteString(w, streamCall(0, 0, "call_a", `{"selector":"#a"}`)+chunk(callStart(0, 1, "call_b", "click")))
		f.Flush()
		waitOrFail(t, r, sawCall)
		io.WriteString(w, chunk(argsDelta(0, 1, `{"selector":"#b"}`))+chunk(finish(0, "tool_calls"))+done)
	}
	srv, _ := guard(t, up, nil)
	seen := readStream(t, srv, map[string]chan struct{}{"first words": sawText, "call_a": sawCall})
	if !seen["first words"] || !seen["call_a"] {
		t.Errorf("seen %v", seen)
	}
}

// readStream posts a streamed click request and reads the answer line by
// line as it arrives; the first line holding one of the keys closes that
// key's channel (if any). It returns the keys seen.
func readStream(t *testing.T, srv *httptest.Server, signals map[string]chan struct{}) map[string]bool {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(streamRequest("")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for key, ch := range signals {
			if !seen[key] && strings.Contains(sc.Text(), key) {
				seen[key] = true
				if ch != nil {
					close(ch)
				}
			}
		}
	}
	return seen
}

func waitOrFail(t *testing.T, r *http.Request, ch chan struct{}) {
	select {
	case <-ch:
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
		t.Error("the client did not get the event while the upstream was still streaming")
	}
}

func TestStreamClientDisconnectCancelsUpstream(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(textDelta(0, "hello")))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
		close(cancelled)
	}
	srv, _ := guard(t, up, func(c *policy.Config) {})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(streamRequest("")))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	resp.Body.Close()
	<-cancelled
}

// TestStreamHonoursToolPolicies checks that a tool's own re-ask budget and
// failure behaviour apply to streamed calls as to the others.
func TestStreamHonoursToolPolicies(t *testing.T) {
	up := newUpstream(t, sseReply(chunk(textDelta(0, "ok"))+streamCall(0, 0, "call_1", `{}`)+chunk(finish(0, "tool_calls"))+done))
	srv, _ := guard(t, up, func(c *policy.Config) {
		if err := c.ToolPolicies.UnmarshalText([]byte("click:max_reasks=0,on_failure=drop")); err != nil {
			t.Fatal(err)
		}
	})
	_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
	got := assemble(t, body)
	if len(up.requests()) != 1 || len(got.Calls) != 0 || got.Finish[0] != "stop" || got.Comment != ": toolguard outcome=failed reasks=0" || !got.Done {
		t.Errorf("requests %d, got %+v", len(up.requests()), got)
	}
}

// TestStreamStateIsBounded sends a stream that invents ever new choice and
// call indices: the state held for it is capped, and the stream ends with an
// error event instead of growing.
func TestStreamStateIsBounded(t *testing.T) {
	var choices, calls strings.Builder
	for i := range 300 {
		choices.WriteString(chunk(textDelta(i, "x")))
		calls.WriteString(chunk(callStart(0, i, fmt.Sprint("call_", i), "click")))
	}
	for _, tc := range []struct{ name, stream string }{{"choices", choices.String() + done}, {"calls", calls.String() + done}} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(tc.stream))
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
			if got := assemble(t, body); gjson.Get(got.Error, "code").String() != "upstream_stream_too_large" || got.Done {
				t.Errorf("error %s, done %v", got.Error, got.Done)
			}
		})
	}
}

// TestStreamTextNeverWaitsForReask sends text, an invalid call and the finish
// in one network read: the text must reach the client while the re-ask that
// the finish triggers is still waiting for its answer.
func TestStreamTextNeverWaitsForReask(t *testing.T) {
	sawText := make(chan struct{})
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk(textDelta(0, "before the re-ask"))+streamCall(0, 0, "call_1", `{}`)+chunk(finish(0, "tool_calls"))+done)
			return
		}
		waitOrFail(t, r, sawText)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, toolReply(`{"total_tokens":1}`, clickCall("call_2", `"{\"selector\":\"#x\"}"`)))
	}
	srv, _ := guard(t, up, nil)
	seen := readStream(t, srv, map[string]chan struct{}{"before the re-ask": sawText, "call_2": nil})
	if !seen["before the re-ask"] || !seen["call_2"] {
		t.Errorf("seen %v (the text, and the corrected call)", seen)
	}
}
