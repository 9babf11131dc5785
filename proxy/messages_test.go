package proxy_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

// The click tool, declared as the Messages API declares tools, beside a
// server tool that passes untouched.
const messagesTools = `[{"name":"click","description":"Click an element",` +
	`"input_schema":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}},` +
	`{"type":"web_search_20250305","name":"web_search","max_uses":1}]`

func messagesRequest(extra string) string {
	return `{"model":"claude-test","max_tokens":256,"system":"You click things.",` +
		`"messages":[{"role":"user","content":"Click the button."}],"tools":` + messagesTools + extra + `}`
}

// scriptMessages makes up answer a first request with first and each
// re-ask with the next of corrected (the last repeats), streamed or not as
// the request asks, and records the re-asks' bodies.
func scriptMessages(up *fakeUpstream, first fake.Reply, corrected ...fake.Reply) *[][]byte {
	return script(up, fake.Messages, "msg_reask%d", first, corrected...)
}

// messageCalls lists a message's tool_use blocks as "id name input".
func messageCalls(msg gjson.Result) []string {
	var out []string
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			out = append(out, b.Get("id").Str+" "+b.Get("name").Str+" "+b.Get("input").Raw)
		}
		return true
	})
	return out
}

func TestMessages(t *testing.T) {
	valid := `{"selector":"#a"}`
	tests := []struct {
		name       string
		first      fake.Reply
		corrected  []fake.Reply
		onFailure  policy.OnFailure
		wantStatus int
		wantCalls  []string
		wantReasks int
		outcome    string
		wantText   string
		wantStop   string
	}{
		{name: "valid", first: fake.Reply{Calls: []fake.Call{click("toolu_1", valid)}}, wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid}, outcome: "valid", wantStop: "tool_use"},
		{name: "input-as-string", first: fake.Reply{Calls: []fake.Call{click("toolu_1", fake.Quote(valid))}}, wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid}, outcome: "repaired", wantStop: "tool_use"},
		{name: "bare-string", first: fake.Reply{Calls: []fake.Call{click("toolu_1", `"#a"`)}}, wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid}, outcome: "repaired", wantStop: "tool_use"},
		{name: "other-case-key", first: fake.Reply{Calls: []fake.Call{click("toolu_1", `{"Selector":"#a"}`)}}, wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid}, outcome: "repaired", wantStop: "tool_use"},
		{name: "truncated", first: fake.Reply{Calls: []fake.Call{click("toolu_1", `{"selector":"#a"`)}}, wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid}, outcome: "repaired", wantStop: "tool_use"},
		{name: "tool-name-case", first: fake.Reply{Calls: []fake.Call{{ID: "toolu_1", Name: "Click", Args: valid}}}, wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid}, outcome: "repaired", wantStop: "tool_use"},
		{
			name: "missing-field-reask", first: fake.Reply{Text: "On it.", Calls: []fake.Call{click("toolu_1", `{}`)}, In: 10, Out: 2},
			corrected:  []fake.Reply{{Calls: []fake.Call{click("toolu_2", valid)}, In: 20, Out: 3}},
			wantStatus: 200, wantCalls: []string{"toolu_2 click " + valid}, wantReasks: 1, outcome: "reasked", wantText: "On it.", wantStop: "tool_use",
		},
		{
			name: "parallel-one-invalid", first: fake.Reply{Calls: []fake.Call{click("toolu_1", valid), click("toolu_2", `{}`)}},
			corrected:  []fake.Reply{{Calls: []fake.Call{click("toolu_3", `{"selector":"#b"}`)}}},
			wantStatus: 200, wantCalls: []string{"toolu_1 click " + valid, `toolu_3 click {"selector":"#b"}`}, wantReasks: 1, outcome: "reasked", wantStop: "tool_use",
		},
		{
			name: "never-corrects", first: fake.Reply{Calls: []fake.Call{click("toolu_1", `{}`)}},
			corrected:  []fake.Reply{{Calls: []fake.Call{click("toolu_2", `{}`)}}},
			wantStatus: 400, wantReasks: 2, outcome: "failed",
		},
		{
			name: "never-corrects-drop", first: fake.Reply{Text: "Clicking.", Calls: []fake.Call{click("toolu_1", `{}`)}},
			corrected: []fake.Reply{{Calls: []fake.Call{click("toolu_2", `{}`)}}}, onFailure: policy.FailDrop,
			wantStatus: 200, wantReasks: 2, outcome: "failed", wantText: "Clicking.", wantStop: "end_turn",
		},
		{name: "undeclared", first: fake.Reply{Calls: []fake.Call{{ID: "toolu_1", Name: "type", Args: `{}`}}}, corrected: []fake.Reply{{Text: "sorry"}},
			wantStatus: 400, wantReasks: 2, outcome: "failed"},
		{name: "text-only", first: fake.Reply{Text: "Hello."}, wantStatus: 200, outcome: "none", wantText: "Hello.", wantStop: "end_turn"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				up := newUpstream(t)
				reasks := scriptMessages(up, tt.first, tt.corrected...)
				srv, _ := guard(t, up, func(c *policy.Config) {
					c.MaxReasks = 2
					if tt.onFailure != "" {
						c.OnFailure = tt.onFailure
					}
				})
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				resp, body := post(t, srv, "/v1/messages", messagesRequest(extra))
				if len(*reasks) != tt.wantReasks {
					t.Errorf("%d re-asks, want %d", len(*reasks), tt.wantReasks)
				}
				if tt.wantStatus == 400 {
					checkMessagesFailure(t, resp, body, stream, tt.outcome)
					return
				}
				final := assembledMessage(t, resp, body, stream, tt.outcome)
				if diff := cmp.Diff(messageCalls(final), tt.wantCalls); diff != "" {
					t.Errorf("calls in the message (-got +want):\n%s", diff)
				}
				if got := final.Get("stop_reason").Str; got != tt.wantStop {
					t.Errorf("stop_reason %q, want %q", got, tt.wantStop)
				}
				if tt.wantText != "" && final.Get(`content.#(type=="text").text`).Str != tt.wantText {
					t.Errorf("text lost: %s", final.Raw)
				}
				if tt.wantReasks > 0 && tt.first.In != 0 {
					if got := final.Get("usage.input_tokens").Int(); got != 30 {
						t.Errorf("usage.input_tokens %d, want the sum 30: %s", got, final.Get("usage").Raw)
					}
					if got := final.Get("usage.output_tokens").Int(); got != 5 {
						t.Errorf("usage.output_tokens %d, want the sum 5: %s", got, final.Get("usage").Raw)
					}
					if id := final.Get("id").Str; id != "msg_fake" {
						t.Errorf("message id %q, want the first attempt's", id)
					}
				}
			})
		}
	}
}

