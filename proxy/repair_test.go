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
