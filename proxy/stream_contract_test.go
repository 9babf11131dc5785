package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// outcomeComment is the one line toolguard adds to a stream with calls.
var outcomeComment = regexp.MustCompile(`: toolguard outcome=\w+ reasks=\d+\n\n`)

// openAIChunk is a chunk as OpenAI streams it, with the fields a
// re-synthesised chunk would lose (system_fingerprint, logprobs, a vendor
// extension).
func openAIChunk(choice int, delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-C4GmNWjg23NFd2DxEgJ1aMbICfhdA","object":"chat.completion.chunk","created":1755133847,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c",` +
		`"choices":[{"index":` + fmt.Sprint(choice) + `,"delta":` + delta + `,"logprobs":{"content":[{"token":"x","logprob":-0.01}]},"finish_reason":` + fr + `}],"obfuscation":"a1b2"}` + "\n\n"
}

func openAICall(choice, index int, id, name, args string) string {
	s := openAIChunk(choice, fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, index, id, name), "")
	for len(args) > 0 {
		n := min(7, len(args))
		s += openAIChunk(choice, fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, quote(args[:n])), "")
		args = args[n:]
	}
	return s
}

const weatherTools = `[{"type":"function","function":{"name":"get_current_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}}}]`

// TestValidStreamsAreByteIdentical: a stream whose calls are all valid as
// received reaches the client as the upstream sent it, every byte of every
// chunk (logprobs, fingerprints, vendor fields, argument fragments), with
// only toolguard's outcome comment added before [DONE].
func TestValidStreamsAreByteIdentical(t *testing.T) {
	role := openAIChunk(0, `{"role":"assistant","content":null}`, "")
	usage := `data: {"id":"chatcmpl-C4GmNWjg23NFd2DxEgJ1aMbICfhdA","object":"chat.completion.chunk","created":1755133847,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":53,"total_tokens":133}}` + "\n\n"
	sf := `{"location":"San Francisco, CA"}`
	tokyo := `{"location":"Tokyo, Japan","unit":"celsius"}`
	interleaved := role +
		openAIChunk(0, `{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_current_weather","arguments":""}}]}`, "") +
		openAIChunk(0, `{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_current_weather","arguments":""}}]}`, "") +
		openAIChunk(0, `{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":"}}]}`, "") +
		openAIChunk(0, `{"tool_calls":[{"index":1,"function":{"arguments":"{\"location\":"}}]}`, "") +
		openAIChunk(0, `{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "") +
		openAIChunk(0, `{"tool_calls":[{"index":1,"function":{"arguments":"\"Rome\"}"}}]}`, "") +
		openAIChunk(0, `{}`, "tool_calls") + usage + done
	tests := map[string]string{
		"one call":       role + openAICall(0, 0, "call_a", "get_current_weather", sf) + openAIChunk(0, `{}`, "tool_calls") + usage + done,
		"three calls":    role + openAICall(0, 0, "call_a", "get_current_weather", sf) + openAICall(0, 1, "call_b", "get_current_weather", tokyo) + openAICall(0, 2, "call_c", "get_current_weather", sf) + openAIChunk(0, `{}`, "tool_calls") + usage + done,
		"interleaved":    interleaved,
		"text then call": role + openAIChunk(0, `{"content":"Checking."}`, "") + openAICall(0, 0, "call_a", "get_current_weather", sf) + openAIChunk(0, `{}`, "tool_calls") + done,
		"n=2": openAIChunk(0, `{"role":"assistant"}`, "") + openAIChunk(1, `{"role":"assistant"}`, "") +
			openAICall(0, 0, "call_a", "get_current_weather", sf) + openAICall(1, 0, "call_b", "get_current_weather", tokyo) +
			openAIChunk(0, `{}`, "tool_calls") + openAIChunk(1, `{}`, "tool_calls") + usage + done,
		"CRLF": strings.ReplaceAll(role+openAICall(0, 0, "call_a", "get_current_weather", sf)+openAIChunk(0, `{}`, "tool_calls")+done, "\n", "\r\n"),
	}
	for name, stream := range tests {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, sseReply(stream))
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[],"tools":`+weatherTools+`}`)
			if !outcomeComment.Match(body) || !strings.Contains(string(body), "outcome=valid") {
				t.Errorf("no valid outcome comment: %s", body)
			}
			got := outcomeComment.ReplaceAllString(strings.ReplaceAll(string(body), "\r\n", "\n"), "")
			want := strings.ReplaceAll(stream, "\r\n", "\n")
			if name == "n=2" {
				// Each choice's calls are held until that choice ends, so
				// the choices' events may interleave differently; within
				// each choice, every event is as the upstream sent it.
				got, want = byChoice(got), byChoice(want)
			}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("stream changed (-got +want):\n%s", diff)
			}
			if name == "CRLF" && !strings.HasPrefix(string(body), strings.TrimSuffix(stream, strings.ReplaceAll(done, "\n", "\r\n"))) {
				t.Errorf("CRLF stream changed: %q", body)
			}
		})
	}
}

