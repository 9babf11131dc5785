package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

// The click tool, declared as the Responses API declares functions: flat.
const responsesTools = `[{"type":"function","name":"click","description":"Click an element","strict":false,` +
	`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}},` +
	`{"type":"web_search"}]`

func responsesRequest(extra string) string {
	return `{"model":"gpt-test","input":"Click the button.","tools":` + responsesTools + extra + `}`
}

func click(id, args string) fake.Call { return fake.Call{ID: id, Name: "click", Args: args} }

// scriptResponses makes up answer a first request with first and each
// re-ask with the next of corrected (the last repeats), streamed or not as
// the request asks, and records the re-asks' bodies.
func scriptResponses(up *fakeUpstream, first fake.Reply, corrected ...fake.Reply) *[][]byte {
	return script(up, fake.Responses, "resp_reask%d", first, corrected...)
}

// script is scriptResponses in format f; the replies to re-asks get the ids
// idFormat numbers.
func script(up *fakeUpstream, f fake.Format, idFormat string, first fake.Reply, corrected ...fake.Reply) *[][]byte {
	var reasks [][]byte
	var n atomic.Int32
	up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
		body := up.requests()[i].Body // serve has read r.Body
		reply := first
		if f.Reasked(body) {
			reasks = append(reasks, body)
			i := int(n.Add(1)) - 1
			reply = corrected[min(i, len(corrected)-1)]
			reply.ID = fmt.Sprintf(idFormat, i+1)
		}
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range f.Events(reply, 5) {
				io.WriteString(w, ev)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, f.JSON(reply))
	}
	return &reasks
}

// responseCalls lists a response's function calls as "call_id name args".
func responseCalls(resp gjson.Result) []string {
	var out []string
	resp.Get("output").ForEach(func(_, it gjson.Result) bool {
		if it.Get("type").Str == "function_call" {
			out = append(out, it.Get("call_id").Str+" "+it.Get("name").Str+" "+it.Get("arguments").Str)
		}
		return true
	})
	return out
}

func TestResponses(t *testing.T) {
	valid := `{"selector":"#a"}`
	tests := []struct {
		name       string
		first      fake.Reply
		corrected  []fake.Reply
		wantStatus int
		wantCalls  []string
		wantReasks int
		outcome    string
		wantText   string
	}{
		{name: "valid", first: fake.Reply{Calls: []fake.Call{click("call_1", valid)}}, wantStatus: 200, wantCalls: []string{"call_1 click " + valid}, outcome: "valid"},
		{name: "bare-string", first: fake.Reply{Calls: []fake.Call{click("call_1", `"#a"`)}}, wantStatus: 200, wantCalls: []string{"call_1 click " + valid}, outcome: "repaired"},
		{name: "other-case-key", first: fake.Reply{Calls: []fake.Call{click("call_1", `{"Selector":"#a"}`)}}, wantStatus: 200, wantCalls: []string{"call_1 click " + valid}, outcome: "repaired"},
		{name: "truncated", first: fake.Reply{Calls: []fake.Call{click("call_1", `{"selector":"#a"`)}}, wantStatus: 200, wantCalls: []string{"call_1 click " + valid}, outcome: "repaired"},
		{
			name: "missing-field-reask", first: fake.Reply{Text: "On it.", Calls: []fake.Call{click("call_1", `{}`)}, In: 10, Out: 2},
			corrected:  []fake.Reply{{Calls: []fake.Call{click("call_2", valid)}, In: 20, Out: 3}},
			wantStatus: 200, wantCalls: []string{"call_2 click " + valid}, wantReasks: 1, outcome: "reasked", wantText: "On it.",
		},
		{
			name: "parallel-one-invalid", first: fake.Reply{Calls: []fake.Call{click("call_1", valid), click("call_2", `{}`)}},
			corrected:  []fake.Reply{{Calls: []fake.Call{click("call_3", `{"selector":"#b"}`)}}},
			wantStatus: 200, wantCalls: []string{"call_1 click " + valid, `call_3 click {"selector":"#b"}`}, wantReasks: 1, outcome: "reasked",
		},
		{
			name: "never-corrects", first: fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}},
			corrected:  []fake.Reply{{Calls: []fake.Call{click("call_2", `{}`)}}},
			wantStatus: 400, wantReasks: 2, outcome: "failed",
		},
		{name: "undeclared", first: fake.Reply{Calls: []fake.Call{{ID: "call_1", Name: "type", Args: `{}`}}}, corrected: []fake.Reply{{Text: "sorry"}},
			wantStatus: 400, wantReasks: 2, outcome: "failed"},
		{name: "text-only", first: fake.Reply{Text: "Hello."}, wantStatus: 200, outcome: "none", wantText: "Hello."},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				up := newUpstream(t)
				reasks := scriptResponses(up, tt.first, tt.corrected...)
				srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 2 })
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				resp, body := post(t, srv, "/v1/responses", responsesRequest(extra))
				if len(*reasks) != tt.wantReasks {
					t.Errorf("%d re-asks, want %d", len(*reasks), tt.wantReasks)
				}
				var final gjson.Result
				if stream {
					s := readResponseStream(t, body)
					if tt.wantStatus == 400 {
						if s.errCode != "tool_call_invalid" {
							t.Fatalf("stream ends with error %q, want tool_call_invalid:\n%s", s.errCode, body)
						}
						return
					}
					if s.comment != "" && !strings.Contains(s.comment, "outcome="+tt.outcome) {
						t.Errorf("comment %q, want outcome %s", s.comment, tt.outcome)
					}
					if tt.outcome != "none" && tt.outcome != "valid" && s.comment == "" {
						t.Errorf("no outcome comment")
					}
					final = s.completed
					if diff := cmp.Diff(s.calls, tt.wantCalls); diff != "" {
						t.Errorf("calls the client assembled (-got +want):\n%s", diff)
					}
				} else {
					if resp.StatusCode != tt.wantStatus {
						t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
					}
					if got := header(resp, "X-Toolguard-Outcome"); got != tt.outcome {
						t.Errorf("outcome %q, want %q", got, tt.outcome)
					}
					if tt.wantStatus == 400 {
						if code := gjson.GetBytes(body, "error.code").Str; code != "tool_call_invalid" || !gjson.GetBytes(body, "error.details.0.errors").IsArray() {
							t.Errorf("failure body %s", body)
						}
						return
					}
					final = mustJSON(t, body)
				}
				if diff := cmp.Diff(responseCalls(final), tt.wantCalls); diff != "" {
					t.Errorf("calls in the response (-got +want):\n%s", diff)
				}
				if tt.wantText != "" && final.Get(`output.#(type=="message").content.0.text`).Str != tt.wantText {
					t.Errorf("text lost: %s", final.Raw)
				}
				if tt.wantReasks > 0 {
					if got := final.Get("usage.input_tokens").Int(); got != 30 && tt.first.In != 0 {
						t.Errorf("usage.input_tokens %d, want the sum 30", got)
					}
					if id := final.Get("id").Str; id != "resp_fake" {
						t.Errorf("response id %q, want the first attempt's", id)
					}
				}
			})
		}
	}
}

