package proxy_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

// hermesClick is a click written as text, the way Hermes and Qwen write
// calls when the serving stack does not parse them.
func hermesClick(args string) string {
	return `<tool_call>{"name":"click","arguments":` + args + `}</tool_call>`
}

// TestMessagesTextCalls: on /v1/messages, calls a model writes as text in a
// text block become tool_use blocks, streamed or not, and go up the ladder
// like any call; the text around them stays, an emptied text block is not
// sent (the API refuses an empty one when the client sends it back), and
// stop_reason says tool_use. Before, the text reached the client, which
// took the call for a final answer.
func TestMessagesTextCalls(t *testing.T) {
	valid := `{"selector":"#a"}`
	tests := []struct {
		name       string
		first      fake.Reply
		corrected  []fake.Reply
		textCalls  policy.TextCalls
		wantCalls  []string
		wantText   []string // the text blocks the client gets
		wantStop   string
		wantReasks int
		outcome    string
	}{
		{name: "only-a-call", first: fake.Reply{Text: hermesClick(valid)},
			wantCalls: []string{"toolu_text_0_0 click " + valid}, wantStop: "tool_use", outcome: "repaired"},
		{name: "prose-then-call", first: fake.Reply{Text: "Sure, clicking it.\n" + hermesClick(valid)},
			wantCalls: []string{"toolu_text_0_0 click " + valid}, wantText: []string{"Sure, clicking it."}, wantStop: "tool_use", outcome: "repaired"},
		{name: "two-calls-and-after", first: fake.Reply{Text: "First:\n" + hermesClick(valid) + "\n" + hermesClick(`{"selector":"#b"}`) + "\nDone."},
			wantCalls: []string{"toolu_text_0_0 click " + valid, `toolu_text_0_1 click {"selector":"#b"}`}, wantText: []string{"First:\nDone."}, wantStop: "tool_use", outcome: "repaired"},
		{name: "mended", first: fake.Reply{Text: hermesClick(`{"Selector":"#a"}`)},
			wantCalls: []string{"toolu_text_0_0 click " + valid}, wantStop: "tool_use", outcome: "repaired"},
		{name: "invalid-reasked", first: fake.Reply{Text: hermesClick(`{}`)},
			corrected: []fake.Reply{{Calls: []fake.Call{click("toolu_2", valid)}}},
			wantCalls: []string{"toolu_2 click " + valid}, wantStop: "tool_use", wantReasks: 1, outcome: "reasked"},
		{name: "mention-in-prose", first: fake.Reply{Text: "Wrap a call in `<tool_call>` tags to call a tool."},
			wantText: []string{"Wrap a call in `<tool_call>` tags to call a tool."}, wantStop: "end_turn", outcome: "none"},
		{name: "off", first: fake.Reply{Text: hermesClick(valid)}, textCalls: policy.TextCallsOff,
			wantText: []string{hermesClick(valid)}, wantStop: "end_turn", outcome: "none"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				up := newUpstream(t)
				reasks := scriptMessages(up, tt.first, tt.corrected...)
				srv, _ := guard(t, up, func(c *policy.Config) {
					if tt.textCalls != "" {
						c.TextCalls = tt.textCalls
					}
				})
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				resp, body := post(t, srv, "/v1/messages", messagesRequest(extra))
				final := assembledMessage(t, resp, body, stream, tt.outcome)
				if diff := cmp.Diff(messageCalls(final), tt.wantCalls); diff != "" {
					t.Errorf("calls (-got +want):\n%s\n%s", diff, body)
				}
				var texts []string
				final.Get("content").ForEach(func(_, b gjson.Result) bool {
					if b.Get("type").Str == "text" {
						text := b.Get("text").Str
						if stream && tt.wantCalls != nil {
							// Space before a call may have gone out before
							// the call could be told from text.
							text = strings.TrimRight(text, " \n")
						}
						texts = append(texts, text)
					}
					return true
				})
				if diff := cmp.Diff(texts, tt.wantText); diff != "" {
					t.Errorf("text blocks (-got +want):\n%s\n%s", diff, body)
				}
				if got := final.Get("stop_reason").Str; got != tt.wantStop {
					t.Errorf("stop_reason %q, want %q", got, tt.wantStop)
				}
				if len(*reasks) != tt.wantReasks {
					t.Fatalf("%d re-asks, want %d", len(*reasks), tt.wantReasks)
				}
				if tt.wantReasks > 0 {
					// The model's turn shows the call it wrote as a tool_use,
					// answered by a tool_result with the errors.
					msgs := gjson.GetBytes((*reasks)[0], "messages").Array()
					a, u := msgs[len(msgs)-2], msgs[len(msgs)-1]
					if a.Get("content.#").Int() != 1 || a.Get("content.0.type").Str != "tool_use" || a.Get("content.0.id").Str != "toolu_text_0_0" {
						t.Errorf("the model's turn is replayed as %s", a.Raw)
					}
					if r := u.Get("content.0"); r.Get("tool_use_id").Str != "toolu_text_0_0" || !r.Get("is_error").Bool() ||
						!strings.Contains(r.Get("content").Str, "missing required property") {
						t.Errorf("the feedback is %s", u.Raw)
					}
				}
			})
		}
	}
}