// byChoice groups a stream's events by the index of their choice, in order.
func byChoice(stream string) string {
	groups := map[string][]string{}
	var keys []string
	for _, ev := range strings.SplitAfter(stream, "\n\n") {
		k := gjson.Get(strings.TrimPrefix(ev, "data: "), "choices.0.index").Raw
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], ev)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("choice " + k + ":\n" + strings.Join(groups[k], ""))
	}
	return b.String()
}

// TestRecordedStreamsAreByteIdentical: every stream recorded from OpenAI in
// testdata passes byte for byte. (The recordings hold no streamed tool
// calls; TestValidStreamsAreByteIdentical streams OpenAI's recorded
// parallel-call answer in OpenAI's chunk format.)
func TestRecordedStreamsAreByteIdentical(t *testing.T) {
	for _, name := range []string{"chat-streaming", "chat-streaming-detailed-usage"} {
		rec := cassette(t, name)
		up := newUpstream(t, reply{Header: rec.Header(), Body: rec.Response.Body})
		srv, _ := guard(t, up, nil)
		_, body := post(t, srv, "/v1/chat/completions", streamRequest(`,"stream_options":{"include_usage":true}`))
		if diff := cmp.Diff(string(body), rec.Response.Body); diff != "" {
			t.Errorf("%s changed (-got +want):\n%s", name, diff)
		}
	}
}

// TestStreamArgumentsThatAreNotStrings: arguments sent as a JSON value in a
// delta were dropped (the call assembled from ""): an object is mended as
// in a non-streamed reply, other values are re-asked, a mix of fragments
// and a value is a malformed reply. Each stream is split at every byte.
func TestStreamArgumentsThatAreNotStrings(t *testing.T) {
	noRequired := `[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}}}}}]`
	withArgs := func(args string) string {
		return chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"click","arguments":` + args + `}}]},"finish_reason":null}]`)
	}
	moreArgs := func(args string) string {
		return chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + args + `}}]},"finish_reason":null}]`)
	}
	end := chunk(finish(0, "tool_calls")) + done
	fixed := toolReply(`{}`, clickCall("call_b", `"{\"selector\":\"#fixed\"}"`))
	tests := []struct {
		name, stream, tools, want, outcome, errorCode string
	}{
		{name: "object", stream: withArgs(`{"selector":"#a"}`) + end, tools: clickTools, want: `call_a click {"selector":"#a"}`, outcome: "repaired"},
		{name: "object, nothing required", stream: withArgs(`{"selector":"#a"}`) + end, tools: noRequired, want: `call_a click {"selector":"#a"}`, outcome: "repaired"},
		{name: "array", stream: withArgs(`["#a"]`) + end, tools: noRequired, want: `call_b click {"selector":"#fixed"}`, outcome: "reasked"},
		{name: "number", stream: withArgs(`5`) + end, tools: noRequired, want: `call_b click {"selector":"#fixed"}`, outcome: "reasked"},
		{name: "null", stream: withArgs(`null`) + end, tools: clickTools, want: `call_b click {"selector":"#fixed"}`, outcome: "reasked"},
		{name: "null, then fragments", stream: withArgs(`null`) + moreArgs(quote(`{"selector":`)) + moreArgs(quote(`"#a"}`)) + end, tools: clickTools, want: `call_a click {"selector":"#a"}`, outcome: "valid"},
		{name: "fragment, then object", stream: withArgs(quote(`{"sel`)) + moreArgs(`{"selector":"#a"}`) + end, tools: clickTools, errorCode: "upstream_malformed_reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := tt.stream
			var split atomic.Int64
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
				if !strings.Contains(string(up.requests()[n].Body), `"stream":true`) {
					// A re-ask: toolguard makes it without streaming.
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, fixed)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				at := int(split.Load())
				io.WriteString(w, stream[:at])
				w.(http.Flusher).Flush()
				io.WriteString(w, stream[at:])
			}
			srv, _ := guard(t, up, nil)
			req := `{"model":"m","stream":true,"messages":[],"tools":` + tt.tools + `}`
			step := 1 // every byte for the values a delta may hold
			if strings.Contains(tt.name, ",") {
				step = max(1, len(stream)/97)
			}
			for at := 0; at <= len(stream); at += step {
				split.Store(int64(at))
				_, body := post(t, srv, "/v1/chat/completions", req)
				a := assemble(t, body)
				if tt.errorCode != "" {
					if !strings.Contains(a.Error, tt.errorCode) {
						t.Fatalf("split %d: error %q, want %s", at, a.Error, tt.errorCode)
					}
					continue
				}
				if got := a.Calls[0]; len(got) != 1 || got[0] != tt.want || !strings.Contains(a.Comment, "outcome="+tt.outcome) {
					t.Fatalf("split %d: calls %q, %s; want %q, outcome %s\n%s", at, got, a.Comment, tt.want, tt.outcome, body)
				}
			}
		})
	}
}