// TestResponsesValidIsByteIdentical: a reply that needs no change reaches
// the client as the upstream sent it, streamed or not (a stream with the
// outcome comment added before its last event, as a chat stream has it).
func TestResponsesValidIsByteIdentical(t *testing.T) {
	r := fake.Reply{Text: "Clicking.", Calls: []fake.Call{click("call_1", `{"selector":"#a"}`)}}
	for _, stream := range []bool{false, true} {
		up := newUpstream(t)
		want := fake.Responses.JSON(r)
		ct := "application/json"
		extra := ""
		if stream {
			want, ct, extra = strings.Join(fake.Responses.Events(r, 4), ""), "text/event-stream", `,"stream":true`
		}
		up.replies = []reply{{Header: http.Header{"Content-Type": {ct}}, Body: want}}
		srv, _ := guard(t, up, nil)
		_, body := post(t, srv, "/v1/responses", responsesRequest(extra))
		got := strings.Replace(string(body), ": toolguard outcome=valid reasks=0\n\n", "", 1)
		if stream && got == string(body) {
			t.Errorf("no outcome comment in the stream")
		}
		if got != want {
			t.Errorf("stream=%v: the body changed:\n got %s\nwant %s", stream, body, want)
		}
	}
}

// TestResponsesMendedCallsAreWrittenInPlace: a mended function_call goes
// back in the response the model sent, with only its arguments (and a
// mended name) written over: every other byte is the model's.
func TestResponsesMendedCallsAreWrittenInPlace(t *testing.T) {
	response := func(items string) string {
		return "{\n  \"id\": \"resp_1\",\n  \"object\": \"response\",\n  \"output\": [\n    " + items +
			"\n  ],\n  \"usage\": {\"input_tokens\": 1, \"output_tokens\": 1, \"total_tokens\": 2}\n}\n"
	}
	message := `{"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Clicking <now>."}]}`
	for _, tc := range []struct{ name, reply, from, to string }{
		{name: "after a message",
			reply: response(message + ",\n    " + `{"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "click", "arguments": "{\"Selector\": \"#a\"}"}`),
			from:  `"{\"Selector\": \"#a\"}"`, to: `"{\"selector\":\"#a\"}"`},
		{name: "second of two calls, name first in another style",
			reply: response(`{"type": "function_call", "call_id": "c1", "name": "click", "arguments": "{\"selector\": \"#a\"}"},` +
				"\n    " + `{"type": "function_call", "call_id": "c2", "arguments": "{'selector': '#b'}", "name": "Click"}`),
			from: `"arguments": "{'selector': '#b'}", "name": "Click"}`, to: `"arguments": "{\"selector\":\"#b\"}", "name": "click"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWrittenInPlace(t, "/v1/responses", responsesRequest(""), tc.reply, tc.from, tc.to)
		})
	}
}

// TestResponsesMendedNamespacedCall: a mended call of a namespace's
// function goes back with its arguments and its name mended, and its
// namespace kept.
func TestResponsesMendedNamespacedCall(t *testing.T) {
	tools := `[{"type":"namespace","name":"browser","tools":[{"type":"function","name":"click",` +
		`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}]`
	up := newUpstream(t, reply{Body: `{"id":"resp_1","object":"response","output":[{"type":"function_call","call_id":"c1",` +
		`"namespace":"browser","name":"Click","arguments":"{\"Selector\":\"#a\"}"}]}`})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/responses", `{"model":"gpt-test","input":"Click the button.","tools":`+tools+`}`)
	if header(resp, "X-Toolguard-Outcome") != "repaired" {
		t.Fatalf("outcome %q, want repaired: %s", header(resp, "X-Toolguard-Outcome"), body)
	}
	item := mustJSON(t, body).Get("output.0")
	if item.Get("namespace").String() != "browser" || item.Get("name").String() != "click" ||
		item.Get("arguments").String() != `{"selector":"#a"}` {
		t.Errorf("item %s", item.Raw)
	}
}

// TestResponsesReaskIsStateless checks the re-ask's body: the input, the
// model's call without its id, a function_call_output with the errors and
// the instruction; not streamed.
func TestResponsesReaskIsStateless(t *testing.T) {
	up := newUpstream(t)
	reasks := scriptResponses(up, fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}}, fake.Reply{Calls: []fake.Call{click("call_2", `{"selector":"#a"}`)}})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true,"store":false`))
	if resp.StatusCode != 200 || len(*reasks) != 1 {
		t.Fatalf("status %d, %d re-asks: %s", resp.StatusCode, len(*reasks), body)
	}
	re := gjson.ParseBytes((*reasks)[0])
	if re.Get("stream").Bool() || !re.Get("store").Exists() || re.Get("store").Bool() {
		t.Errorf("re-ask: stream %v store %v", re.Get("stream"), re.Get("store"))
	}
	input := re.Get("input").Array()
	if len(input) != 4 {
		t.Fatalf("re-ask input has %d items, want 4: %s", len(input), re.Get("input").Raw)
	}
	if input[0].Get("role").Str != "user" || input[0].Get("content").Str != "Click the button." {
		t.Errorf("the string input became %s", input[0].Raw)
	}
	if c := input[1]; c.Get("type").Str != "function_call" || c.Get("call_id").Str != "call_1" || c.Get("id").Exists() || c.Get("arguments").Str != "{}" {
		t.Errorf("the model's call is replayed as %s", c.Raw)
	}
	if o := input[2]; o.Get("type").Str != "function_call_output" || o.Get("call_id").Str != "call_1" || !strings.Contains(o.Get("output").Str, "/selector: missing required property") {
		t.Errorf("the feedback is %s", o.Raw)
	}
	if m := input[3]; m.Get("role").Str != "user" || !strings.Contains(m.Get("content").Str, "Send corrected tool calls") {
		t.Errorf("the instruction is %s", m.Raw)
	}
}

// TestResponsesStateful: a request that continues stored state is not
// re-asked; local repair still applies, and the configured failure.
func TestResponsesStateful(t *testing.T) {
	for _, extra := range []string{`,"previous_response_id":"resp_0"`, `,"conversation":"conv_1"`} {
		up := newUpstream(t)
		reasks := scriptResponses(up, fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}}, fake.Reply{Calls: []fake.Call{click("call_2", `{"selector":"#a"}`)}})
		srv, logs := guard(t, up, nil)
		resp, body := post(t, srv, "/v1/responses", responsesRequest(extra))
		if resp.StatusCode != 400 || len(*reasks) != 0 {
			t.Errorf("%s: status %d after %d re-asks, want 400 and none: %s", extra, resp.StatusCode, len(*reasks), body)
		}
		if !strings.Contains(logs.String(), "no re-asks for this request") {
			t.Errorf("%s: the reason is not logged", extra)
		}
		up2 := newUpstream(t)
		scriptResponses(up2, fake.Reply{Calls: []fake.Call{click("call_1", `{"Selector":"#a"}`)}})
		srv2, _ := guard(t, up2, nil)
		resp, body = post(t, srv2, "/v1/responses", responsesRequest(extra))
		if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "repaired" {
			t.Errorf("%s: a repairable call: status %d outcome %q: %s", extra, resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
		}
	}
}

// TestResponsesPassThrough: error replies, requests without function tools
// and other routes pass unchanged.
func TestResponsesPassThrough(t *testing.T) {
	errBody := `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`
	up := newUpstream(t, reply{Status: 400, Body: errBody})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/responses", responsesRequest(""))
	if resp.StatusCode != 400 || string(body) != errBody {
		t.Errorf("error reply: %d %s", resp.StatusCode, body)
	}
	up = newUpstream(t, reply{Body: fake.Responses.JSON(fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}})})
	srv, _ = guard(t, up, nil)
	resp, _ = post(t, srv, "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`)
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "" {
		t.Errorf("no function tools: status %d outcome %q", resp.StatusCode, header(resp, "X-Toolguard-Outcome"))
	}
}

