package proxy_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

func TestValidCallPassesByteIdentical(t *testing.T) {
	rec := cassette(t, "chat-tools")
	up := newUpstream(t, reply{Header: rec.Header(), Body: rec.Response.Body})
	srv, _ := guard(t, up, nil)

	resp, body := post(t, srv, "/v1/chat/completions", rec.Request.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if diff := cmp.Diff(string(body), rec.Response.Body); diff != "" {
		t.Errorf("body changed (-got +want):\n%s", diff)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "valid" {
		t.Errorf("outcome %q, want valid", got)
	}
	if got := header(resp, "X-Request-Id"); got != rec.Response.Headers["X-Request-Id"][0] {
		t.Errorf("upstream header X-Request-Id lost: %q", got)
	}
	if got := up.requests(); len(got) != 1 || string(got[0].Body) != rec.Request.Body {
		t.Errorf("upstream did not get the request body unchanged")
	}
}

func TestParallelValidCallsPassByteIdentical(t *testing.T) {
	rec := cassette(t, "chat-parallel-tools")
	up := newUpstream(t, reply{Header: rec.Header(), Body: rec.Response.Body})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", rec.Request.Body)
	if string(body) != rec.Response.Body || header(resp, "X-Toolguard-Outcome") != "valid" {
		t.Errorf("got outcome %q, body changed: %v", header(resp, "X-Toolguard-Outcome"), string(body) != rec.Response.Body)
	}
}

func TestNoToolCallsOutcomeNone(t *testing.T) {
	text := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`
	up := newUpstream(t, reply{Body: text})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	if string(body) != text {
		t.Errorf("body changed: %s", body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "none" {
		t.Errorf("outcome %q, want none", got)
	}
}

func TestNearMissKeyIsReasked(t *testing.T) {
	up := newUpstream(t,
		reply{Body: toolReply(`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`, clickCall("call_1", `"{\"Selector\": \"myCoolButton\"}"`))},
		reply{Body: toolReply(`{"prompt_tokens":30,"completion_tokens":7,"total_tokens":37}`, clickCall("call_2", `"{\"selector\":\"myCoolButton\"}"`))},
	)
	// Re-ask mode: no local repair, so the rename is left to the model.
	srv, _ := guard(t, up, func(c *policy.Config) { c.Mode = policy.ModeReask })
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(`,"temperature":0.2,"x_vendor":{"keep":true}`))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	reqs := up.requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	reask := gjson.ParseBytes(reqs[1].Body)
	toolMsg := reask.Get(`messages.#(role=="tool")`)
	if toolMsg.Get("tool_call_id").String() != "call_1" || !strings.Contains(toolMsg.Get("content").String(), "/selector: missing required property") {
		t.Errorf("re-ask does not name /selector as missing: %s", toolMsg.Raw)
	}
	for _, field := range []string{"tools", "model", "temperature", "x_vendor"} {
		if got, want := reask.Get(field).Raw, gjson.Get(clickRequest(`,"temperature":0.2,"x_vendor":{"keep":true}`), field).Raw; got != want {
			t.Errorf("re-ask changed %s: %s, want %s", field, got, want)
		}
	}
	if got := reask.Get("messages.0.content").String(); got != "Click the button." {
		t.Errorf("re-ask lost the conversation: %s", reask.Get("messages").Raw)
	}
	out := mustJSON(t, body)
	if got := out.Get("choices.0.message.tool_calls.0.function.arguments").String(); got != `{"selector":"myCoolButton"}` {
		t.Errorf("arguments %s", got)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "reasked" {
		t.Errorf("outcome %q, want reasked", got)
	}
	if got := header(resp, "X-Toolguard-Reasks"); got != "1" {
		t.Errorf("X-Toolguard-Reasks %q, want 1", got)
	}
	if diff := cmp.Diff(out.Get("usage").Raw, `{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}`); diff != "" {
		t.Errorf("usage not summed (-got +want):\n%s", diff)
	}
}

func TestModelThatNeverCorrects(t *testing.T) {
	broken := toolReply(`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`, clickCall("call_1", `"{}"`))
	for _, tc := range []struct {
		name      string
		onFailure policy.OnFailure
		reasks    int
	}{
		{"error-after-two", policy.FailError, 2},
		{"error-after-zero", policy.FailError, 0},
		{"error-after-five", policy.FailError, 5},
		{"passthrough", policy.FailPassthrough, 2},
		{"drop", policy.FailDrop, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: broken})
			srv, _ := guard(t, up, func(c *policy.Config) { c.OnFailure = tc.onFailure; c.MaxReasks = tc.reasks })
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if got := len(up.requests()); got != tc.reasks+1 {
				t.Errorf("upstream got %d requests, want %d", got, tc.reasks+1)
			}
			if got := header(resp, "X-Toolguard-Outcome"); got != "failed" {
				t.Errorf("outcome %q, want failed", got)
			}
			if got := header(resp, "X-Toolguard-Reasks"); got != strconv.Itoa(tc.reasks) {
				t.Errorf("X-Toolguard-Reasks %q, want %d", got, tc.reasks)
			}
			out := mustJSON(t, body)
			total := 15 * (tc.reasks + 1)
			switch tc.onFailure {
			case policy.FailError:
				if resp.StatusCode != 400 || header(resp, "X-Should-Retry") != "false" {
					t.Errorf("status %d, x-should-retry %q; want 400, false", resp.StatusCode, header(resp, "X-Should-Retry"))
				}
				e := out.Get("error")
				if e.Get("type").String() != "invalid_tool_call" || e.Get("code").String() != "tool_call_invalid" {
					t.Errorf("error shape: %s", e.Raw)
				}
				d := e.Get("details.0")
				if d.Get("tool").String() != "click" || d.Get("call_id").String() != "call_1" || d.Get("errors.0.path").String() != "/selector" || d.Get("errors.0.message").String() == "" {
					t.Errorf("details: %s", e.Get("details").Raw)
				}
			case policy.FailPassthrough:
				if resp.StatusCode != 200 || out.Get("choices.0.message.tool_calls.0.function.arguments").String() != "{}" {
					t.Errorf("passthrough changed the call: %d %s", resp.StatusCode, body)
				}
				if got := out.Get("usage.total_tokens").Int(); got != int64(total) {
					t.Errorf("usage.total_tokens %d, want %d", got, total)
				}
			case policy.FailDrop:
				msg := out.Get("choices.0.message")
				if resp.StatusCode != 200 || msg.Get("tool_calls").Exists() || out.Get("choices.0.finish_reason").String() != "stop" {
					t.Errorf("drop kept the call: %d %s", resp.StatusCode, body)
				}
				if got := out.Get("usage.total_tokens").Int(); got != int64(total) {
					t.Errorf("usage.total_tokens %d, want %d", got, total)
				}
			}
		})
	}
}