// checkMessagesFailure checks that a reply to /v1/messages is toolguard's
// failure in Anthropic's shape: an error event, or a 400 with the outcome.
func checkMessagesFailure(t *testing.T, resp *http.Response, body []byte, stream bool, outcome string) {
	t.Helper()
	if stream {
		s := readMessagesStream(t, body)
		if s.err.Get("type").Str != "error" || s.err.Get("error.type").Str != "invalid_request_error" || s.err.Get("error.code").Str != "tool_call_invalid" {
			t.Fatalf("stream ends with error %s, want tool_call_invalid:\n%s", s.err.Raw, body)
		}
		return
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != outcome {
		t.Errorf("outcome %q, want %q", got, outcome)
	}
	e := mustJSON(t, body)
	if e.Get("type").Str != "error" || e.Get("error.type").Str != "invalid_request_error" ||
		e.Get("error.code").Str != "tool_call_invalid" || !e.Get("error.details.0.errors").IsArray() ||
		!strings.Contains(e.Get("error.message").Str, "could not be made valid") {
		t.Errorf("failure body is not Anthropic's error shape: %s", body)
	}
	if header(resp, "X-Should-Retry") != "false" {
		t.Errorf("x-should-retry %q", header(resp, "X-Should-Retry"))
	}
}

// assembledMessage is the message a client assembles from a successful
// reply to /v1/messages, streamed or not, after checking that toolguard
// reported outcome (a stream says nothing for "none").
func assembledMessage(t *testing.T, resp *http.Response, body []byte, stream bool, outcome string) gjson.Result {
	t.Helper()
	if stream {
		s := readMessagesStream(t, body)
		if s.err.Exists() {
			t.Fatalf("stream ends with error %s", s.err.Raw)
		}
		if outcome != "none" && !strings.Contains(s.comment, "outcome="+outcome) {
			t.Errorf("comment %q, want outcome %s", s.comment, outcome)
		}
		return s.message
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != outcome {
		t.Errorf("outcome %q, want %q", got, outcome)
	}
	return mustJSON(t, body)
}

// messagesStream is a streamed message as Anthropic's SDKs assemble it
// (MessageStream's accumulation): the message of message_start, each block
// appended at its content_block_start and its deltas applied by index, a
// tool_use's input parsed from its JSON deltas, the message_delta's stop
// reason and usage over the snapshot's.
type messagesStream struct {
	message gjson.Result
	err     gjson.Result // the error event's data, if any
	comment string
}

func readMessagesStream(t *testing.T, body []byte) messagesStream {
	t.Helper()
	var out messagesStream
	msg := ""
	var blocks []string
	var inputs []strings.Builder
	for _, ev := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		if ev == "" {
			continue
		}
		var name, data string
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, ": toolguard"):
				out.comment = line
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data += line[len("data: "):]
			}
		}
		if data == "" {
			continue
		}
		d := gjson.Parse(data)
		if !d.IsObject() || d.Get("type").Str != name {
			t.Fatalf("event %q with data %s", name, data)
		}
		i := int(d.Get("index").Int())
		switch name {
		case "message_start":
			msg = d.Get("message").Raw
		case "content_block_start":
			if i != len(blocks) {
				t.Fatalf("block %d starts where %d is due:\n%s", i, len(blocks), body)
			}
			blocks = append(blocks, d.Get("content_block").Raw)
			inputs = append(inputs, strings.Builder{})
		case "content_block_delta":
			if i >= len(blocks) {
				t.Fatalf("delta for block %d of %d:\n%s", i, len(blocks), body)
			}
			switch dl := d.Get("delta"); dl.Get("type").Str {
			case "text_delta":
				blocks[i], _ = sjson.Set(blocks[i], "text", gjson.Get(blocks[i], "text").Str+dl.Get("text").Str)
			case "thinking_delta":
				blocks[i], _ = sjson.Set(blocks[i], "thinking", gjson.Get(blocks[i], "thinking").Str+dl.Get("thinking").Str)
			case "signature_delta":
				blocks[i], _ = sjson.Set(blocks[i], "signature", dl.Get("signature").Str)
			case "input_json_delta":
				inputs[i].WriteString(dl.Get("partial_json").Str)
			}
		case "content_block_stop":
			if in := inputs[i].String(); in != "" {
				if !gjson.Valid(in) {
					t.Fatalf("block %d's input is not JSON: %s", i, in)
				}
				blocks[i], _ = sjson.SetRaw(blocks[i], "input", in)
			}
		case "message_delta":
			msg, _ = sjson.Set(msg, "stop_reason", d.Get("delta.stop_reason").Value())
			d.Get("usage").ForEach(func(k, v gjson.Result) bool {
				msg, _ = sjson.SetRaw(msg, "usage."+k.Str, v.Raw)
				return true
			})
		case "error":
			out.err = d
		}
	}
	msg, _ = sjson.SetRaw(msg, "content", "["+strings.Join(blocks, ",")+"]")
	out.message = gjson.Parse(msg)
	return out
}