// TestResponsesRefusals: what toolguard cannot read as the upstream would
// is refused.
func TestResponsesRefusals(t *testing.T) {
	up := newUpstream(t, reply{Body: fake.Responses.JSON(fake.Reply{Text: "x"})})
	srv, _ := guard(t, up, nil)
	for _, tc := range []struct{ body, code string }{
		{`{"model":"m","input":"hi","tools":[{"type":"function","name":"click"},{"type":"function","name":"click"}]}`, "tools_ambiguous"},
		{`{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools_invalid"},
		{`{"model":"m","input":"hi","tools":[{"name":"click"}]}`, "tools_invalid"},
		{`{"model":"m","input":"hi","tools":{"type":"function","name":"click"}}`, "tools_ambiguous"},
		{`{"model":"m","input":"hi","Tools":[]}`, "request_ambiguous"},
		{`{"model":"m","input":"hi","tools":[],"tools":[{"type":"function","name":"x"}]}`, "request_ambiguous"},
	} {
		resp, body := post(t, srv, "/v1/responses", tc.body)
		if resp.StatusCode != 400 || gjson.GetBytes(body, "error.code").Str != tc.code {
			t.Errorf("%s: %d %s, want 400 %s", tc.body, resp.StatusCode, body, tc.code)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("%d refused requests reached the upstream", n)
	}
}

// TestResponsesStreamSplitAtEveryByte: however the network cuts the
// upstream's stream, the client gets the same consistent stream.
func TestResponsesStreamSplitAtEveryByte(t *testing.T) {
	r := fake.Reply{Text: "Let me click — ünïcode.", Calls: []fake.Call{click("call_a", `{"Selector":"#a"}`), click("call_b", `{"selector":"#b"}`)}, In: 3, Out: 4}
	stream := strings.Join(fake.Responses.Events(r, 6), "")
	up, split := splitUpstream(t, stream)
	srv, _ := guard(t, up, nil)
	var first []byte
	for at := 0; at <= len(stream); at++ {
		split.Store(int64(at))
		_, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
		s := readResponseStream(t, body)
		if diff := cmp.Diff(s.calls, []string{`call_a click {"selector":"#a"}`, `call_b click {"selector":"#b"}`}); diff != "" {
			t.Fatalf("split at %d (-got +want):\n%s", at, diff)
		}
		if first == nil {
			first = body
		} else if !bytes.Equal(body, first) {
			t.Fatalf("split at %d: the stream differs from the one at 0", at)
		}
	}
}

// TestResponsesStreamBreaksOff: an upstream stream that ends early ends in
// the Responses error event, never a hang.
func TestResponsesStreamBreaksOff(t *testing.T) {
	events := fake.Responses.Events(fake.Reply{Calls: []fake.Call{click("call_1", `{"selector":"#a"}`)}}, 4)
	up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: strings.Join(events[:len(events)-2], "")})
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
	if s := readResponseStream(t, body); s.errCode != "upstream_stream_truncated" {
		t.Errorf("error %q, want upstream_stream_truncated:\n%s", s.errCode, body)
	}
}

// responseStream is what a client reads from a Responses stream.
type responseStream struct {
	calls     []string // "call_id name arguments", from output_item.done
	text      string   // the output_text deltas, joined
	completed gjson.Result
	comment   string
	errCode   string
}

// readResponseStream reads a stream as openai-node does, and checks what
// it checks: each event's name matches its type, sequence numbers increase
// by one, an added item is the next of the output, and the completed
// response holds exactly the items that were done.
func readResponseStream(t *testing.T, body []byte) responseStream {
	t.Helper()
	var s responseStream
	seq := int64(-1)
	var output []string
	for _, ev := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		var name, data string
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, ": toolguard"):
				s.comment = line
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data += strings.TrimPrefix(line, "data: ")
			}
		}
		if data == "" {
			continue
		}
		e := gjson.Parse(data)
		typ := e.Get("type").Str
		if name != "" && name != typ {
			t.Fatalf("event %q has type %q", name, typ)
		}
		if n := e.Get("sequence_number").Int(); n != seq+1 {
			t.Fatalf("sequence_number %d after %d:\n%s", n, seq, body)
		} else {
			seq = n
		}
		switch typ {
		case "error":
			s.errCode = e.Get("code").Str
		case "response.output_item.added":
			if i := int(e.Get("output_index").Int()); i != len(output) {
				t.Fatalf("item added at output_index %d, want %d:\n%s", i, len(output), body)
			}
			output = append(output, "")
		case "response.output_item.done":
			i := int(e.Get("output_index").Int())
			if i >= len(output) {
				t.Fatalf("item done at output_index %d, never added", i)
			}
			output[i] = e.Get("item").Raw
			if it := e.Get("item"); it.Get("type").Str == "function_call" {
				s.calls = append(s.calls, it.Get("call_id").Str+" "+it.Get("name").Str+" "+it.Get("arguments").Str)
			}
		case "response.output_text.delta", "response.function_call_arguments.delta":
			if i := int(e.Get("output_index").Int()); i >= len(output) {
				t.Fatalf("%s at output_index %d, never added", typ, i)
			}
			if typ == "response.output_text.delta" {
				s.text += e.Get("delta").Str
			}

		case "response.completed":
			s.completed = e.Get("response")
			var got []string
			s.completed.Get("output").ForEach(func(_, it gjson.Result) bool {
				got = append(got, it.Raw)
				return true
			})
			if diff := cmp.Diff(got, output); diff != "" {
				t.Fatalf("response.completed's output is not what was sent (-got +want):\n%s", diff)
			}
		}
	}
	return s
}

// TestResponsesFallbackAndHistory: the last re-ask goes to the fallback
// endpoint at its /responses, and malformed arguments in the input's
// function_call items are mended before the request goes upstream.
func TestResponsesFallbackAndHistory(t *testing.T) {
	primary := newUpstream(t)
	scriptResponses(primary, fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}}, fake.Reply{Calls: []fake.Call{click("call_2", `{}`)}})
	fb := newUpstream(t)
	scriptResponses(fb, fake.Reply{}, fake.Reply{Model: "strong-2025", Calls: []fake.Call{click("call_3", `{"selector":"#a"}`)}})
	srv, _ := guard(t, primary, func(c *policy.Config) {
		c.MaxReasks = 2
		c.FallbackModel = "strong"
		c.FallbackUpstreamURL = fb.URL + "/v1/"
	})
	history := `,"input":[{"type":"message","role":"user","content":"Click."},` +
		`{"type":"function_call","call_id":"call_0","name":"click","arguments":"{\"selector\": \"#x\""},` +
		`{"type":"function_call_output","call_id":"call_0","output":"done"}]`
	body := strings.Replace(responsesRequest(""), `,"input":"Click the button."`, history, 1)
	resp, out := post(t, srv, "/v1/responses", body)
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "reasked" {
		t.Fatalf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), out)
	}
	if got := mustJSON(t, out).Get("model").Str; got != "strong-2025" {
		t.Errorf("model %q, want the fallback's", got)
	}
	fbReqs := fb.requests()
	if len(fbReqs) != 1 || fbReqs[0].Path != "/v1/responses" || gjson.GetBytes(fbReqs[0].Body, "model").Str != "strong" {
		t.Fatalf("the fallback got %d requests: %+v", len(fbReqs), fbReqs)
	}
	first := primary.requests()[0].Body
	if args := gjson.GetBytes(first, "input.1.arguments").Str; args != `{"selector":"#x"}` {
		t.Errorf("history arguments went upstream as %q, want mended", args)
	}
}

// TestResponsesTextFormat: a JSON text.format on /v1/responses gets the
// guarantees of a chat response_format.
func TestResponsesTextFormat(t *testing.T) {
	const want = `{"city":"Paris","temperature":21}`
	format := `,"text":{"format":{"type":"json_schema","name":"weather","strict":true,"schema":` +
		`{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"number"}},"required":["city","temperature"],"additionalProperties":false}}}`
	req := `{"model":"gpt-test","input":"The weather in Paris?"` + format + `}`
	for _, tc := range []struct {
		name, text, corrected string
		status                int
		outcome               string
	}{
		{"valid", want, "", 200, "valid"},
		{"fenced", "```json\n" + want + "\n```", "", 200, "repaired"},
		{"missing-required", `{"city":"Paris"}`, want, 200, "reasked"},
		{"never-corrects", `{"city":"Paris"}`, `{"city":"Paris"}`, 400, "failed"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				testTextFormat(t, req, tc.text, tc.corrected, tc.status, tc.outcome, want, stream)
			})
		}
	}
}

func testTextFormat(t *testing.T, req, text, corrected string, status int, outcome, want string, stream bool) {
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
		body := up.requests()[i].Body
		reply := fake.Reply{Text: text}
		if strings.Contains(string(body), "not valid for the requested response format") {
			reply.Text = corrected
		}
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, strings.Join(fake.Responses.Events(reply, 6), ""))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fake.Responses.JSON(reply))
	}
	srv, _ := guard(t, up, nil)
	if stream {
		req = strings.Replace(req, `"input"`, `"stream":true,"input"`, 1)
	}
	resp, body := post(t, srv, "/v1/responses", req)
	if stream {
		s := readResponseStream(t, body)
		if status == 400 {
			if s.errCode != "output_invalid" {
				t.Errorf("stream error %q, want output_invalid:\n%s", s.errCode, body)
			}
			return
		}
		if got := compact(s.completed.Get(`output.#(type=="message").content.0.text`).Str); got != want {
			t.Errorf("text %s, want %s\n%s", got, want, body)
		}
		if !strings.Contains(s.comment, "outcome="+outcome) {
			t.Errorf("comment %q, want outcome %s", s.comment, outcome)
		}
		return
	}
	if resp.StatusCode != status || header(resp, "X-Toolguard-Outcome") != outcome {
		t.Fatalf("status %d outcome %q, want %d %s: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), status, outcome, body)
	}
	if status == 400 {
		if gjson.GetBytes(body, "error.code").Str != "output_invalid" {
			t.Errorf("failure %s", body)
		}
		return
	}
	if got := compact(mustJSON(t, body).Get(`output.#(type=="message").content.0.text`).Str); got != want {
		t.Errorf("text %s, want %s", got, want)
	}
}

