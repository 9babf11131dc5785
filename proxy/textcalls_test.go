package proxy_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

func TestTextCalls(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		change    func(*policy.Config)
		wantCalls []string // "name args"
		wantText  string
		outcome   string
	}{
		{name: "hermes", content: `<tool_call>{"name": "click", "arguments": {"selector": "#a"}}</tool_call>`,
			wantCalls: []string{`click {"selector":"#a"}`}, outcome: "repaired"},
		{name: "hermes-with-text", content: "Let me click it.\n<tool_call>{\"name\": \"click\", \"arguments\": {\"Selector\": \"#a\"}}</tool_call>",
			wantCalls: []string{`click {"selector":"#a"}`}, wantText: "Let me click it.", outcome: "repaired"},
		{name: "mistral", content: `[TOOL_CALLS][{"name": "click", "arguments": {"selector": "#b"}}]`,
			wantCalls: []string{`click {"selector":"#b"}`}, outcome: "repaired"},
		{name: "pythonic", content: `[click(selector="#c")]`, wantCalls: []string{`click {"selector":"#c"}`}, outcome: "repaired"},
		{name: "react-off-by-default", content: "Thought: I should click.\nAction: click\nAction Input: #d",
			wantText: "Thought: I should click.\nAction: click\nAction Input: #d", outcome: "none"},
		{name: "react-when-all", content: "Thought: I should click.\nAction: click\nAction Input: #d",
			change: func(c *policy.Config) { c.TextCalls = policy.TextCallsAll }, wantCalls: []string{`click {"selector":"#d"}`}, wantText: "Thought: I should click.", outcome: "repaired"},
		{name: "prose-stays-text", content: "You can call click with a selector, for example <tool_call>{\"name\": \"click\", \"arguments\": {}}</tool_call>.",
			wantText: "You can call click with a selector, for example <tool_call>{\"name\": \"click\", \"arguments\": {}}</tool_call>.", outcome: "none"},
		{name: "hermes-string-arguments", content: `<tool_call>{"name": "click", "arguments": "#s"}</tool_call>`,
			wantCalls: []string{`click {"selector":"#s"}`}, outcome: "repaired"},
		{name: "harmony", content: "<|channel|>analysis<|message|>Need to click.<|end|><|start|>assistant<|channel|>commentary to=functions.click <|constrain|>json<|message|>{\"selector\":\"#h\"}<|call|>",
			wantCalls: []string{`click {"selector":"#h"}`}, wantText: "<|channel|>analysis<|message|>Need to click.<|end|>", outcome: "repaired"},
		{name: "kimi-k2", content: "<|tool_calls_section_begin|><|tool_call_begin|>functions.click:0<|tool_call_argument_begin|>{\"selector\": \"#k\"}<|tool_call_end|><|tool_calls_section_end|>",
			wantCalls: []string{`click {"selector":"#k"}`}, outcome: "repaired"},
		{name: "minimax-m2", content: "<minimax:tool_call>\n<invoke name=\"click\">\n<parameter name=\"selector\">#m</parameter>\n</invoke>\n</minimax:tool_call>",
			wantCalls: []string{`click {"selector":"#m"}`}, outcome: "repaired"},
		{name: "deepseek-v3.2", content: "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"click\">\n<｜DSML｜parameter name=\"selector\" string=\"true\">#v</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
			wantCalls: []string{`click {"selector":"#v"}`}, outcome: "repaired"},
		{name: "seed-oss", content: "<seed:tool_call>\n<function=click>\n<parameter=selector>\n#s\n</parameter>\n</function>\n</seed:tool_call>",
			wantCalls: []string{`click {"selector":"#s"}`}, outcome: "repaired"},
		{name: "internlm2", content: "I will click.<|action_start|><|plugin|>\n{\"name\": \"click\", \"parameters\": {\"selector\": \"#i\"}}<|action_end|>",
			wantCalls: []string{`click {"selector":"#i"}`}, wantText: "I will click.", outcome: "repaired"},
		{name: "command-r7b", content: `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "click", "parameters": {"selector": "#r"}}]<|END_ACTION|>`,
			wantCalls: []string{`click {"selector":"#r"}`}, outcome: "repaired"},
		{name: "hunyuan-v4", content: "<tool_calls>\n<tool_call>click<arg_key>selector</arg_key><arg_value>#y</arg_value></tool_call>\n</tool_calls>",
			wantCalls: []string{`click {"selector":"#y"}`}, outcome: "repaired"},
		{name: "command-r", content: "Plan: click it.\nAction: ```json\n[{\"tool_name\": \"click\", \"parameters\": {\"selector\": \"#c\"}}]\n```",
			wantCalls: []string{`click {"selector":"#c"}`}, wantText: "Plan: click it.", outcome: "repaired"},
		{name: "functionary", content: ">>>click\n{\"selector\": \"#f\"}",
			wantCalls: []string{`click {"selector":"#f"}`}, outcome: "repaired"},
		{name: "gemma4", content: `<|tool_call>call:click{selector:<|"|>#g<|"|>}<tool_call|>`,
			wantCalls: []string{`click {"selector":"#g"}`}, outcome: "repaired"},
		{name: "json-in-prose-when-json", content: "Clicking it now:\n{\"name\": \"click\", \"arguments\": {\"selector\": \"#p\"}}\n",
			change: func(c *policy.Config) { c.TextCalls = policy.TextCallsJSON }, wantCalls: []string{`click {"selector":"#p"}`}, wantText: "Clicking it now:", outcome: "repaired"},
		{name: "json-in-prose-stays-text-when-marked", content: "Clicking it now:\n{\"name\": \"click\", \"arguments\": {\"selector\": \"#p\"}}",
			wantText: "Clicking it now:\n{\"name\": \"click\", \"arguments\": {\"selector\": \"#p\"}}", outcome: "none"},
		{name: "undeclared-unmarked-stays-text", content: `[type(text="x")]`, wantText: `[type(text="x")]`, outcome: "none"},
		{name: "switch-off", content: `<tool_call>{"name": "click", "arguments": {"selector": "#a"}}</tool_call>`,
			change: func(c *policy.Config) { c.TextCalls = policy.TextCallsOff }, wantText: `<tool_call>{"name": "click", "arguments": {"selector": "#a"}}</tool_call>`, outcome: "none"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				up := newUpstream(t)
				scriptChat(up, fake.Reply{Text: tt.content, In: 10, Out: 5})
				srv, _ := guard(t, up, tt.change)
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				resp, body := post(t, srv, "/v1/chat/completions", clickRequest(extra))
				var calls []string
				var text, finish string
				if stream {
					a := assemble(t, body)
					for _, c := range a.Calls[0] {
						f := strings.SplitN(c, " ", 3)
						calls = append(calls, f[1]+" "+compact(f[2]))
					}
					text, finish = a.Content[0], a.Finish[0]
					if tt.outcome != "none" && !strings.Contains(a.Comment, "outcome="+tt.outcome) {
						t.Errorf("comment %q, want outcome %s", a.Comment, tt.outcome)
					}
				} else {
					if got := header(resp, "X-Toolguard-Outcome"); got != tt.outcome {
						t.Errorf("outcome %q, want %q", got, tt.outcome)
					}
					msg := gjson.GetBytes(body, "choices.0.message")
					msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
						calls = append(calls, c.Get("function.name").Str+" "+compact(c.Get("function.arguments").Str))
						return true
					})
					text, finish = msg.Get("content").Str, gjson.GetBytes(body, "choices.0.finish_reason").Str
				}
				if diff := cmp.Diff(calls, tt.wantCalls); diff != "" {
					t.Errorf("calls (-got +want):\n%s\n%s", diff, body)
				}
				if strings.TrimSpace(text) != tt.wantText {
					t.Errorf("content %q, want %q", text, tt.wantText)
				}
				if want := map[bool]string{true: "tool_calls", false: "stop"}[len(tt.wantCalls) > 0]; finish != want {
					t.Errorf("finish_reason %q, want %q", finish, want)
				}
			})
		}
	}
}