// TestMessagesTextCallStreamSplitAtEveryByte: however the network cuts a
// stream whose text holds a call, the client gets the same stream: the
// prose, then the call as a tool_use block.
func TestMessagesTextCallStreamSplitAtEveryByte(t *testing.T) {
	stream := strings.Join(fake.Messages.Events(fake.Reply{Text: "Sure.\n" + hermesClick(`{"Selector":"#a"}`) + "\nDone."}, 7), "")
	up, split := splitUpstream(t, stream)
	srv, _ := guard(t, up, nil)
	var first []byte
	for at := 0; at <= len(stream); at++ {
		split.Store(int64(at))
		_, body := post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
		s := readMessagesStream(t, body)
		m := s.message
		if diff := cmp.Diff(messageCalls(m), []string{`toolu_text_0_0 click {"selector":"#a"}`}); diff != "" {
			t.Fatalf("split at %d (-got +want):\n%s\n%s", at, diff, body)
		}
		if m.Get("content.0.text").Str != "Sure.\nDone." || m.Get("stop_reason").Str != "tool_use" || !strings.Contains(s.comment, "outcome=repaired") {
			t.Fatalf("split at %d: the message the client assembles: %s\n%s", at, m.Raw, body)
		}
		if first == nil {
			first = body
		} else if !bytes.Equal(body, first) {
			t.Fatalf("split at %d: the stream differs from the one at 0:\n%s\n%s", at, body, first)
		}
	}
}

// TestMessagesTextStreamIsByteIdentical: a stream of text that holds no
// call reaches the client as the upstream sent it, while tools are
// declared and its text is read for calls.
func TestMessagesTextStreamIsByteIdentical(t *testing.T) {
	want := strings.Join(fake.Messages.Events(fake.Reply{Text: "Here is the answer: 42, as the table (row 3) says."}, 3), "")
	up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: want})
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
	if string(body) != want {
		t.Errorf("the stream changed:\n got %s\nwant %s", body, want)
	}
	// Text that may begin a call is held until it cannot, and goes out in
	// deltas of toolguard's: the text the client assembles is the same.
	text := "Here is <b>bold</b> text [1] and {braces}."
	up = newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: strings.Join(fake.Messages.Events(fake.Reply{Text: text}, 3), "")})
	srv, _ = guard(t, up, nil)
	_, body = post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
	if s := readMessagesStream(t, body); s.message.Get("content.0.text").Str != text || s.message.Get("content.#").Int() != 1 {
		t.Errorf("the client assembles %s", s.message.Raw)
	}
}

// TestMessagesJSONOutputTool: Anthropic's way to get JSON out of a model is
// a tool whose input_schema is the output wanted, forced with tool_choice.
// Its input is checked like any call's: a valid one passes byte for byte,
// one that is not is re-asked with the client's tool_choice kept, streamed
// or not.
func TestMessagesJSONOutputTool(t *testing.T) {
	req := func(extra string) string {
		return `{"model":"claude-test","max_tokens":256,"messages":[{"role":"user","content":"Summarise: it rained."}],` +
			`"tools":[{"name":"record_summary","description":"Record the summary","input_schema":{"type":"object",` +
			`"properties":{"summary":{"type":"string"},"rating":{"type":"integer","minimum":1,"maximum":5}},"required":["summary","rating"]}}],` +
			`"tool_choice":{"type":"tool","name":"record_summary"}` + extra + `}`
	}
	summary := func(id, input string) fake.Call { return fake.Call{ID: id, Name: "record_summary", Args: input} }
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			extra := ""
			if stream {
				extra = `,"stream":true`
			}
			// Valid as received: the body goes out as it came.
			valid := fake.Reply{Calls: []fake.Call{summary("toolu_1", `{"summary":"Rain.","rating":3}`)}}
			up := newUpstream(t)
			reasks := scriptMessages(up, valid)
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/messages", req(extra))
			want := fake.Messages.JSON(valid)
			if stream {
				want = strings.Join(fake.Messages.Events(valid, 5), "")
				body = []byte(strings.Replace(string(body), ": toolguard outcome=valid reasks=0\n\n", "", 1))
			}
			if string(body) != want || len(*reasks) != 0 {
				t.Errorf("a valid output changed, or was re-asked:\n got %s\nwant %s", body, want)
			}
			// A rating out of range and a string for the number: re-asked,
			// with the forced tool kept.
			up = newUpstream(t)
			reasks = scriptMessages(up, fake.Reply{Calls: []fake.Call{summary("toolu_1", `{"summary":"Rain.","rating":9}`)}},
				fake.Reply{Calls: []fake.Call{summary("toolu_2", `{"summary":"Rain.","rating":4}`)}})
			srv, _ = guard(t, up, nil)
			_, body = post(t, srv, "/v1/messages", req(extra))
			var final gjson.Result
			if stream {
				final = readMessagesStream(t, body).message
			} else {
				final = mustJSON(t, body)
			}
			if diff := cmp.Diff(messageCalls(final), []string{`toolu_2 record_summary {"summary":"Rain.","rating":4}`}); diff != "" {
				t.Errorf("output (-got +want):\n%s\n%s", diff, body)
			}
			if len(*reasks) != 1 || gjson.GetBytes((*reasks)[0], "tool_choice").Raw != `{"type":"tool","name":"record_summary"}` {
				t.Fatalf("%d re-asks; tool_choice %s", len(*reasks), gjson.GetBytes((*reasks)[0], "tool_choice").Raw)
			}
			if fb := gjson.GetBytes((*reasks)[0], "messages.2.content.0.content").Str; !strings.Contains(fb, "/rating") {
				t.Errorf("the feedback does not say what is wrong: %s", fb)
			}
		})
	}
}