// TestStreamsAreReadAsClientsReadThem: framing and JSON that a client reads
// differently from toolguard must not carry unchecked calls past it.
func TestStreamsAreReadAsClientsReadThem(t *testing.T) {
	invalid := streamCall(0, 0, "call_a", `{"element":"#a","x":1}`)
	text := chunk(textDelta(0, "Hello")) + chunk(textDelta(0, " there")) + chunk(textDelta(0, ", friend"))
	tests := []struct {
		name, stream, errorCode string
	}{
		{name: "lone CR", stream: strings.ReplaceAll(invalid+chunk(finish(0, "tool_calls"))+done, "\n", "\r")},
		{name: "byte order mark", stream: "\xef\xbb\xbf" + invalid + chunk(finish(0, "tool_calls")) + done, errorCode: "upstream_invalid_event"},
		{name: "duplicate arguments", errorCode: "upstream_ambiguous_reply",
			stream: chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#a\"}","arguments":"{}"}}]},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
		{name: "duplicate choices", errorCode: "upstream_ambiguous_reply",
			stream: `data: {"choices":[{"index":0,"delta":{"content":"hi"}}],"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]}}]}` + "\n\n" + chunk(finish(0, "tool_calls")) + done},
		{name: "duplicate tool_calls", errorCode: "upstream_ambiguous_reply",
			stream: chunk(`[{"index":0,"delta":{"tool_calls":[],"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
		{name: "letter case", errorCode: "upstream_ambiguous_reply",
			stream: chunk(`[{"index":0,"delta":{"Tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
		// Events that repeat the one before with other text are not
		// tokenised again (wire.EventReader): what hides in a text's place
		// is still found.
		{name: "duplicate tool_calls in a repeated event's text", errorCode: "upstream_ambiguous_reply",
			stream: text + chunk(`[{"index":0,"delta":{"content":"c","tool_calls":[],"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
		{name: "letter case in a repeated event's text", errorCode: "upstream_ambiguous_reply",
			stream: text + chunk(`[{"index":0,"delta":{"content":"c","Tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
		{name: "invalid UTF-8 in a repeated event's text", errorCode: "upstream_invalid_event",
			stream: text + chunk("[{\"index\":0,\"delta\":{\"content\":\"c\xffd\"},\"finish_reason\":null}]") + invalid + chunk(finish(0, "tool_calls")) + done},
		{name: "function_call beside tool_calls", errorCode: "upstream_malformed_reply",
			stream: streamCall(0, 0, "call_a", `{"selector":"#a"}`) + chunk(`[{"index":0,"delta":{"function_call":{"name":"click","arguments":"{}"}},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
		{name: "tool_calls object", errorCode: "upstream_malformed_reply",
			stream: chunk(`[{"index":0,"delta":{"tool_calls":{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}},"finish_reason":null}]`) + chunk(finish(0, "tool_calls")) + done},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(tt.stream), sseReply(streamCall(0, 0, "call_b", `{"selector":"#b"}`)+chunk(finish(0, "tool_calls"))+done))
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
			_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
			// What a client that splits lines on CR, LF and CRLF reads.
			a := assemble(t, []byte(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(body))))
			for _, c := range a.Calls[0] {
				if !strings.Contains(c, `"selector"`) || strings.Contains(c, "element") {
					t.Fatalf("an invalid call reached the client: %q\n%s", c, body)
				}
			}
			if tt.errorCode != "" && !strings.Contains(a.Error, tt.errorCode) {
				t.Errorf("error %q, want %s\n%s", a.Error, tt.errorCode, body)
			}
			if tt.errorCode == "" && !strings.Contains(a.Error, "tool_call_invalid") {
				t.Errorf("the invalid call was not caught: %s", body)
			}
		})
	}
}

// TestStreamStartsAreReadAsClientsReadThem: a stream's first events are
// compared with the same events of the client's last stream
// (wire.NewStreamStarts), not tokenised again when they repeat them: what
// hides in a text's place in a client's second stream is still found.
func TestStreamStartsAreReadAsClientsReadThem(t *testing.T) {
	first := chunk(textDelta(0, "Hello")) + chunk(textDelta(0, " there")) + streamCall(0, 0, "call_a", `{"selector":"#a"}`) + chunk(finish(0, "tool_calls")) + done
	rest := chunk(textDelta(0, " there")) + streamCall(0, 0, "call_a", `{"selector":"#a"}`) + chunk(finish(0, "tool_calls")) + done
	tests := []struct{ name, first, errorCode string }{
		{name: "duplicate tool_calls in the first event's text", errorCode: "upstream_ambiguous_reply",
			first: chunk(`[{"index":0,"delta":{"content":"c","tool_calls":[],"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]},"finish_reason":null}]`)},
		{name: "letter case in the first event's text", errorCode: "upstream_ambiguous_reply",
			first: chunk(`[{"index":0,"delta":{"content":"c","Tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"click","arguments":"{}"}}]},"finish_reason":null}]`)},
		{name: "invalid UTF-8 in the first event's text", errorCode: "upstream_invalid_event",
			first: chunk("[{\"index\":0,\"delta\":{\"content\":\"c\xffd\"},\"finish_reason\":null}]")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(first), sseReply(tt.first+rest))
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
			if _, body := post(t, srv, "/v1/chat/completions", streamRequest("")); assemble(t, body).Error != "" {
				t.Fatalf("the client's first stream failed: %s", body)
			}
			_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
			if a := assemble(t, body); !strings.Contains(a.Error, tt.errorCode) {
				t.Errorf("error %q, want %s\n%s", a.Error, tt.errorCode, body)
			}
		})
	}
	// Without the event hidden, the second stream repeats the first's
	// start and passes.
	up := newUpstream(t, sseReply(first), sseReply(first))
	srv, _ := guard(t, up, nil)
	for i := range 2 {
		if _, body := post(t, srv, "/v1/chat/completions", streamRequest("")); assemble(t, body).Error != "" || len(assemble(t, body).Calls[0]) != 1 {
			t.Fatalf("stream %d: %s", i+1, body)
		}
	}
}

// TestStreamTruncatedCallsAreNotClosed: in a stream as in a reply, a call
// cut off at the length limit, or one that could have gone on with more
// members or items, is re-asked, never closed and sent as repaired.
func TestStreamTruncatedCallsAreNotClosed(t *testing.T) {
	tools := `[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["selector"]}}}]`
	tests := []struct{ name, args, finish string }{
		{name: "a member may follow", args: `{"selector": "#a"`, finish: "tool_calls"},
		{name: "an item may follow", args: `{"selector": "#a", "tags": ["x", "y"`, finish: "tool_calls"},
		{name: "cut off at the length limit", args: `{"selector": "#a", "tags": ["x"]`, finish: "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := streamCall(0, 0, "call_a", tt.args) + chunk(finish(0, tt.finish)) + done
			up := newUpstream(t, sseReply(stream), reply{Body: toolReply(`{}`, clickCall("call_b", `"{\"selector\":\"#b\"}"`))})
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[],"tools":`+tools+`}`)
			a := assemble(t, body)
			if got := a.Calls[0]; len(got) != 1 || got[0] != `call_b click {"selector":"#b"}` || !strings.Contains(a.Comment, "outcome=reasked") {
				t.Errorf("calls %q %s", got, a.Comment)
			}
		})
	}
}

// TestInterleavedDeltasCostLinearWork: one large call followed by
// thousands of deltas alternating between two other calls re-parsed the
// large call at every switch (45 s), whether it was invalid or valid but
// unable to go out as sent (numbered from 1, so it must be renumbered).
// Bytes allocated for a stream ten times as long (ten times the switches,
// a held call ten times the size) must grow about ten times, not a hundred.
func TestInterleavedDeltasCostLinearWork(t *testing.T) {
	for _, tt := range []struct{ name, big string }{
		{name: "large invalid call", big: `{"element":"%s"}`},
		{name: "large valid call numbered from 1", big: `{"selector":"%s"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := 0
			if strings.Contains(tt.name, "from 1") {
				first = 1
			}
			stream := func(n int) string {
				var b strings.Builder
				// The held call grows with the stream, as in a real reply.
				b.WriteString(chunk(callStart(0, first, "call_big", "click")) + chunk(argsDelta(0, first, fmt.Sprintf(tt.big, strings.Repeat("x", 100*n)))))
				b.WriteString(chunk(callStart(0, first+1, "call_1", "click")) + chunk(callStart(0, first+2, "call_2", "click")))
				for range n {
					b.WriteString(chunk(argsDelta(0, first+1, " ")) + chunk(argsDelta(0, first+2, " ")))
				}
				b.WriteString(chunk(finish(0, "tool_calls")) + done)
				return b.String()
			}
			allocated := func(n int) uint64 {
				up := newUpstream(t, sseReply(stream(n)))
				srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
				var body []byte
				work := bytesAllocated(func() { _, body = post(t, srv, "/v1/chat/completions", streamRequest("")) })
				if !strings.Contains(string(body), "tool_call_invalid") {
					t.Fatalf("%d deltas: no failure: %.300s", n, body)
				}
				return work
			}
			small, large := allocated(200), allocated(2000)
			t.Logf("200 switches: %d bytes allocated; 2,000: %d (%.1fx)", small, large, float64(large)/float64(small))
			if large > 25*small {
				t.Errorf("10x the deltas allocated %.1fx the bytes", float64(large)/float64(small))
			}
		})
	}
}

// TestStreamHeldEventsAreBounded: the events held with a call count toward
// TOOLGUARD_MAX_RESPONSE_BYTES, not only its arguments: a call whose
// one-byte fragments come in events padded with vendor fields ends the
// stream with an error event once what is held passes the limit, and the
// call never reaches the client. The same stream under a higher limit goes
// out as sent.
func TestStreamHeldEventsAreBounded(t *testing.T) {
	pad := `"x_vendor":"` + strings.Repeat("p", 200) + `"`
	var b strings.Builder
	b.WriteString(openAIChunk(0, `{"role":"assistant","content":null}`, ""))
	b.WriteString(openAIChunk(0, `{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_current_weather","arguments":""}}]}`, ""))
	args := `{"location":"` + strings.Repeat("a", 100) + `"}`
	for _, c := range args {
		b.WriteString(openAIChunk(0, `{"tool_calls":[{"index":0,"function":{"arguments":`+quote(string(c))+`},`+pad+`}]}`, ""))
	}
	b.WriteString(openAIChunk(0, `{}`, "tool_calls") + done)
	stream := b.String()
	for _, tt := range []struct {
		limit int64
		fails bool
	}{{limit: 16 << 10, fails: true}, {limit: 1 << 20}} {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			up := newUpstream(t, sseReply(stream))
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxResponseBytes = tt.limit })
			_, body := post(t, srv, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[],"tools":`+weatherTools+`}`)
			a := assemble(t, body)
			if !tt.fails {
				if got := outcomeComment.ReplaceAllString(string(body), ""); got != stream {
					t.Errorf("stream under the limit changed:\n%.500s", got)
				}
				return
			}
			if gjson.Get(a.Error, "code").String() != "upstream_response_too_large" || len(a.Calls[0]) != 0 || a.Done {
				t.Errorf("calls %q, error %s, done %v", a.Calls[0], a.Error, a.Done)
			}
			if len(body) > int(tt.limit) {
				t.Errorf("%d bytes reached the client, more than the limit", len(body))
			}
		})
	}
}

// TestStreamEventPastTheLimit: one event larger than
// TOOLGUARD_MAX_RESPONSE_BYTES ends the stream with its own error, while
// many small events that one network read brings together do not.
func TestStreamEventPastTheLimit(t *testing.T) {
	small := strings.Repeat(chunk(textDelta(0, "word ")), 200) // about 25 KB in one write
	for _, tt := range []struct{ name, stream, code string }{
		{name: "one large event", stream: chunk(textDelta(0, strings.Repeat("x", 100<<10))) + done, code: "upstream_event_too_large"},
		{name: "many small events", stream: small + done},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(tt.stream))
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxResponseBytes = 16 << 10 })
			_, body := post(t, srv, "/v1/chat/completions", streamRequest(""))
			a := assemble(t, body)
			if got := gjson.Get(a.Error, "code").String(); got != tt.code || a.Done != (tt.code == "") {
				t.Errorf("error %q, want %q; done %v", got, tt.code, a.Done)
			}
		})
	}
}