// TestResponsesTextCalls: a call written as text in a response's message
// becomes a function_call item.
func TestResponsesTextCalls(t *testing.T) {
	up := newUpstream(t, reply{Body: fake.Responses.JSON(fake.Reply{Text: "Clicking now.\n<tool_call>{\"name\": \"click\", \"arguments\": {\"Selector\": \"#a\"}}</tool_call>"})})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/responses", responsesRequest(""))
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "repaired" {
		t.Fatalf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
	}
	out := mustJSON(t, body)
	if diff := cmp.Diff(responseCalls(out), []string{`call_text_0_0 click {"selector":"#a"}`}); diff != "" {
		t.Errorf("calls (-got +want):\n%s\n%s", diff, body)
	}
	if text := out.Get(`output.#(type=="message").content.0.text`).Str; text != "Clicking now." {
		t.Errorf("text left %q", text)
	}
}

// TestResponsesStreamUpstreamFailure: the upstream's own response.failed
// ends the stream as it is, with no error of toolguard's after it.
func TestResponsesStreamUpstreamFailure(t *testing.T) {
	events := fake.Responses.Events(fake.Reply{Calls: []fake.Call{click("call_1", `{"selector":"#a"}`)}}, 4)
	failed := "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":" + fmt.Sprint(len(events)-1) +
		",\"response\":{\"id\":\"resp_fake\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n"
	body := strings.Join(events[:len(events)-1], "") + failed
	up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body})
	srv, _ := guard(t, up, nil)
	_, out := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
	if s := readResponseStream(t, out); s.errCode != "" || !strings.HasSuffix(string(out), failed) {
		t.Errorf("error %q; the stream does not end with the upstream's failure:\n%s", s.errCode, out)
	}
}