// TestTextCallsReasked: a call written as text whose arguments are invalid
// goes up the ladder like any call: the model is re-asked, and the
// correction reaches the client as a real call.
func TestTextCallsReasked(t *testing.T) {
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
		w.Header().Set("Content-Type", "application/json")
		if i == 0 {
			w.Write([]byte(fake.Chat.JSON(fake.Reply{Text: `<tool_call>{"name": "click", "arguments": {}}</tool_call>`})))
			return
		}
		w.Write([]byte(fake.Chat.JSON(fake.Reply{Calls: []fake.Call{{ID: "call_2", Name: "click", Args: `{"selector":"#a"}`}}})))
	}
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "reasked" {
		t.Fatalf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
	}
	if got := gjson.GetBytes(body, "choices.0.message.tool_calls.0.function.arguments").Str; got != `{"selector":"#a"}` {
		t.Errorf("arguments %q: %s", got, body)
	}
	reask := up.requests()[1].Body
	if tc := gjson.GetBytes(reask, `messages.#(role=="assistant").tool_calls.0`); tc.Get("function.name").Str != "click" || tc.Get("id").Str == "" {
		t.Errorf("the re-ask shows the model its call as %s", tc.Raw)
	}
}

// TestTextCallsListWithUnreadCall: a list of calls written as text, one of
// which cannot be read, is never converted in part: every call goes up the
// ladder, the one that could not be read as an invalid call, and the model
// is re-asked for it, told why.
func TestTextCallsListWithUnreadCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
				text := "<tool_call>{\"name\": \"click\", \"arguments\": {\"selector\": \"#a\"}}</tool_call>\n<tool_call>{\"name\": \"click\", \"arguments\": {\"selector\": }</tool_call>"
				if i > 0 {
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(fake.Chat.JSON(fake.Reply{Calls: []fake.Call{{ID: "call_2", Name: "click", Args: `{"selector":"#b"}`}}})))
					return
				}
				if stream && i == 0 {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Write([]byte(strings.Join(fake.Chat.Events(fake.Reply{Text: text}, 7), "")))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(fake.Chat.JSON(fake.Reply{Text: text})))
			}
			srv, _ := guard(t, up, nil)
			extra := ""
			if stream {
				extra = `,"stream":true`
			}
			_, body := post(t, srv, "/v1/chat/completions", clickRequest(extra))
			var calls []string
			if stream {
				for _, c := range assemble(t, body).Calls[0] {
					f := strings.SplitN(c, " ", 3)
					calls = append(calls, f[1]+" "+compact(f[2]))
				}
			} else {
				gjson.GetBytes(body, "choices.0.message.tool_calls").ForEach(func(_, c gjson.Result) bool {
					calls = append(calls, c.Get("function.name").Str+" "+compact(c.Get("function.arguments").Str))
					return true
				})
			}
			if diff := cmp.Diff(calls, []string{`click {"selector":"#a"}`, `click {"selector":"#b"}`}); diff != "" {
				t.Errorf("calls (-got +want):\n%s\n%s", diff, body)
			}
			reqs := up.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d upstream requests, want 2 (one re-ask)", len(reqs))
			}
			if !strings.Contains(string(reqs[1].Body), "could not be read as one JSON object") {
				t.Errorf("the re-ask does not say which call could not be read: %s", reqs[1].Body)
			}
		})
	}
}