// TestMessagesValidIsByteIdentical: a reply that needs no change reaches
// the client as the upstream sent it, with its thinking block and
// signature.
func TestMessagesValidIsByteIdentical(t *testing.T) {
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
		`{"type":"thinking","thinking":"The user wants a click.","signature":"EqQBCkYIARgCIkA="},` +
		`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},` +
		`{"type":"text","text":"Clicking."},{"type":"tool_use","id":"toolu_1","name":"click","input":{ "selector" : "#a" }}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":2}}`
	up := newUpstream(t, reply{Body: want})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/messages", messagesRequest(""))
	if string(body) != want || header(resp, "X-Toolguard-Outcome") != "valid" {
		t.Errorf("the body changed (outcome %q):\n got %s\nwant %s", header(resp, "X-Toolguard-Outcome"), body, want)
	}
	// Its usage, after the content, is counted: the input tokens with the
	// cache's.
	got := series(scrape(t, srv), "toolguard_tokens_total")
	if got["toolguard_tokens_total{attempt=first,type=prompt}"] != 7 || got["toolguard_tokens_total{attempt=first,type=completion}"] != 7 {
		t.Errorf("tokens counted: %v", got)
	}
}

// TestMessagesStreamWholeInput: a tool_use block whose input comes whole in
// its content_block_start, with no delta, is checked as that input, under
// its name and id.
func TestMessagesStreamWholeInput(t *testing.T) {
	whole := strings.Replace(thinkingStream(), `"name":"click","input":{}`, `"name":"click","input":{"selector":"#a"}`, 1)
	for _, tc := range []struct {
		stream, outcome string
	}{
		{whole, "valid"},
		{strings.Replace(whole, `"input":{"selector":"#a"}`, `"input":{"Selector":"#a"}`, 1), "repaired"},
	} {
		up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: tc.stream})
		srv, _ := guard(t, up, nil)
		_, body := post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
		if !strings.Contains(string(body), ": toolguard outcome="+tc.outcome+" ") {
			t.Fatalf("want outcome %s:\n%s", tc.outcome, body)
		}
		readMessagesStream(t, body) // one stream a client reads whole
		if !strings.Contains(string(body), `"id":"toolu_1","name":"click"`) {
			t.Errorf("the call's id and name are not the model's:\n%s", body)
		}
	}
}