// TestResponsesStreamBounds: a stream that holds more calls than toolguard
// holds, or an item numbered twice, ends in the error event; nothing of
// the calls reaches the client unchecked.
func TestResponsesStreamBounds(t *testing.T) {
	var calls []fake.Call
	for i := range 300 {
		calls = append(calls, click(fmt.Sprintf("c%d", i), `{}`))
	}
	for _, tc := range []struct{ name, stream, code string }{
		{"300 calls", strings.Join(fake.Responses.Events(fake.Reply{Calls: calls}, 0), ""), "upstream_stream_too_large"},
		{"an index added twice", strings.Replace(strings.Join(fake.Responses.Events(fake.Reply{Text: "x", Calls: []fake.Call{click("c1", `{}`)}}, 0), ""),
			`"output_index":1,"item":{"id":"fc_fake_0"`, `"output_index":0,"item":{"id":"fc_fake_0"`, 1), "upstream_malformed_reply"},
		{"a done item never added", "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":0,\"output_index\":3," +
			"\"item\":{\"type\":\"function_call\",\"name\":\"click\",\"arguments\":\"{}\",\"call_id\":\"c\"}}\n\n", "upstream_malformed_reply"},
	} {
		up := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: tc.stream})
		srv, _ := guard(t, up, nil)
		_, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
		s := readResponseStream(t, body)
		if s.errCode != tc.code || len(s.calls) != 0 {
			t.Errorf("%s: error %q with %d calls released, want %s and none", tc.name, s.errCode, len(s.calls), tc.code)
		}
	}
}