func TestParallelCallsOnlyTheInvalidOneIsReasked(t *testing.T) {
	first := toolReply(`{"total_tokens":10}`,
		clickCall("call_a", `"{\"selector\":\"#a\"}"`),
		clickCall("call_b", `"{\"sel\": 5}"`),
		clickCall("call_c", `"{\"selector\":\"#c\"}"`),
	)
	second := toolReply(`{"total_tokens":20}`,
		clickCall("call_a2", `"{\"selector\":\"#a\"}"`), // the model repeats a valid call
		clickCall("call_b2", `"{\"selector\":\"#b\"}"`),
	)
	up := newUpstream(t, reply{Body: first}, reply{Body: second})
	srv, _ := guard(t, up, func(c *policy.Config) { c.Mode = policy.ModeReask })
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	reqs := up.requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	tools := gjson.GetBytes(reqs[1].Body, `messages.#(role=="tool")#`).Array()
	if len(tools) != 3 {
		t.Fatalf("re-ask has %d tool messages, want one per call (3)", len(tools))
	}
	for _, m := range tools {
		invalid := strings.HasPrefix(m.Get("content").String(), "Error")
		if invalid != (m.Get("tool_call_id").String() == "call_b") {
			t.Errorf("tool message for %s: %q", m.Get("tool_call_id"), m.Get("content"))
		}
	}
	var ids []string
	for _, c := range gjson.GetBytes(body, "choices.0.message.tool_calls").Array() {
		ids = append(ids, c.Get("id").String()+" "+c.Get("function.arguments").String())
	}
	want := []string{`call_a {"selector":"#a"}`, `call_c {"selector":"#c"}`, `call_b2 {"selector":"#b"}`}
	if diff := cmp.Diff(ids, want); diff != "" {
		t.Errorf("calls (-got +want):\n%s", diff)
	}
	if header(resp, "X-Toolguard-Outcome") != "reasked" {
		t.Errorf("outcome %q", header(resp, "X-Toolguard-Outcome"))
	}
}