// TestMessagesMendedCallsAreWrittenInPlace: a mended tool_use goes back in
// the reply the model sent, with only its input (and a mended name)
// written over: every other byte, thinking blocks and signatures included,
// is the model's.
func TestMessagesMendedCallsAreWrittenInPlace(t *testing.T) {
	reply := func(blocks, stop string) string {
		return "{\n  \"id\": \"msg_1\",\n  \"type\": \"message\",\n  \"role\": \"assistant\",\n  \"content\": [\n    " +
			`{"type": "thinking", "thinking": "A click <now>.", "signature": "EqQBCkYIARgCIkA="},` + "\n    " + blocks +
			"\n  ],\n  \"stop_reason\": " + stop + ",\n  \"usage\": {\"input_tokens\": 5, \"output_tokens\": 7}\n}\n"
	}
	for _, tc := range []struct{ name, reply, from, to string }{
		{name: "a key in another case",
			reply: reply(`{"type": "tool_use", "id": "toolu_1", "name": "click", "input": {"Selector": "#a"}}`, `"tool_use"`),
			from:  `{"Selector": "#a"}`, to: `{"selector":"#a"}`},
		{name: "input as a string, the name in another style, second of two",
			reply: reply(`{"type": "tool_use", "id": "toolu_1", "name": "click", "input": {"selector": "#a"}},`+"\n    "+
				`{"type": "tool_use", "id": "toolu_2", "input": "{\"selector\": \"#b\"}", "name": "Click"}`, `"tool_use"`),
			from: `"input": "{\"selector\": \"#b\"}", "name": "Click"}`, to: `"input": {"selector": "#b"}, "name": "click"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWrittenInPlace(t, "/v1/messages", messagesRequest(""), tc.reply, tc.from, tc.to)
		})
	}
}

// TestMessagesReaskIsStateless checks the re-ask's body: the request's
// messages, the model's turn with its tool_use, a user turn with a
// tool_result (is_error, the errors) and the instruction; system and tools
// kept; not streamed.
func TestMessagesReaskIsStateless(t *testing.T) {
	up := newUpstream(t)
	reasks := scriptMessages(up, fake.Reply{Text: "Sure.", Calls: []fake.Call{click("toolu_1", `{}`), click("toolu_2", `{"selector":"#b"}`)}, In: 1, Out: 1},
		fake.Reply{Calls: []fake.Call{click("toolu_3", `{"selector":"#a"}`)}, In: 2, Out: 2})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/messages", messagesRequest(""))
	if resp.StatusCode != 200 || len(*reasks) != 1 {
		t.Fatalf("status %d, %d re-asks: %s", resp.StatusCode, len(*reasks), body)
	}
	re := gjson.ParseBytes((*reasks)[0])
	if re.Get("stream").Exists() || re.Get("system").Str != "You click things." || re.Get("tools").Raw != messagesTools {
		t.Errorf("re-ask: stream %v system %v tools %v", re.Get("stream"), re.Get("system"), re.Get("tools"))
	}
	msgs := re.Get("messages").Array()
	if len(msgs) != 3 {
		t.Fatalf("re-ask has %d messages, want 3: %s", len(msgs), re.Get("messages").Raw)
	}
	a := msgs[1]
	if a.Get("role").Str != "assistant" || a.Get("content.0.text").Str != "Sure." ||
		a.Get("content.1.id").Str != "toolu_1" || a.Get("content.1.input").Raw != "{}" || a.Get("content.2.id").Str != "toolu_2" {
		t.Errorf("the model's turn is replayed as %s", a.Raw)
	}
	u := msgs[2].Get("content").Array()
	if msgs[2].Get("role").Str != "user" || len(u) != 3 {
		t.Fatalf("the user turn is %s", msgs[2].Raw)
	}
	if u[0].Get("type").Str != "tool_result" || u[0].Get("tool_use_id").Str != "toolu_1" || !u[0].Get("is_error").Bool() ||
		!strings.Contains(u[0].Get("content").Str, "/selector: missing required property") {
		t.Errorf("the feedback is %s", u[0].Raw)
	}
	if u[1].Get("tool_use_id").Str != "toolu_2" || u[1].Get("is_error").Exists() || !strings.Contains(u[1].Get("content").Str, "valid") {
		t.Errorf("the valid call's result is %s", u[1].Raw)
	}
	if u[2].Get("type").Str != "text" || !strings.Contains(u[2].Get("text").Str, "Send corrected tool calls") {
		t.Errorf("the instruction is %s", u[2].Raw)
	}
	final := mustJSON(t, body)
	if got := final.Get("usage.input_tokens").Int() + final.Get("usage.output_tokens").Int(); got != 6 {
		t.Errorf("usage %s, want the sums", final.Get("usage").Raw)
	}
}

// TestMessagesAuth: a client key is accepted as x-api-key, as Anthropic's
// clients send it, and never reaches the upstream; the upstream's key goes
// as x-api-key; anthropic-version passes as sent; errors are in Anthropic's
// shape.
func TestMessagesAuth(t *testing.T) {
	up := newUpstream(t, reply{Body: fake.Messages.JSON(fake.Reply{Text: "hi"})})
	srv, _ := guard(t, up, func(c *policy.Config) {
		c.APIKeys = []string{"tg-client-key"}
		c.UpstreamAPIKey = "sk-ant-upstream"
	})
	hdr := http.Header{"X-Api-Key": {"tg-client-key"}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/messages", messagesRequest(""), hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := up.requests()[0].Header
	if got.Get("X-Api-Key") != "sk-ant-upstream" || got.Get("Authorization") != "" || got.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("upstream headers: x-api-key %q authorization %q anthropic-version %q", got.Get("X-Api-Key"), got.Get("Authorization"), got.Get("Anthropic-Version"))
	}
	hdr.Set("X-Api-Key", "wrong")
	resp, body = do(t, t.Context(), srv, http.MethodPost, "/v1/messages", messagesRequest(""), hdr)
	if e := mustJSON(t, body); resp.StatusCode != 401 || e.Get("type").Str != "error" || e.Get("error.type").Str != "authentication_error" {
		t.Errorf("unknown key: %d %s", resp.StatusCode, body)
	}
}

// TestMessagesRefusals: what toolguard cannot read as the upstream would
// is refused, in Anthropic's error shape, before it goes upstream.
func TestMessagesRefusals(t *testing.T) {
	up := newUpstream(t, reply{Body: fake.Messages.JSON(fake.Reply{Text: "x"})})
	srv, _ := guard(t, up, nil)
	const click = `{"name":"click","input_schema":{"type":"object"}}`
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ body, code string }{
		{`{"model":"m",` + msgs + `,"tools":[` + click + `,` + click + `]}`, "tools_ambiguous"},
		{`{"model":"m",` + msgs + `,"tools":[{"input_schema":{}}]}`, "tools_invalid"},
		{`{"model":"m",` + msgs + `,"tools":[{"name":"click","input_schema":"x"}]}`, "tools_invalid"},
		{`{"model":"m",` + msgs + `,"tools":{"name":"click"}}`, "tools_ambiguous"},
		{`{"model":"m",` + msgs + `,"Tools":[]}`, "request_ambiguous"},
		{`{"model":"m",` + msgs + `,"tools":[],"tools":[` + click + `]}`, "request_ambiguous"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"click","input":{},"input":{"a":1}}]}],"tools":[` + click + `]}`, "request_ambiguous"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"click","input":{}},{"type":"tool_call","name":"click"}]}],"tools":[` + click + `]}`, "request_ambiguous"},
	} {
		resp, body := post(t, srv, "/v1/messages", tc.body)
		e := mustJSON(t, body)
		if resp.StatusCode != 400 || e.Get("type").Str != "error" || e.Get("error.type").Str != "invalid_request_error" || e.Get("error.code").Str != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, resp.StatusCode, body, tc.code)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("%d refused requests reached the upstream", n)
	}
}

// TestMessagesReplyRefusals: a reply toolguard cannot read as a client
// would is never passed on: 502 in Anthropic's shape.
func TestMessagesReplyRefusals(t *testing.T) {
	for _, give := range []string{
		`{"type":"message","content":[{"type":"tool_use","id":"t","name":"click","input":{},"input":{"selector":"#a"}}],"stop_reason":"tool_use"}`,
		`{"type":"message","content":[{"type":"tool_use","id":"t","name":"click","input":{"selector":"#a"}},{"type":"tool_call","id":"u"}],"stop_reason":"tool_use"}`,
		`{"type":"message","content":{"type":"tool_use","id":"t","name":"click","input":{}},"stop_reason":"tool_use"}`,
		`{"type":"message","Content":[],"content":[{"type":"tool_use","id":"t","name":"click","input":{}}]}`,
		`{"type":"message","content":[{"type":"tool_use","id":"t","name":7,"input":{}}]}`,
	} {
		up := newUpstream(t, reply{Body: give})
		srv, _ := guard(t, up, nil)
		resp, body := post(t, srv, "/v1/messages", messagesRequest(""))
		if e := mustJSON(t, body); resp.StatusCode != 502 || e.Get("type").Str != "error" || e.Get("error.type").Str != "api_error" {
			t.Errorf("%s: %d %s, want 502 api_error", give, resp.StatusCode, body)
		}
	}
}

// TestMessagesPassThrough: error replies, requests without custom tools
// and the other Messages routes pass unchanged.
func TestMessagesPassThrough(t *testing.T) {
	errBody := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	up := newUpstream(t, reply{Status: 529, Body: errBody})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/messages", messagesRequest(""))
	if resp.StatusCode != 529 || string(body) != errBody {
		t.Errorf("error reply: %d %s", resp.StatusCode, body)
	}
	invalid := fake.Messages.JSON(fake.Reply{Calls: []fake.Call{click("toolu_1", `{}`)}})
	up = newUpstream(t, reply{Body: invalid})
	srv, _ = guard(t, up, nil)
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		resp, body = post(t, srv, path, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`)
		if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "" || string(body) != invalid {
			t.Errorf("%s without custom tools: status %d outcome %q", path, resp.StatusCode, header(resp, "X-Toolguard-Outcome"))
		}
	}
}