// TestTextCallsStreamSplitAtEveryByte: however the network cuts a stream
// whose content holds a call written as text, the client gets the text
// around it as content and the call as a real call; and a stream of plain
// text with tools declared passes as it came.
func TestTextCallsStreamSplitAtEveryByte(t *testing.T) {
	content := "Sure — let me click <b>it</b>.\n<tool_call>{\"name\": \"click\", \"arguments\": {\"Selector\": \"#a\"}}</tool_call>"
	stream := strings.Join(fake.Chat.Events(fake.Reply{Text: content}, 5), "")
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
	want := assembled{
		Content: map[int]string{0: "Sure — let me click <b>it</b>.\n"},
		Calls:   map[int][]string{0: {`call_text_0_0 click {"selector":"#a"}`}},
		Finish:  map[int]string{0: "tool_calls"},
		Usage:   `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`,
		Comment: ": toolguard outcome=repaired reasks=0",
		Done:    true,
	}
	for at := 0; at <= len(stream); at++ {
		split.Store(int64(at))
		_, body := post(t, srv, "/v1/chat/completions", clickRequest(`,"stream":true`))
		if diff := cmp.Diff(assemble(t, body), want); diff != "" {
			t.Fatalf("split at byte %d (-got +want):\n%s", at, diff)
		}
	}

	// Text without the first byte of any marker is never held: it goes out
	// as it came. Text with one ([, {, <) may wait for a few bytes, and
	// goes out whole.
	plain := strings.Join(fake.Chat.Events(fake.Reply{Text: "No call here, just plain text about clicking."}, 5), "")
	up2 := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: plain})
	srv2, _ := guard(t, up2, nil)
	if _, body := post(t, srv2, "/v1/chat/completions", clickRequest(`,"stream":true`)); string(body) != plain {
		t.Errorf("plain text changed:\n got %s\nwant %s", body, plain)
	}
	marks := "No call here: just [text] with {braces} and <tags>."
	up3 := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: strings.Join(fake.Chat.Events(fake.Reply{Text: marks}, 5), "")})
	srv3, _ := guard(t, up3, nil)
	_, body := post(t, srv3, "/v1/chat/completions", clickRequest(`,"stream":true`))
	if a := assemble(t, body); a.Content[0] != marks || len(a.Calls) != 0 {
		t.Errorf("text with markers' first bytes: content %q, calls %v", a.Content[0], a.Calls)
	}
}