func TestClientDisconnectDuringReaskStopsUpstreamWork(t *testing.T) {
	broken := toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{}"`))
	reaskArrived := make(chan struct{})
	reaskCancelled := make(chan struct{})
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(broken))
			return
		}
		if n == 1 {
			close(reaskArrived)
			<-r.Context().Done()
			close(reaskCancelled)
		}
	}
	cfg := func(c *policy.Config) { c.MaxReasks = 5 }
	srv, _ := guard(t, up, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(clickRequest("")))
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-reaskArrived
	cancel()
	<-reaskCancelled // the upstream request was cancelled with the client's
	<-done
	srv.Close() // waits for the handler to return
	if got := len(up.requests()); got != 2 {
		t.Errorf("upstream got %d requests, want 2 (the first and the cancelled re-ask)", got)
	}
}

func TestSchemaRefNeverReadsFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "schema.json")
	// Were this file loaded, the call below would be invalid and re-asked.
	if err := os.WriteFile(secret, []byte(`{"type":"object","required":["never"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file:///etc/passwd", "file://" + secret, "http://127.0.0.1:1/schema.json"} {
		t.Run(strings.ReplaceAll(ref, "/", "_"), func(t *testing.T) {
			call := toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"selector\":\"#a\"}"`))
			up := newUpstream(t, reply{Body: call})
			srv, logs := guard(t, up, nil)
			req := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"click","parameters":{"$ref":"` + ref + `"}}}]}`
			resp, body := post(t, srv, "/v1/chat/completions", req)
			if resp.StatusCode != 200 || string(body) != call {
				t.Errorf("status %d, body changed: %s", resp.StatusCode, body)
			}
			if got := len(up.requests()); got != 1 {
				t.Errorf("upstream got %d requests, want 1", got)
			}
			if !strings.Contains(logs.String(), "does not compile") {
				t.Errorf("no warning logged for the schema: %s", logs)
			}
			if strings.Contains(logs.String(), "root:") {
				t.Errorf("a file's content reached the log")
			}
		})
	}
}

func TestSchemaThatDoesNotCompilePassesCallsUnvalidated(t *testing.T) {
	call := toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"anything\":1}"`))
	up := newUpstream(t, reply{Body: call})
	srv, logs := guard(t, up, nil)
	req := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"click","parameters":{"type":12}}}]}`
	for range 3 {
		resp, body := post(t, srv, "/v1/chat/completions", req)
		if resp.StatusCode != 200 || string(body) != call || header(resp, "X-Toolguard-Outcome") != "unchecked" {
			t.Errorf("status %d outcome %q body %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
		}
	}
	if n := strings.Count(logs.String(), "does not compile"); n != 1 {
		t.Errorf("warned %d times, want once per schema", n)
	}
}

func TestLegacyFunctions(t *testing.T) {
	first := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
		`"function_call":{"name":"click","arguments":"{}"}},"finish_reason":"function_call"}],"usage":{"total_tokens":3}}`
	second := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
		`"function_call":{"name":"click","arguments":"{\"selector\":\"#x\"}"}},"finish_reason":"function_call"}],"usage":{"total_tokens":4}}`
	up := newUpstream(t, reply{Body: first}, reply{Body: second})
	srv, _ := guard(t, up, nil)
	req := `{"model":"m","messages":[{"role":"user","content":"go"}],"functions":[{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}`
	resp, body := post(t, srv, "/v1/chat/completions", req)
	out := mustJSON(t, body)
	if got := out.Get("choices.0.message.function_call.arguments").String(); got != `{"selector":"#x"}` {
		t.Errorf("function_call arguments %s", got)
	}
	if header(resp, "X-Toolguard-Outcome") != "reasked" || out.Get("usage.total_tokens").Int() != 7 {
		t.Errorf("outcome %q usage %s", header(resp, "X-Toolguard-Outcome"), out.Get("usage").Raw)
	}
	reqs := up.requests()
	if len(reqs) != 2 || gjson.GetBytes(reqs[1].Body, `messages.#(role=="function").name`).String() != "click" {
		t.Errorf("re-ask has no function message: %s", reqs[len(reqs)-1].Body)
	}
}

