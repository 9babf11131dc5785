package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

// The structured output the tests below ask for, and its one valid answer.
const (
	outputWant    = `{"city":"Paris","temperature":21}`
	outputInvalid = `{"city":"Paris"}`
	outputFormat  = `{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"number"}},"required":["city","temperature"],"additionalProperties":false}`
)

func responsesFormatRequest(extra string) string {
	return `{"model":"gpt-test","input":"The weather in Paris?","text":{"format":{"type":"json_schema","name":"weather","strict":true,"schema":` + outputFormat + `}}` + extra + `}`
}

// nodeResponse is what openai-node's ResponseStream makes of a Responses
// stream: the text of each part as its events build it (output_item.added,
// content_part.added, output_text.delta appended), which its listeners
// show, and the final response's, which finalResponse() returns and parses.
type nodeResponse struct {
	snapshot  []string // the text of each output_text part, as the deltas made it
	done      []string // the text of each output_text.done and content_part.done event, which its listeners get
	completed []string // the text of each output_text part of response.completed
	errCode   string
}

func readNodeResponse(t *testing.T, body []byte) nodeResponse {
	t.Helper()
	var n nodeResponse
	type part struct{ typ, text string }
	var output [][]*part
	for _, ev := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		var data string
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data += d
			}
		}
		if data == "" || data == "[DONE]" {
			continue
		}
		e := gjson.Parse(data)
		oi, ci := int(e.Get("output_index").Int()), int(e.Get("content_index").Int())
		switch e.Get("type").Str {
		case "error":
			n.errCode = e.Get("code").Str
		case "response.output_item.added":
			var parts []*part
			e.Get("item.content").ForEach(func(_, p gjson.Result) bool {
				parts = append(parts, &part{p.Get("type").Str, p.Get("text").Str})
				return true
			})
			output = append(output, parts)
		case "response.content_part.added":
			if oi < len(output) {
				output[oi] = append(output[oi], &part{e.Get("part.type").Str, e.Get("part.text").Str})
			}
		case "response.output_text.delta":
			if oi < len(output) && ci < len(output[oi]) {
				output[oi][ci].text += e.Get("delta").Str
			}
		case "response.output_text.done":
			n.done = append(n.done, e.Get("text").Str)
		case "response.content_part.done":
			if e.Get("part.type").Str == "output_text" {
				n.done = append(n.done, e.Get("part.text").Str)
			}
		case "response.completed":
			e.Get("response.output").ForEach(func(_, it gjson.Result) bool {
				it.Get("content").ForEach(func(_, p gjson.Result) bool {
					if p.Get("type").Str == "output_text" {
						n.completed = append(n.completed, p.Get("text").Str)
					}
					return true
				})
				return true
			})
		}
	}
	for _, parts := range output {
		for _, p := range parts {
			if p.typ == "output_text" {
				n.snapshot = append(n.snapshot, p.text)
			}
		}
	}
	return n
}

// setEvents applies set to the data of each event of a stream whose type
// is typ.
func setEvents(t *testing.T, events []string, typ string, set func(data string) string) []string {
	t.Helper()
	var out []string
	for _, ev := range events {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		if ok && gjson.Get(data, "type").Str == typ {
			ev = name + "\ndata: " + set(strings.TrimSuffix(data, "\n\n")) + "\n\n"
		}
		out = append(out, ev)
	}
	return out
}

