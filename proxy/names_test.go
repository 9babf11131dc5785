package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
)

// TestNamesAreNeverGuessed: a key or a tool name that is another word for
// a declared one (its opposite, its negation, a near spelling) is never
// mended, in a tool call or a call written as text, streamed or not, in
// either wire format. The model is asked again, told what the tool
// declares, and its answer is what the client gets. The same name in
// another style is mended with one upstream request.
func TestNamesAreNeverGuessed(t *testing.T) {
	nearMisses := []struct{ declared, sent string }{
		{"max_price", "min_price"},
		{"is_enabled", "is_disabled"},
		{"to_account", "from_account"},
		{"include_archived", "exclude_archived"},
		{"set_user", "get_user"},
		{"unlock_door", "lock_door"},
		{"known_tool", "unknown_tool"},
		{"disable_alerts", "enable_alerts"},
		{"selector", "element"},
	}
	styles := []struct{ declared, sent string }{
		{"max_price", "maxPrice"},
		{"set_user", "Set-User"},
		{"unlock_door", "UNLOCK_DOOR"},
	}
	type tc struct {
		name, declared, sent string
		tool, reask          bool // tool: the name is the tool's, not a key's
	}
	var cases []tc
	for _, nm := range nearMisses {
		cases = append(cases, tc{"key-" + nm.sent, nm.declared, nm.sent, false, true}, tc{"tool-" + nm.sent, nm.declared, nm.sent, true, true})
	}
	for _, s := range styles {
		cases = append(cases, tc{"key-" + s.sent, s.declared, s.sent, false, false}, tc{"tool-" + s.sent, s.declared, s.sent, true, false})
	}
	for _, format := range []string{"chat", "responses"} {
		for _, written := range []string{"call", "text"} {
			for _, stream := range []bool{false, true} {
				for _, c := range cases {
					t.Run(fmt.Sprintf("%s/%s/stream=%v/%s", format, written, stream, c.name), func(t *testing.T) {
						tool, key := "do_it", c.declared
						if c.tool {
							tool, key = c.declared, "value"
						}
						sentTool, sentKey := tool, key
						if c.tool {
							sentTool = c.sent
						} else {
							sentKey = c.sent
						}
						first := fake.Reply{Calls: []fake.Call{{ID: "call_1", Name: sentTool, Args: fmt.Sprintf(`{%q:"x"}`, sentKey)}}}
						if written == "text" {
							first = fake.Reply{Text: fmt.Sprintf(`<tool_call>{"name": %q, "arguments": {%q: "x"}}</tool_call>`, sentTool, sentKey)}
						}
						corrected := fake.Reply{Calls: []fake.Call{{ID: "call_2", Name: tool, Args: fmt.Sprintf(`{%q:"x"}`, key)}}}
						f, path, req := fake.Chat, "/v1/chat/completions", namesChatRequest(tool, key)
						if format == "responses" {
							f, path, req = fake.Responses, "/v1/responses", namesResponsesRequest(tool, key)
						}
						if stream {
							req = strings.TrimSuffix(req, "}") + `,"stream":true}`
						}
						up := newUpstream(t)
						up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
							reply := first
							if i > 0 {
								reply = corrected
							}
							if gjson.GetBytes(up.requests()[i].Body, "stream").Bool() {
								w.Header().Set("Content-Type", "text/event-stream")
								for _, ev := range f.Events(reply, 5) {
									io.WriteString(w, ev)
								}
								return
							}
							w.Header().Set("Content-Type", "application/json")
							io.WriteString(w, f.JSON(reply))
						}
						srv, _ := guard(t, up, nil)
						resp, body := post(t, srv, path, req)
						if resp.StatusCode != http.StatusOK {
							t.Fatalf("status %d: %s", resp.StatusCode, body)
						}
						calls := namesCalls(t, format, stream, body)
						want := []string{tool + " " + fmt.Sprintf(`{%q:"x"}`, key)}
						if fmt.Sprint(calls) != fmt.Sprint(want) {
							t.Errorf("the client got calls %q, want %q\n%s", calls, want, body)
						}
						got := up.requests()
						if !c.reask {
							if len(got) != 1 {
								t.Errorf("upstream got %d requests, want 1: %s is mended", len(got), c.sent)
							}
							return
						}
						if len(got) != 2 {
							t.Fatalf("upstream got %d requests, want a first and one re-ask", len(got))
						}
						reask := string(got[1].Body)
						hint := fmt.Sprintf(`unknown property \"%s\"; tool \"%s\" declares \"%s\"`, c.sent, tool, key)
						if c.tool {
							hint = fmt.Sprintf(`tool \"%s\" is not declared; the declared tools are: %s`, c.sent, tool)
						}
						if !strings.Contains(reask, hint) {
							t.Errorf("the re-ask does not say %s:\n%s", hint, reask)
						}
						if !stream && resp.Header.Get("X-Toolguard-Outcome") != "reasked" {
							t.Errorf("outcome %q, want reasked", resp.Header.Get("X-Toolguard-Outcome"))
						}
					})
				}
			}
		}
	}
}

func namesSchema(key string) string {
	return fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]}`, key, key)
}

func namesChatRequest(tool, key string) string {
	return fmt.Sprintf(`{"model":"gpt-test","messages":[{"role":"user","content":"Do it."}],"tools":[{"type":"function","function":{"name":%q,"parameters":%s}}]}`, tool, namesSchema(key))
}

func namesResponsesRequest(tool, key string) string {
	return fmt.Sprintf(`{"model":"gpt-test","input":"Do it.","tools":[{"type":"function","name":%q,"parameters":%s}]}`, tool, namesSchema(key))
}

// namesCalls lists the calls a client reads, as "name arguments".
func namesCalls(t *testing.T, format string, stream bool, body []byte) []string {
	var out []string
	switch {
	case format == "chat" && stream:
		for _, c := range assemble(t, body).Calls[0] {
			f := strings.SplitN(c, " ", 3)
			out = append(out, f[1]+" "+compact(f[2]))
		}
	case format == "chat":
		gjson.GetBytes(body, "choices.0.message.tool_calls").ForEach(func(_, c gjson.Result) bool {
			out = append(out, c.Get("function.name").Str+" "+compact(c.Get("function.arguments").Str))
			return true
		})
	default:
		var calls []string
		if stream {
			calls = readResponseStream(t, body).calls
		} else {
			calls = responseCalls(gjson.ParseBytes(body))
		}
		for _, c := range calls {
			f := strings.SplitN(c, " ", 3)
			out = append(out, f[1]+" "+compact(f[2]))
		}
	}
	return out
}
