package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// clientView is a chat completion as a client decodes it with Go's
// encoding/json: the last of duplicate names wins and names match in any
// letter case. JavaScript's JSON.parse and Python's json also keep the last.
type clientView struct {
	Choices []struct {
		Message struct {
			ToolCalls []struct {
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			FunctionCall *struct{ Name, Arguments string } `json:"function_call"`
		}
	}
}

// invalidCallsFor reports whether a client decoding body finds a click call
// whose arguments lack the required selector.
func invalidCallsFor(body string) bool {
	var v clientView
	if json.Unmarshal([]byte(body), &v) != nil {
		return false
	}
	bad := func(args string) bool { return !strings.Contains(args, "selector") }
	for _, c := range v.Choices {
		for _, tc := range c.Message.ToolCalls {
			if bad(tc.Function.Arguments) {
				return true
			}
		}
		if fc := c.Message.FunctionCall; fc != nil && bad(fc.Arguments) {
			return true
		}
	}
	return false
}

// TestAmbiguousRepliesAreRefused sends replies that toolguard would read one
// way and a client another; each is a malformed upstream reply (502), never
// passed on with its invalid call.
func TestAmbiguousRepliesAreRefused(t *testing.T) {
	const (
		valid   = `{"id":"c1","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#ok\"}"}}`
		invalid = `{"id":"c2","type":"function","function":{"name":"click","arguments":"{}"}}`
		usage   = `{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`
	)
	msg := func(inner string) string {
		return `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",` + inner + `},"finish_reason":"tool_calls"}],"usage":` + usage + `}`
	}
	tests := []struct {
		name, body, code string
		// textOnly: no client reads an invalid call, only the body's
		// JSON is at fault.
		textOnly bool
	}{
		{name: "duplicate arguments", code: "upstream_ambiguous_reply",
			body: msg(`"tool_calls":[{"id":"c1","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#ok\"}","arguments":"{}"}}]`)},
		{name: "duplicate tool_calls", code: "upstream_ambiguous_reply",
			body: msg(`"tool_calls":[],"tool_calls":[` + invalid + `]`)},
		{name: "duplicate message", code: "upstream_ambiguous_reply",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"message":{"role":"assistant","tool_calls":[` + invalid + `]}}]}`},
		{name: "duplicate choices", code: "upstream_ambiguous_reply",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"choices":[{"index":0,"message":{"tool_calls":[` + invalid + `]}}]}`},
		{name: "permissive first copy", code: "upstream_ambiguous_reply",
			body: msg(`"tool_calls":[` + valid + `],"tool_calls":[` + invalid + `]`)},
		{name: "letter case", code: "upstream_ambiguous_reply",
			body: msg(`"content":null,"Tool_calls":[` + invalid + `]`)},
		{name: "function_call next to tool_calls", code: "upstream_malformed_reply",
			body: msg(`"tool_calls":[` + valid + `],"function_call":{"name":"click","arguments":"{}"}`)},
		{name: "tool_calls object", code: "upstream_malformed_reply", textOnly: true,
			body: msg(`"tool_calls":` + invalid)},
		{name: "tool_calls string", code: "upstream_malformed_reply", textOnly: true,
			body: msg(`"tool_calls":"click"`)},
		{name: "tool_calls entry not an object", code: "upstream_malformed_reply", textOnly: true,
			body: msg(`"tool_calls":[` + valid + `,"click"]`)},
		{name: "function_call string", code: "upstream_malformed_reply", textOnly: true,
			body: msg(`"function_call":"click"`)},
		{name: "choices object", code: "upstream_malformed_reply",
			body: `{"choices":{"0":{"message":{"tool_calls":[` + invalid + `]}}}}`, textOnly: true},
		{name: "NaN", code: "upstream_invalid_json", textOnly: true,
			body: msg(`"tool_calls":[` + valid + `]`)[:10] + `"x":NaN,` + msg(`"tool_calls":[` + valid + `]`)[10:]},
		{name: "byte order mark", code: "upstream_invalid_json", textOnly: true,
			body: "\xef\xbb\xbf" + msg(`"tool_calls":[`+invalid+`]`)},
		{name: "trailing value", code: "upstream_invalid_json",
			body: msg(`"content":"hi"`) + msg(`"tool_calls":[`+invalid+`]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.textOnly && !invalidCallsFor(tt.body) && tt.code != "upstream_invalid_json" {
				t.Fatalf("the test's premise fails: a client would not read an invalid call in %s", tt.body)
			}
			up := newUpstream(t, reply{Body: tt.body})
			srv, _ := guard(t, up, nil)
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("status %d, want 502; body %s", resp.StatusCode, body)
			}
			if got := mustJSON(t, body).Get("error.code").String(); got != tt.code {
				t.Errorf("code %q, want %q (%s)", got, tt.code, body)
			}
			if n := len(up.requests()); n != 1 {
				t.Errorf("%d upstream requests, want 1: a malformed reply is not re-asked", n)
			}
		})
	}
}

// TestWellFormedRepliesStillPass guards the refusals above against refusing
// what clients and toolguard read alike.
func TestWellFormedRepliesStillPass(t *testing.T) {
	tests := []struct{ name, body, outcome string }{
		{name: "null tool_calls", outcome: "none",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":null,"function_call":null},"finish_reason":"stop"}]}`},
		{name: "empty tool_calls", outcome: "none",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[]},"finish_reason":"stop"}]}`},
		{name: "legacy function_call", outcome: "valid",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"function_call":{"name":"click","arguments":"{\"selector\":\"#a\"}"}},"finish_reason":"function_call"}]}`},
		{name: "empty tool_calls and function_call", outcome: "valid",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[],"function_call":{"name":"click","arguments":"{\"selector\":\"#a\"}"}},"finish_reason":"function_call"}]}`},
		// Names escaped as clients unescape them: the call is found and
		// checked (valid, not none).
		{name: "escaped member names", outcome: "valid",
			body: `{"choices":[{"index":0,"m\u0065ssage":{"role":"assistant","tool\u005fcalls":[{"\u0069d":"c1","type":"function","f\u0075nction":{"n\u0061me":"click","\u0061rguments":"{\"selector\":\"#a\"}"}}]},"finish_reason":"tool_calls"}]}`},
		{name: "vendor fields in any case", outcome: "none",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","Extra":{"a":1}}}],"systemFingerprint":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: tt.body})
			srv, _ := guard(t, up, nil)
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if resp.StatusCode != http.StatusOK || header(resp, "X-Toolguard-Outcome") != tt.outcome {
				t.Fatalf("status %d outcome %q, want 200 %q; body %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), tt.outcome, body)
			}
			if string(body) != tt.body {
				t.Errorf("body changed:\n got %s\nwant %s", body, tt.body)
			}
		})
	}
}

// TestAmbiguousReaskReplyEndsReasking: a re-ask's reply is read as strictly
// as the first; an ambiguous one ends re-asking and the client gets the
// configured failure, not the reply's invalid call.
func TestAmbiguousReaskReplyEndsReasking(t *testing.T) {
	first := toolReply(`{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`, clickCall("c1", `"{}"`))
	dup := toolReply(`{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`,
		`{"id":"c2","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#ok\"}","arguments":"{}"}}`)
	up := newUpstream(t, reply{Body: first}, reply{Body: dup})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400; body %s", resp.StatusCode, body)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("%d upstream requests, want 2: re-asking stops at the ambiguous reply", n)
	}
	if !strings.Contains(mustJSON(t, body).Get("error.message").String(), "duplicate member name") {
		t.Errorf("the failure does not say why re-asking stopped: %s", body)
	}
}

// TestRepeatedRepliesAreReadAsClientsReadThem: a client's reply of the same
// shape as its last is not tokenised again (wire.Templates), and is read
// all the same: its own values, and what hides in a value's place.
func TestRepeatedRepliesAreReadAsClientsReadThem(t *testing.T) {
	call := func(args string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"click","arguments":` + args + `}}]},"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	}
	first := call(`"{\"selector\":\"#a\"}"`)
	tests := []struct {
		name, second string
		status       int
		code         string // the error's, when refused
		want         string // the arguments the client gets, when not
		outcome      string
	}{
		{name: "other arguments", second: strings.Replace(call(`"{\"selector\":\"#bb\"}"`), `"created":1`, `"created":22`, 1),
			status: 200, want: `{"selector":"#bb"}`, outcome: "valid"},
		{name: "invalid arguments", second: call(`"{}"`), status: 200, want: `{"selector":"#c"}`, outcome: "reasked"},
		{name: "duplicate arguments in the arguments' place", second: call(`"{\"selector\":\"#ok\"}","arguments":"{}"`),
			status: 502, code: "upstream_ambiguous_reply"},
		{name: "a member in another case in the arguments' place", second: call(`"{\"selector\":\"#ok\"}","Arguments":"{}"`),
			status: 502, code: "upstream_ambiguous_reply"},
		{name: "invalid UTF-8 in the arguments", second: call("\"{\\\"selector\\\":\\\"#\xff\\\"}\""),
			status: 502, code: "upstream_invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: first}, reply{Body: tt.second}, reply{Body: call(`"{\"selector\":\"#c\"}"`)})
			srv, _ := guard(t, up, nil)
			if resp, body := post(t, srv, "/v1/chat/completions", clickRequest("")); resp.StatusCode != 200 {
				t.Fatalf("first reply: status %d, %s", resp.StatusCode, body)
			}
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.code != "" {
				if got := mustJSON(t, body).Get("error.code").String(); got != tt.code {
					t.Errorf("code %q, want %q (%s)", got, tt.code, body)
				}
				return
			}
			if got := mustJSON(t, body).Get("choices.0.message.tool_calls.0.function.arguments").String(); got != tt.want {
				t.Errorf("arguments %s, want %s", got, tt.want)
			}
			if got := resp.Header.Get("X-Toolguard-Outcome"); got != tt.outcome {
				t.Errorf("outcome %q, want %q", got, tt.outcome)
			}
		})
	}
}
