package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestTruncatedCallsAreNotClosed: arguments that end early are closed only
// when nothing can be missing; a call cut off at the length limit, or one
// that could have gone on with more members or items, is re-asked.
func TestTruncatedCallsAreNotClosed(t *testing.T) {
	const sqlTools = `[{"type":"function","function":{"name":"sql","parameters":{"type":"object",` +
		`"properties":{"sql":{"type":"string"},"where":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["sql"]}}}]`
	const sqlOnly = `[{"type":"function","function":{"name":"sql","parameters":{"type":"object",` +
		`"properties":{"sql":{"type":"string"}},"required":["sql"]}}}]`
	fixed := `{"sql":"SELECT 1"}`
	reply1 := func(args, finish string) string {
		return `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"c1","type":"function","function":{"name":"sql","arguments":` + quote(args) + `}}]},"finish_reason":"` + finish + `"}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	}
	tests := []struct {
		name, tools, args, finish string
		wantArgs, wantOutcome     string
	}{
		{name: "a member may follow", tools: sqlTools, args: `{"sql": "DELETE FROM users"`, finish: "tool_calls",
			wantArgs: fixed, wantOutcome: "reasked"},
		{name: "an item may follow", tools: sqlTools, args: `{"sql": "SELECT 1", "where": "a", "tags": ["a", "b"`, finish: "tool_calls",
			wantArgs: fixed, wantOutcome: "reasked"},
		{name: "cut off at the length limit", tools: sqlOnly, args: `{"sql": "DELETE FROM users"`, finish: "length",
			wantArgs: fixed, wantOutcome: "reasked"},
		{name: "nothing can be missing", tools: sqlOnly, args: `{"sql": "DELETE FROM users"`, finish: "tool_calls",
			wantArgs: `{"sql":"DELETE FROM users"}`, wantOutcome: "repaired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: reply1(tt.args, tt.finish)}, reply{Body: reply1(fixed, "tool_calls")})
			srv, _ := guard(t, up, nil)
			req := `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":` + tt.tools + `}`
			resp, body := post(t, srv, "/v1/chat/completions", req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := header(resp, "X-Toolguard-Outcome"); got != tt.wantOutcome {
				t.Errorf("outcome %q, want %q", got, tt.wantOutcome)
			}
			if got := mustJSON(t, body).Get("choices.0.message.tool_calls.0.function.arguments").String(); got != tt.wantArgs {
				t.Errorf("the client got arguments %s, want %s", got, tt.wantArgs)
			}
			if tt.wantOutcome == "reasked" {
				got := up.requests()
				if len(got) != 2 {
					t.Fatalf("%d upstream requests, want 2", len(got))
				}
				reask := string(got[1].Body)
				if !strings.Contains(reask, "closing") && !strings.Contains(reask, "cut off") {
					t.Errorf("the re-ask does not say the arguments ended early: %s", reask)
				}
			}
		})
	}
}