// TestResponsesUnderAnyPrefixAreInspected: servers serve the Responses API
// under other prefixes (Azure's and LiteLLM's /openai/v1/responses, a base
// URL given twice), so a POST to any path ending in /responses is inspected
// as /v1/responses is, streamed or not, and the same path in another letter
// case, with a trailing slash or with another method is refused. Before,
// each of these forwarded an invalid call uninspected.
func TestResponsesUnderAnyPrefixAreInspected(t *testing.T) {
	paths := []string{"/v1/v1/responses", "/v1/openai/v1/responses", "/v1/openai/responses",
		"/v1/openai/deployments/gpt-4o/responses", "/v1/chat/completions/responses"}
	for _, stream := range []bool{false, true} {
		for _, path := range paths {
			t.Run(fmt.Sprintf("%s/stream=%v", strings.ReplaceAll(path, "/", "-"), stream), func(t *testing.T) {
				up := newUpstream(t)
				// The re-ask is answered with the same invalid call.
				bad := fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}}
				scriptResponses(up, bad, bad)
				srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 1 })
				extra := ""
				if stream {
					extra = `,"stream":true`
				}
				resp, body := post(t, srv, path+"?api-version=preview", responsesRequest(extra))
				if stream {
					if s := readResponseStream(t, body); s.errCode != "tool_call_invalid" || len(s.calls) != 0 {
						t.Errorf("stream: error %q, calls %q, want the invalid call refused:\n%.500s", s.errCode, s.calls, body)
					}
				} else if resp.StatusCode != http.StatusBadRequest || header(resp, "X-Toolguard-Outcome") != "failed" {
					t.Errorf("status %d outcome %q, want the invalid call refused: %.300s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
				}
				got := up.requests()
				if len(got) != 2 || got[0].Path != path || got[0].RawQuery != "api-version=preview" || got[1].Path != path {
					t.Errorf("the upstream got %d requests, want the request and its re-ask on %s", len(got), path)
				}
			})
		}
	}
	up := newUpstream(t, reply{Body: fake.Responses.JSON(fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}})})
	srv, _ := guard(t, up, nil)
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/v1/openai/v1/Responses", http.StatusBadRequest},
		{"POST", "/v1/openai/responses/", http.StatusBadRequest},
		{"POST", "/v1/v1/RESPONSES//", http.StatusBadRequest},
		{"PUT", "/v1/openai/v1/responses", http.StatusMethodNotAllowed},
		{"PATCH", "/v1/responses", http.StatusMethodNotAllowed},
	} {
		resp, body := do(t, t.Context(), srv, tt.method, tt.path, responsesRequest(""), nil)
		if resp.StatusCode != tt.want || !gjson.GetBytes(body, "error.code").Exists() {
			t.Errorf("%s %s: status %d %s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("%d refused requests reached the upstream", n)
	}
}

// TestBackgroundResponsesAreRefused: a background response is fetched
// later by its id, outside any request toolguard sees, so passing one that
// declares functions would let the client turn inspection off. It is
// refused, streamed or not, unless TOOLGUARD_ALLOW_CLIENT_OFF lets clients
// do that; one that declares nothing to inspect passes. Before, each
// forwarded the invalid call. A stored prompt is refused the same way, tools
// declared or not: it may declare functions of its own that the request
// does not show (before, its calls passed unchecked).
func TestBackgroundResponsesAreRefused(t *testing.T) {
	invalid := fake.Responses.JSON(fake.Reply{Calls: []fake.Call{click("call_1", `{}`)}})
	for _, tt := range []struct {
		name, body string
		allowOff   bool
		want       int
		code       string
	}{
		{name: "background", body: responsesRequest(`,"background":true`), want: 400, code: "request_not_inspectable"},
		{name: "background-stream", body: responsesRequest(`,"background":true,"stream":true`), want: 400, code: "request_not_inspectable"},
		{name: "background-string", body: responsesRequest(`,"background":"true"`), want: 400, code: "request_not_inspectable"},
		{name: "background-one", body: responsesRequest(`,"background":1`), want: 400, code: "request_not_inspectable"},
		{name: "background-false", body: responsesRequest(`,"background":false`), want: 400, code: "tool_call_invalid"},
		{name: "background-null", body: responsesRequest(`,"background":null`), want: 400, code: "tool_call_invalid"},
		{name: "no-tools", body: `{"model":"m","input":"hi","background":true}`, want: 200},
		{name: "allowed-off", body: responsesRequest(`,"background":true`), allowOff: true, want: 200},
		// A stored prompt may declare tools the request does not show.
		{name: "stored-prompt", body: `{"model":"m","input":"hi","prompt":{"id":"pmpt_1","version":"2"}}`, want: 400, code: "request_not_inspectable"},
		{name: "stored-prompt-and-tools", body: responsesRequest(`,"prompt":{"id":"pmpt_1"}`), want: 400, code: "request_not_inspectable"},
		{name: "stored-prompt-stream", body: `{"model":"m","input":"hi","stream":true,"prompt":{"id":"pmpt_1"}}`, want: 400, code: "request_not_inspectable"},
		{name: "stored-prompt-null", body: `{"model":"m","input":"hi","prompt":null}`, want: 200},
		{name: "stored-prompt-allowed-off", body: `{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`, allowOff: true, want: 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: invalid})
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0; c.AllowClientOff = tt.allowOff })
			resp, body := post(t, srv, "/v1/openai/v1/responses", tt.body)
			if resp.StatusCode != tt.want || gjson.GetBytes(body, "error.code").Str != tt.code {
				t.Errorf("status %d %.300s, want %d %q", resp.StatusCode, body, tt.want, tt.code)
			}
			forwarded := len(up.requests())
			if wantForwarded := tt.code != "request_not_inspectable"; (forwarded > 0) != wantForwarded {
				t.Errorf("%d requests forwarded", forwarded)
			}
		})
	}
}

