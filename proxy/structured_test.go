package proxy_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

const weatherFormat = `,"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` +
	`{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"number"}},` +
	`"required":["city","temperature"],"additionalProperties":false}}}`

func structuredRequest(extra string) string {
	return `{"model":"gpt-test","messages":[{"role":"user","content":"The weather in Paris?"}]` + weatherFormat + extra + `}`
}

// scriptChat makes up answer a first request with first and each re-ask
// with the next of corrected (the last repeats), streamed or not as the
// request asks; it returns the bodies of the re-asks.
func scriptChat(up *fakeUpstream, first fake.Reply, corrected ...fake.Reply) func() [][]byte {
	up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
		body := up.requests()[i].Body
		reply := first
		if n := len(reasksOf(up)); n > 0 && isStructuredReask(body) {
			reply = corrected[min(n-1, len(corrected)-1)]
		}
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range fake.Chat.Events(reply, 7) {
				w.Write([]byte(ev))
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(fake.Chat.JSON(reply)))
	}
	return func() [][]byte { return reasksOf(up) }
}

// isStructuredReask tells toolguard's re-ask of content: the last message
// says the reply is not valid for the response format.
func isStructuredReask(body []byte) bool {
	return strings.Contains(gjson.GetBytes(body, "messages.@reverse.0.content").Str, "not valid for the requested response format")
}

func reasksOf(up *fakeUpstream) [][]byte {
	var out [][]byte
	for _, r := range up.requests() {
		if isStructuredReask(r.Body) {
			out = append(out, r.Body)
		}
	}
	return out
}

func TestStructuredOutputs(t *testing.T) {
	const want = `{"city":"Paris","temperature":21}`
	tests := []struct {
		name       string
		content    string
		corrected  string
		cut        bool
		wantStatus int
		wantReasks int
		outcome    string
		wantText   string // the content the client gets, parsed and re-encoded compactly
	}{
		{name: "valid", content: want, wantStatus: 200, outcome: "valid", wantText: want},
		{name: "fenced", content: "```json\n" + want + "\n```", wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "prose", content: "Here is the weather:\n" + want + "\nHope it helps.", wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "single-quotes", content: `{'city': 'Paris', 'temperature': 21}`, wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "python-literals", content: `{'city': 'Paris', 'temperature': 21, 'note': None}`, wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "trailing-comma", content: `{"city": "Paris", "temperature": 21,}`, wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "double-encoded", content: `"{\"city\":\"Paris\",\"temperature\":21}"`, wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "wrong-type", content: `{"city":"Paris","temperature":"21"}`, wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "truncated-complete", content: `{"temperature":21,"city":"Paris"`, wantStatus: 200, outcome: "repaired", wantText: want},
		{name: "truncated-number", content: `{"city":"Paris","temperature":21`, corrected: want, wantStatus: 200, wantReasks: 1, outcome: "reasked", wantText: want},
		{name: "truncated-missing", content: `{"city":"Paris"`, corrected: want, wantStatus: 200, wantReasks: 1, outcome: "reasked", wantText: want},
		{name: "missing-required", content: `{"city":"Paris"}`, corrected: want, wantStatus: 200, wantReasks: 1, outcome: "reasked", wantText: want},
		{name: "never-corrects", content: `{"city":"Paris"}`, corrected: `{"city":"Paris"}`, wantStatus: 400, wantReasks: 2, outcome: "failed"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				up := newUpstream(t)
				reasks := scriptChat(up, fake.Reply{Text: tt.content, In: 10, Out: 5}, fake.Reply{Text: tt.corrected, In: 20, Out: 6})
				srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 2 })
				extra := ""
				if stream {
					extra = `,"stream":true,"stream_options":{"include_usage":true}`
				}
				resp, body := post(t, srv, "/v1/chat/completions", structuredRequest(extra))
				if n := len(reasks()); n != tt.wantReasks {
					t.Errorf("%d re-asks, want %d", n, tt.wantReasks)
				}
				var content string
				var usage int64
				if stream {
					a := assemble(t, body)
					if tt.wantStatus == 400 {
						if !strings.Contains(a.Error, "output_invalid") {
							t.Fatalf("stream error %q, want output_invalid:\n%s", a.Error, body)
						}
						return
					}
					if !strings.Contains(a.Comment, "outcome="+tt.outcome) {
						t.Errorf("comment %q, want outcome %s", a.Comment, tt.outcome)
					}
					content = a.Content[0]
					usage = gjson.Get(a.Usage, "prompt_tokens").Int()
				} else {
					if resp.StatusCode != tt.wantStatus || header(resp, "X-Toolguard-Outcome") != tt.outcome {
						t.Fatalf("status %d outcome %q, want %d %s: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), tt.wantStatus, tt.outcome, body)
					}
					if tt.wantStatus == 400 {
						if gjson.GetBytes(body, "error.code").Str != "output_invalid" || !gjson.GetBytes(body, "error.details.0.errors").IsArray() {
							t.Errorf("failure body %s", body)
						}
						return
					}
					content = gjson.GetBytes(body, "choices.0.message.content").Str
					usage = gjson.GetBytes(body, "usage.prompt_tokens").Int()
					if tt.outcome == "valid" && string(body) != fake.Chat.JSON(fake.Reply{Text: tt.content, In: 10, Out: 5}) {
						t.Errorf("a valid reply changed:\n%s", body)
					}
				}
				if got := compact(content); got != tt.wantText {
					t.Errorf("content %q, want %s", content, tt.wantText)
				}
				if want := int64(10 + 20*tt.wantReasks); usage != want {
					t.Errorf("usage.prompt_tokens %d, want %d summed over the attempts", usage, want)
				}
			})
		}
	}
}

func compact(s string) string {
	if !gjson.Valid(s) {
		return "not JSON: " + s
	}
	return string(gjson.Parse(s).Get("@ugly").Raw)
}

// TestStructuredOutputsSwitch: TOOLGUARD_RESPONSE_FORMAT=off and the
// request header leave the content as the model wrote it; a refusal passes.
func TestStructuredOutputsSwitch(t *testing.T) {
	fenced := "```json\n{\"city\":\"Paris\",\"temperature\":21}\n```"
	for _, tc := range []struct {
		name    string
		change  func(*policy.Config)
		header  http.Header
		reply   fake.Reply
		outcome string
	}{
		{name: "env-off", change: func(c *policy.Config) { c.ResponseFormat = policy.ModeOff }, reply: fake.Reply{Text: fenced}, outcome: ""},
		{name: "header-validate", header: http.Header{"X-Toolguard-Response-Format": {"validate"}}, reply: fake.Reply{Text: fenced}, outcome: "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: fake.Chat.JSON(tc.reply)})
			srv, _ := guard(t, up, tc.change)
			resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", structuredRequest(""), tc.header)
			if got := header(resp, "X-Toolguard-Outcome"); got != tc.outcome {
				t.Errorf("outcome %q, want %q: %s", got, tc.outcome, body)
			}
		})
	}
	refusal := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`
	up := newUpstream(t, reply{Body: refusal})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", structuredRequest(""))
	if resp.StatusCode != 200 || string(body) != refusal {
		t.Errorf("a refusal: %d %s", resp.StatusCode, body)
	}
}