func mustSet(t *testing.T, data, path string, v any) string {
	t.Helper()
	out, err := sjson.Set(data, path, v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestResponsesOutputEveryCopy: a Responses stream carries its text several
// times over (the deltas a client joins, the done events, the item, the
// terminal response). Whichever copy a client reads is the checked one.
func TestResponsesOutputEveryCopy(t *testing.T) {
	valid := fake.Responses.Events(fake.Reply{Text: outputWant}, 4)
	tests := []struct {
		name   string
		events []string
	}{
		{"invalid deltas", func() []string {
			first := true
			return setEvents(t, valid, "response.output_text.delta", func(d string) string {
				text := ""
				if first {
					text, first = outputInvalid, false
				}
				return mustSet(t, d, "delta", text)
			})
		}()},
		{"invalid text done", setEvents(t, valid, "response.output_text.done", func(d string) string { return mustSet(t, d, "text", outputInvalid) })},
		{"invalid part done", setEvents(t, valid, "response.content_part.done", func(d string) string { return mustSet(t, d, "part.text", outputInvalid) })},
		{"invalid completed", setEvents(t, valid, "response.completed", func(d string) string {
			return mustSet(t, d, "response.output.0.content.0.text", outputInvalid)
		})},
		{"no deltas", func() []string {
			var out []string
			for _, ev := range valid {
				if !strings.Contains(ev, "response.output_text.delta") {
					out = append(out, ev)
				}
			}
			return out
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(strings.Join(tt.events, "")))
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
			_, body := post(t, srv, "/v1/responses", responsesFormatRequest(`,"stream":true`))
			n := readNodeResponse(t, body)
			if n.errCode != "" {
				t.Fatalf("stream failed with %s:\n%s", n.errCode, body)
			}
			want := fmt.Sprint([]string{outputWant})
			if fmt.Sprint(n.snapshot) != want || fmt.Sprint(n.completed) != want || fmt.Sprint(n.done) != fmt.Sprint([]string{outputWant, outputWant}) {
				t.Errorf("the client assembled %q, its done events say %q and its final response %q; want the checked %s each time\n%s", n.snapshot, n.done, n.completed, outputWant, body)
			}
		})
	}
}

// TestOutputShapesNotReadAreRefused: under a JSON response format, output
// text in a shape toolguard does not check is refused, streamed or not,
// never passed as "none"; a refusal alone passes.
func TestOutputShapesNotReadAreRefused(t *testing.T) {
	text := func(s string) string { return `{"type":"output_text","annotations":[],"text":` + fake.Quote(s) + `}` }
	refusal := `{"type":"refusal","refusal":"I can't help with that."}`
	message := func(id string, parts ...string) string {
		return `{"id":"` + id + `","type":"message","status":"completed","role":"assistant","content":[` + strings.Join(parts, ",") + `]}`
	}
	for _, tc := range []struct {
		name   string
		output []string // the output items
		refuse bool
	}{
		{"two text parts", []string{message("msg_1", text(outputWant), text(outputInvalid))}, true},
		{"text and refusal", []string{message("msg_1", text(outputInvalid), refusal)}, true},
		{"two messages", []string{message("msg_1", text(outputWant)), message("msg_2", text(outputInvalid))}, true},
		{"a part of another type", []string{message("msg_1", `{"type":"output_audio","text":"{}"}`)}, true},
		{"refusal only", []string{message("msg_1", refusal)}, false},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				resp := fake.Responses.JSON(fake.Reply{Text: "x"})
				resp, err := sjson.SetRaw(resp, "output", "["+strings.Join(tc.output, ",")+"]")
				if err != nil {
					t.Fatal(err)
				}
				up := newUpstream(t, reply{Body: resp})
				extra := ""
				if stream {
					up = newUpstream(t, sseReply(responsesStreamOf(t, resp)))
					extra = `,"stream":true`
				}
				srv, _ := guard(t, up, nil)
				got, body := post(t, srv, "/v1/responses", responsesFormatRequest(extra))
				code := gjson.GetBytes(body, "error.code").Str
				if stream {
					code = readNodeResponse(t, body).errCode
				}
				switch {
				case tc.refuse && code != "upstream_malformed_reply":
					t.Errorf("status %d, error %q, want upstream_malformed_reply:\n%s", got.StatusCode, code, body)
				case !tc.refuse && (code != "" || got.StatusCode != 200):
					t.Errorf("a refusal: status %d, error %q:\n%s", got.StatusCode, code, body)
				}
			})
		}
	}
}

// responsesStreamOf streams a response as the API does: each item added,
// its parts added, their text in one delta, done, and the response
// completed.
func responsesStreamOf(t *testing.T, resp string) string {
	var b strings.Builder
	seq := 0
	ev := func(data string) {
		data = mustSet(t, data, "sequence_number", seq)
		seq++
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", gjson.Get(data, "type").Str, data)
	}
	ev(`{"type":"response.created","response":` + mustSet(t, mustSet(t, resp, "status", "in_progress"), "output", []any{}) + `}`)
	gjson.Get(resp, "output").ForEach(func(i, it gjson.Result) bool {
		at := fmt.Sprintf(`,"output_index":%d`, i.Int())
		added := mustSet(t, it.Raw, "content", []any{})
		ev(`{"type":"response.output_item.added"` + at + `,"item":` + added + `}`)
		it.Get("content").ForEach(func(j, p gjson.Result) bool {
			ct := at + fmt.Sprintf(`,"item_id":%q,"content_index":%d`, it.Get("id").Str, j.Int())
			ev(`{"type":"response.content_part.added"` + ct + `,"part":` + mustSet(t, mustSet(t, p.Raw, "text", ""), "refusal", "") + `}`)
			if p.Get("type").Str == "output_text" {
				ev(`{"type":"response.output_text.delta"` + ct + `,"delta":` + fake.Quote(p.Get("text").Str) + `}`)
				ev(`{"type":"response.output_text.done"` + ct + `,"text":` + fake.Quote(p.Get("text").Str) + `}`)
			}
			ev(`{"type":"response.content_part.done"` + ct + `,"part":` + p.Raw + `}`)
			return true
		})
		ev(`{"type":"response.output_item.done"` + at + `,"item":` + it.Raw + `}`)
		return true
	})
	ev(`{"type":"response.completed","response":` + resp + `}`)
	return b.String()
}