// TestResponsesStreamCompletedHoldsTheItemsDone: a client that reads the
// terminal response reads the items that a client reading the items done
// read. A message whose text in response.completed is not the text of its
// done item (found by FuzzResponsesStream, a member's name changed) is
// written into the terminal response as it was done; a stream whose copies
// agree goes out byte for byte.
func TestResponsesStreamCompletedHoldsTheItemsDone(t *testing.T) {
	evs := fake.Responses.Events(fake.Reply{Text: "just text", Calls: []fake.Call{click("call_1", `{"selector":"#a"}`)}}, 4)
	for _, tt := range []struct {
		name string
		set  func(string) string
	}{
		{"another text", func(d string) string { return strings.Replace(d, `"text":"just text"`, `"text":"other text"`, 1) }},
		{"a member renamed", func(d string) string { return strings.Replace(d, `"content":[`, `"covtent":[`, 1) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changed := setEvents(t, evs, "response.completed", tt.set)
			if strings.Join(changed, "") == strings.Join(evs, "") {
				t.Fatal("the terminal event is unchanged")
			}
			up := newUpstream(t, sseReply(strings.Join(changed, "")))
			srv, _ := guard(t, up, nil)
			_, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
			// readResponseStream fails unless the completed output holds
			// exactly the items done.
			s := readResponseStream(t, body)
			if got := s.completed.Get(`output.#(type=="message").content.0.text`).Str; got != "just text" {
				t.Errorf("the terminal response's text is %q, want the text done:\n%s", got, body)
			}
		})
	}
	up := newUpstream(t, sseReply(strings.Join(evs, "")))
	srv, _ := guard(t, up, nil)
	// The outcome comment aside.
	_, body := post(t, srv, "/v1/responses", responsesRequest(`,"stream":true`))
	if got := strings.Replace(string(body), ": toolguard outcome=valid reasks=0\n\n", "", 1); got != strings.Join(evs, "") {
		t.Errorf("a stream whose copies agree was changed:\n%s", body)
	}
}
