package proxy_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestClassicBreakagesAreRepairedLocally sends, for the click tool, the
// broken calls of the original problem reports: each reaches the client as
// {"selector":"myCoolButton"}, repaired, with no re-ask and a single
// upstream request.
func TestClassicBreakagesAreRepairedLocally(t *testing.T) {
	for _, tc := range []struct{ name, args string }{
		{"bare-string", `"myCoolButton"`},
		{"other-case-key", `{"Selector": "myCoolButton"}`},
		{"truncated", `{"selector": "myCoolButton"`},
		{"fenced", "```json\n{\"selector\": \"myCoolButton\"}\n```"},
		{"single-quotes", `{'selector': 'myCoolButton'}`},
		{"double-encoded", `"{\"selector\":\"myCoolButton\"}"`},
		{"envelope", `{"arguments": {"selector": "myCoolButton"}}`},
		{"special-tokens", `<|call|>{"selector": "myCoolButton"}<|end|>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, clickCall("call_1", quote(tc.args)))})
			srv, _ := guard(t, up, nil)
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			got := gjson.GetBytes(body, "choices.0.message.tool_calls.0")
			if got.Get("function.arguments").String() != `{"selector":"myCoolButton"}` || got.Get("id").String() != "call_1" {
				t.Errorf("call %s", got.Raw)
			}
			if header(resp, "X-Toolguard-Outcome") != "repaired" || header(resp, "X-Toolguard-Reasks") != "0" || header(resp, "X-Toolguard-Repairs") == "0" {
				t.Errorf("outcome %q reasks %q repairs %q", header(resp, "X-Toolguard-Outcome"), header(resp, "X-Toolguard-Reasks"), header(resp, "X-Toolguard-Repairs"))
			}
			if n := len(up.requests()); n != 1 {
				t.Errorf("upstream got %d requests, want 1", n)
			}
		})
	}
}

// TestGuessesGoToReask checks that what must not be mended is re-asked: a
// missing required property, a non-numeric string for a number, a key that
// could be either of two missing properties, an unknown tool far from every
// declared one.
func TestGuessesGoToReask(t *testing.T) {
	tools := `[{"type":"function","function":{"name":"move","parameters":{"type":"object","properties":{` +
		`"x":{"type":"number"},"from_city":{"type":"string"},"to_city":{"type":"string"}},"required":["x","from_city","to_city"]}}}]`
	for _, tc := range []struct{ name, call string }{
		{"missing-required", `{"id":"c","type":"function","function":{"name":"move","arguments":"{\"x\":1,\"from_city\":\"a\"}"}}`},
		{"non-numeric-for-number", `{"id":"c","type":"function","function":{"name":"move","arguments":"{\"x\":\"five\",\"from_city\":\"a\",\"to_city\":\"b\"}"}}`},
		{"key-for-two-properties", `{"id":"c","type":"function","function":{"name":"move","arguments":"{\"x\":1,\"city\":\"a\"}"}}`},
		{"unknown-tool", `{"id":"c","type":"function","function":{"name":"launch_rockets","arguments":"{}"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, tc.call)})
			srv, _ := guard(t, up, nil)
			resp, body := post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[],"tools":`+tools+`}`)
			if n := len(up.requests()); n != 3 || resp.StatusCode != 400 {
				t.Errorf("status %d after %d upstream requests; want 400 after 3: %s", resp.StatusCode, n, body)
			}
			if !strings.Contains(string(up.requests()[1].Body), `"role":"tool"`) {
				t.Errorf("no re-ask")
			}
		})
	}
}

// TestMendedCallsAreWrittenInPlace: a mended call goes back to the client
// in the reply the model sent, with only its arguments (and a mended name)
// written over: every other byte (spacing, member order, escapes, vendor
// fields, the other calls and choices) is the model's.
func TestMendedCallsAreWrittenInPlace(t *testing.T) {
	pretty := "{\n  \"id\": \"chatcmpl-1\",\n  \"choices\": [\n    {\n      \"index\": 0,\n      \"message\": {\n" +
		"        \"role\": \"assistant\",\n        \"content\": null,\n        \"tool_calls\": [\n          {\n" +
		"            \"id\": \"c1\",\n            \"type\": \"function\",\n            \"function\": {\n" +
		"              \"name\": \"click\",\n              \"arguments\": \"{\\\"Selector\\\": \\\"#a\\\"}\"\n" +
		"            }\n          }\n        ]\n      },\n      \"finish_reason\": \"tool_calls\"\n    }\n  ],\n" +
		"  \"usage\": {\"prompt_tokens\": 1, \"completion_tokens\": 1, \"total_tokens\": 2},\n  \"x_vendor\": {\"k\": [1, 2]}\n}\n"
	for _, tc := range []struct{ name, reply, from, to string }{
		{name: "spaced reply", reply: pretty,
			from: `"{\"Selector\": \"#a\"}"`, to: `"{\"selector\":\"#a\"}"`},
		{name: "second of two calls",
			reply: toolReply(`{"total_tokens":1}`, clickCall("c1", `"{\"selector\":\"#a\"}"`), clickCall("c2", `"{\"Selector\":\"#b\"}"`)),
			from:  `"{\"Selector\":\"#b\"}"`, to: `"{\"selector\":\"#b\"}"`},
		{name: "second choice",
			reply: `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"},` +
				`{"index":1,"message":{"role":"assistant","tool_calls":[` + clickCall("c1", `"{'selector': '#a'}"`) + `]},"finish_reason":"tool_calls"}]}`,
			from: `"{'selector': '#a'}"`, to: `"{\"selector\":\"#a\"}"`},
		{name: "arguments as an object",
			reply: toolReply(`{"total_tokens":1}`, clickCall("c1", `{"Selector":"#a"}`)),
			from:  `{"Selector":"#a"}`, to: `"{\"selector\":\"#a\"}"`},
		{name: "name after arguments, in another style",
			reply: toolReply(`{"total_tokens":1}`, `{"id":"c1","type":"function","function":{"arguments":"{\"Selector\":\"#a\"}","name":"Click"}}`),
			from:  `{"arguments":"{\"Selector\":\"#a\"}","name":"Click"}`, to: `{"arguments":"{\"selector\":\"#a\"}","name":"click"}`},
		{name: "escaped member names",
			reply: toolReply(`{"total_tokens":1}`, `{"id":"c1","type":"function","f\u0075nction":{"n\u0061me":"click","\u0061rguments":"\"#a\""}}`),
			from:  `"\u0061rguments":"\"#a\""`, to: `"\u0061rguments":"{\"selector\":\"#a\"}"`},
		{name: "leading space, two calls of the same arguments",
			reply: "\n  " + toolReply(`{"total_tokens":1}`, clickCall("c1", `"{\"Selector\":\"#a\"}"`), clickCall("c2", `"{\"Selector\":\"#a\"}"`)),
			from:  clickCall("c1", `"{\"Selector\":\"#a\"}"`) + "," + clickCall("c2", `"{\"Selector\":\"#a\"}"`),
			to:    clickCall("c1", `"{\"selector\":\"#a\"}"`) + "," + clickCall("c2", `"{\"selector\":\"#a\"}"`)},
		{name: "legacy function_call",
			reply: `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"function_call":{"name":"click","arguments":"{\"Selector\":\"<a&b>\"}"}},"finish_reason":"function_call"}]}`,
			from:  `"{\"Selector\":\"<a&b>\"}"`, to: `"{\"selector\":\"<a&b>\"}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkWrittenInPlace(t, "/v1/chat/completions", clickRequest(""), tc.reply, tc.from, tc.to)
		})
	}
}

// checkWrittenInPlace sends request to path, in front of an upstream that
// answers sent, and checks that the call is repaired and that the client
// gets sent with from replaced by to, every other byte as it was.
func checkWrittenInPlace(t *testing.T, path, request, sent, from, to string) {
	t.Helper()
	if !strings.Contains(sent, from) {
		t.Fatalf("the reply does not hold %s", from)
	}
	up := newUpstream(t, reply{Body: sent})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, path, request)
	if header(resp, "X-Toolguard-Outcome") != "repaired" {
		t.Fatalf("outcome %q, want repaired: %s", header(resp, "X-Toolguard-Outcome"), body)
	}
	if want := strings.Replace(sent, from, to, 1); string(body) != want {
		t.Errorf("body\n got %s\nwant %s", body, want)
	}
}