// thinkingStream is a stream of a model that thinks, signs its thinking,
// redacts some, then calls click: events is the call's deltas.
func thinkingStream(args ...string) string {
	ev := func(typ, rest string) string {
		return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"" + rest + "}\n\n"
	}
	s := ev("message_start", `,"message":{"id":"msg_t","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}`) +
		ev("content_block_start", `,"index":0,"content_block":{"type":"thinking","thinking":"","signature":""}`) +
		ev("content_block_delta", `,"index":0,"delta":{"type":"thinking_delta","thinking":"The user wants a click."}`) +
		ev("content_block_delta", `,"index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIARgCIkA="}`) +
		ev("content_block_stop", `,"index":0`) +
		ev("content_block_start", `,"index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}`) +
		ev("content_block_stop", `,"index":1`) +
		ev("ping", "") +
		ev("content_block_start", `,"index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"click","input":{}}`)
	for _, a := range args {
		s += ev("content_block_delta", `,"index":2,"delta":{"type":"input_json_delta","partial_json":`+fake.Quote(a)+`}`)
	}
	return s + ev("content_block_stop", `,"index":2`) +
		ev("content_block_start", `,"index":3,"content_block":{"type":"text","text":""}`) +
		ev("content_block_delta", `,"index":3,"delta":{"type":"text_delta","text":"Done — ünïcode."}`) +
		ev("content_block_stop", `,"index":3`) +
		ev("message_delta", `,"delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}`) +
		ev("message_stop", "")
}