// TestTextHoldIsBounded: a stream of many one-byte content events that
// each may start a call costs a bounded read: past maxTextHoldWork, the
// content passes as it comes, and none of it is lost.
func TestTextHoldIsBounded(t *testing.T) {
	var b strings.Builder
	chunk := func(delta string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	const n = 20000
	for range n {
		b.WriteString(chunk(`{"content":"<"}`))
	}
	last := chunk(`{"content":"<"}`)
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: b.String()})
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/chat/completions", clickRequest(`,"stream":true`))
	if a := assemble(t, body); a.Content[0] != strings.Repeat("<", n) {
		t.Fatalf("content of %d bytes, want %d", len(a.Content[0]), n)
	}
	// Once the bound is passed, the events go out as they came.
	if !strings.Contains(string(body), last+last) {
		t.Errorf("the holding never stopped: no event passes as it came")
	}
}

// TestTextHoldIsBoundedOverChoices: the bound on what is read for holds is
// the stream's, not each choice's: 64 choices of 400 one-byte events that
// each may start a call would each stay under it, and read 64 times as
// much. Past it, every choice's content passes as it comes, none lost.
func TestTextHoldIsBoundedOverChoices(t *testing.T) {
	const choices, events = 64, 400
	chunk := func(i int, delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":` + strconv.Itoa(i) +
			`,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	var b strings.Builder
	for range events {
		for i := range choices {
			b.WriteString(chunk(i, `{"content":"<"}`, "null"))
		}
	}
	for i := range choices {
		b.WriteString(chunk(i, `{}`, `"stop"`))
	}
	b.WriteString("data: [DONE]\n\n")
	up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: b.String()})
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/chat/completions", clickRequest(`,"stream":true,"n":64`))
	a := assemble(t, body)
	for i := range choices {
		if a.Content[i] != strings.Repeat("<", events) {
			t.Fatalf("choice %d: content of %d bytes, want %d", i, len(a.Content[i]), events)
		}
	}
	// The last choice's last event went out as it came.
	if last := chunk(choices-1, `{"content":"<"}`, "null"); !strings.Contains(string(body), last+chunk(0, `{}`, `"stop"`)) {
		t.Errorf("the holding never stopped: the last choice's last event did not pass as it came")
	}
}