func TestUndeclaredToolIsInvalid(t *testing.T) {
	call := `{"id":"call_1","type":"function","function":{"name":"rm_rf","arguments":"{}"}}`
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, call)})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	if resp.StatusCode != 400 || !strings.Contains(string(body), `not declared`) {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

func TestModes(t *testing.T) {
	bare := toolReply(`{"total_tokens":1}`, clickCall("call_1", `"\"myCoolButton\""`))
	for _, tc := range []struct {
		mode     policy.Mode
		requests int
		status   int
		outcome  string
	}{
		{policy.ModeOff, 1, 200, ""},
		{policy.ModeValidate, 1, 400, "failed"},
		{policy.ModeReask, 3, 400, "failed"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			up := newUpstream(t, reply{Body: bare})
			srv, _ := guard(t, up, func(c *policy.Config) { c.Mode = tc.mode })
			resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
			if resp.StatusCode != tc.status || header(resp, "X-Toolguard-Outcome") != tc.outcome || len(up.requests()) != tc.requests {
				t.Errorf("status %d outcome %q requests %d; want %d %q %d: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), len(up.requests()), tc.status, tc.outcome, tc.requests, body)
			}
		})
	}
}

func TestObjectArgumentsAndEmptyArgumentsAreRepaired(t *testing.T) {
	noParams := `[{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}},` +
		`{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]`
	reply1 := toolReply(`{"total_tokens":1}`,
		`{"id":"call_1","type":"function","function":{"name":"now","arguments":""}}`,
		`{"id":"call_2","type":"function","function":{"name":"click","arguments":{"selector":"#a"}}}`)
	up := newUpstream(t, reply{Body: reply1})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[],"tools":`+noParams+`}`)
	out := mustJSON(t, body)
	got := []string{out.Get("choices.0.message.tool_calls.0.function.arguments").Raw, out.Get("choices.0.message.tool_calls.1.function.arguments").Raw}
	if diff := cmp.Diff(got, []string{`"{}"`, `"{\"selector\":\"#a\"}"`}); diff != "" {
		t.Errorf("arguments (-got +want):\n%s", diff)
	}
	if header(resp, "X-Toolguard-Outcome") != "repaired" || header(resp, "X-Toolguard-Repairs") != "2" || len(up.requests()) != 1 {
		t.Errorf("outcome %q repairs %q requests %d", header(resp, "X-Toolguard-Outcome"), header(resp, "X-Toolguard-Repairs"), len(up.requests()))
	}
}

// TestInvalidJSONRequestIsRefused: a chat request toolguard cannot read is
// refused, not forwarded uninspected (the upstream might read more into it).
func TestInvalidJSONRequestIsRefused(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", `{"model": "m", "tools": [`)
	if resp.StatusCode != 400 || mustJSON(t, body).Get("error.code").String() != "request_not_json" {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
	if got := up.requests(); len(got) != 0 {
		t.Errorf("the upstream got %d requests", len(got))
	}
}