// TestMessagesStreamValidIsByteIdentical: a stream that needs no change
// reaches the client as the upstream sent it, thinking, signature and
// redacted thinking included, with the outcome comment added before its
// message_delta.
func TestMessagesStreamValidIsByteIdentical(t *testing.T) {
	want := thinkingStream(`{"selec`, `tor":"#a"}`)
	up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: want})
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
	got := strings.Replace(string(body), ": toolguard outcome=valid reasks=0\n\n", "", 1)
	if got == string(body) {
		t.Errorf("no outcome comment in the stream")
	}
	if got != want {
		t.Errorf("the stream changed:\n got %s\nwant %s", body, want)
	}
}

// TestMessagesStreamSplitAtEveryByte: however the network cuts the
// upstream's stream, the client gets the same consistent stream, with the
// mended call renumbered after the text that passed it.
func TestMessagesStreamSplitAtEveryByte(t *testing.T) {
	stream := thinkingStream(`{"Selec`, `tor":"#a"}`)
	up, split := splitUpstream(t, stream)
	srv, _ := guard(t, up, nil)
	var first []byte
	for at := 0; at <= len(stream); at++ {
		split.Store(int64(at))
		_, body := post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
		s := readMessagesStream(t, body)
		if diff := cmp.Diff(messageCalls(s.message), []string{`toolu_1 click {"selector":"#a"}`}); diff != "" {
			t.Fatalf("split at %d (-got +want):\n%s\n%s", at, diff, body)
		}
		if first == nil {
			first = body
			m := s.message
			if m.Get("content.0.signature").Str != "EqQBCkYIARgCIkA=" || m.Get("content.1.data").Str != "EmwKAhgBEgy3va3pzix" ||
				m.Get("content.2.text").Str != "Done — ünïcode." || m.Get("content.3.type").Str != "tool_use" ||
				m.Get("stop_reason").Str != "tool_use" || !strings.Contains(s.comment, "outcome=repaired") {
				t.Fatalf("the message the client assembles: %s\n%s", m.Raw, body)
			}
		} else if !bytes.Equal(body, first) {
			t.Fatalf("split at %d: the stream differs from the one at 0", at)
		}
	}
}