// TestChatOutputEveryCopy: under a JSON response_format, chat content that
// clients would assemble other than toolguard reads it is refused, and a
// choice with no content is checked as an empty output, streamed or not.
func TestChatOutputEveryCopy(t *testing.T) {
	chunk := func(delta string, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	half := len(outputInvalid) / 2
	for _, tc := range []struct {
		name, body string
		stream     bool
		wantCode   string // the error the client gets; "" for the corrected output after one re-ask
		wantReask  bool
	}{
		{name: "content array", body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":` + fake.Quote(outputInvalid) + `}]},"finish_reason":"stop"}]}`,
			wantCode: "upstream_malformed_reply"},
		{name: "content number", body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":5},"finish_reason":"stop"}]}`,
			wantCode: "upstream_malformed_reply"},
		{name: "delta array around the string", stream: true, wantCode: "upstream_malformed_reply",
			body: chunk(`{"role":"assistant","content":[]}`, "null") + chunk(`{"content":`+fake.Quote(outputInvalid[:half])+`}`, "null") +
				chunk(`{"content":[`+fake.Quote(outputInvalid[half:])+`]}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"},
		{name: "delta number", stream: true, wantCode: "upstream_malformed_reply",
			body: chunk(`{"role":"assistant","content":`+fake.Quote(outputInvalid)+`}`, "null") + chunk(`{"content":7}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"},
		{name: "null content", body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`,
			wantReask: true},
		{name: "no content delta", stream: true, wantReask: true,
			body: chunk(`{"role":"assistant"}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			up.handle = func(w http.ResponseWriter, r *http.Request, i int) {
				if i > 0 { // a re-ask, never streamed
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, fake.Chat.JSON(fake.Reply{Text: outputWant}))
					return
				}
				w.Header().Set("Content-Type", map[bool]string{true: "text/event-stream", false: "application/json"}[tc.stream])
				io.WriteString(w, tc.body)
			}
			srv, _ := guard(t, up, nil)
			extra := ""
			if tc.stream {
				extra = `,"stream":true`
			}
			resp, body := post(t, srv, "/v1/chat/completions", structuredRequest(extra))
			var code, content string
			if tc.stream {
				a := assemble(t, body)
				code, content = gjson.Get(a.Error, "code").Str, a.Content[0]
			} else {
				code, content = gjson.GetBytes(body, "error.code").Str, gjson.GetBytes(body, "choices.0.message.content").Str
			}
			if code != tc.wantCode {
				t.Fatalf("status %d, error %q, want %q:\n%s", resp.StatusCode, code, tc.wantCode, body)
			}
			if tc.wantCode != "" {
				if strings.Contains(content, "Paris") {
					t.Errorf("content reached the client unchecked: %q", content)
				}
				return
			}
			if compact(content) != outputWant {
				t.Errorf("content %q, want %s", content, outputWant)
			}
			if n := len(up.requests()); tc.wantReask && n != 2 {
				t.Errorf("%d upstream requests, want a first and one re-ask", n)
			}
		})
	}
}

// TestOutputRefusalAndStrayText: a refusal streamed under a JSON
// response_format passes unchecked, with its content; text events for a
// Responses item that no message added are refused.
func TestOutputRefusalAndStrayText(t *testing.T) {
	refusal := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","refusal":"I can't."},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" + "data: [DONE]\n\n"
	up := newUpstream(t, sseReply(refusal))
	srv, _ := guard(t, up, nil)
	_, body := post(t, srv, "/v1/chat/completions", structuredRequest(`,"stream":true`))
	if string(body) != refusal || len(up.requests()) != 1 {
		t.Errorf("a streamed refusal changed or was re-asked:\n%s", body)
	}

	stray := setEvents(t, fake.Responses.Events(fake.Reply{Text: outputWant}, 4), "response.output_text.delta", func(d string) string {
		return mustSet(t, d, "output_index", 3)
	})
	up = newUpstream(t, sseReply(strings.Join(stray, "")))
	srv, _ = guard(t, up, nil)
	_, body = post(t, srv, "/v1/responses", responsesFormatRequest(`,"stream":true`))
	if n := readNodeResponse(t, body); n.errCode != "upstream_malformed_reply" || strings.Contains(strings.Join(n.snapshot, ""), "Paris") {
		t.Errorf("text of no message: error %q, client assembled %q:\n%s", n.errCode, n.snapshot, body)
	}
}