// TestMessagesStreamRefusals: a stream toolguard cannot read as every
// client would ends in Anthropic's error event, never passes a call
// unchecked.
func TestMessagesStreamRefusals(t *testing.T) {
	valid := thinkingStream(`{"selector":"#a"}`)
	for name, give := range map[string]string{
		"truncated":       valid[:strings.Index(valid, "event: message_delta")],
		"name-not-type":   strings.Replace(valid, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}", "event: ping\ndata: {\"type\":\"content_block_stop\",\"index\":2}", 1),
		"unknown-block":   strings.Replace(valid, `"type":"redacted_thinking"`, `"type":"tool_call"`, 1),
		"duplicate-key":   strings.Replace(valid, `"name":"click","input":{}`, `"name":"click","name":"type","input":{}`, 1),
		"index-skipped":   strings.Replace(valid, `"index":3,"content_block"`, `"index":5,"content_block"`, 1),
		"delta-after-end": strings.Replace(valid, "event: message_stop", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\nevent: message_stop", 1),
	} {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: give})
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/messages", messagesRequest(`,"stream":true`))
			s := readMessagesStream(t, body)
			if s.err.Get("type").Str != "error" || s.err.Get("error.type").Str != "api_error" {
				t.Errorf("no error event at the end:\n%s", body)
			}
		})
	}
}

// TestMessagesHistory: a tool_use input the client sends back as a string
// goes upstream as the object it is (mended in form); a history of objects
// goes byte for byte.
func TestMessagesHistory(t *testing.T) {
	for _, tc := range []struct{ give, want string }{
		{`"{\"selector\":\"#a\"}"`, `{"selector":"#a"}`},
		{`"{\"selector\": \"#a\""`, `{"selector":"#a"}`},
		{`{"selector": "#a"}`, `{"selector": "#a"}`},
		{`"#a"`, `"#a"`},
	} {
		up := newUpstream(t, reply{Body: fake.Messages.JSON(fake.Reply{Text: "ok"})})
		srv, _ := guard(t, up, nil)
		body := `{"model":"m","max_tokens":9,"tools":` + messagesTools + `,"messages":[{"role":"user","content":"go"},` +
			`{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"click","input":` + tc.give + `}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"clicked"}]}]}`
		if resp, got := post(t, srv, "/v1/messages", body); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.give, resp.StatusCode, got)
		}
		sent := up.requests()[0].Body
		if got := gjson.GetBytes(sent, "messages.1.content.1.input").Raw; got != tc.want {
			t.Errorf("input %s went upstream as %s, want %s", tc.give, got, tc.want)
		}
		if tc.give == tc.want && string(sent) != body {
			t.Errorf("a history that needs nothing changed:\n got %s\nwant %s", sent, body)
		}
	}
}
