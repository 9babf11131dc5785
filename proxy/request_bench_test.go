package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tidwall/gjson"

	"github.com/toolguard/toolguard/internal/bfcl"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// BenchmarkRequestRead is the request side of an inspected request, without
// HTTP: the strict reading, the history mender (with the prefix cache) and
// opening what the request declares, as inspectRoute runs them: one user
// message, and about 40 KB of turns sent again (second turn: the cache
// knows the prefix; first turn: it does not), plain user messages
// (history) or the load test's agent conversation (fake.AgentHistory).
func BenchmarkRequestRead(b *testing.B) {
	turn := `{"role":"user","content":"` + strings.Repeat("Click the next button on the page. ", 28) + `"},`
	short := `{"model":"gpt-4o","messages":[{"role":"user","content":"Log in."}],"tools":` + faulty.ClickTools + `}`
	long := strings.Replace(short, `"messages":[`, `"messages":[`+strings.Repeat(turn, 40), 1)
	rturn := `{"role":"user","content":"` + strings.Repeat("Click the next button on the page. ", 28) + `"},`
	rlong := `{"model":"gpt-4o","input":[` + strings.Repeat(rturn, 40) + `{"role":"user","content":"Log in."}],"tools":[{"type":"function","name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}`
	agent := strings.Replace(short, `"messages":[`, `"messages":[`+fake.AgentHistory(), 1)
	mlong := `{"model":"m","max_tokens":1024,"messages":[` + strings.Repeat(turn, 40) + `{"role":"user","content":"Log in."}],"tools":[{"name":"click","input_schema":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}`
	many := strings.Replace(short, faulty.ClickTools, bfclChatTools(b, manyTools), 1)
	for _, c := range []struct {
		name string
		f    format
		body string
		// first: every request is a conversation of its own, its first
		// message numbered, as on a conversation's first turn: the cache
		// knows the others, of the same length, and none of its prefixes.
		first bool
		tools int // how many the request declares
	}{
		{"chat/short", chatFormat, short, false, 1},
		{"chat/many-tools", chatFormat, many, false, manyTools},
		{"chat/history", chatFormat, long, false, 1},
		{"chat/history-first-turn", chatFormat, long, true, 1},
		{"chat/agent-history", chatFormat, agent, false, 1},
		{"chat/agent-history-first-turn", chatFormat, agent, true, 1},
		{"responses/history", responsesFormat, rlong, false, 1},
		{"messages/history", messagesFormat, mlong, false, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			cache, decls := ladder.NewHistoryCache(), ladder.NewDeclarations()
			scope := cache.Scope(c.f.name, "Bearer k")
			body := []byte(c.body)
			const first = `{"role":"system","content":"Conversation 00000000."},`
			number := -1 // where the conversation's number is in body
			if c.first {
				body = []byte(strings.Replace(c.body, "[", "["+first, 1))
				number = strings.Index(string(body), "00000000")
			}
			r := httptest.NewRequest("POST", "/v1"+c.f.path, nil)
			r.Header.Set("Content-Type", "application/json")
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			i := 0
			for b.Loop() {
				if number >= 0 {
					i++
					for j, n := number+7, i; j >= number; j, n = j-1, n/10 {
						body[j] = byte('0' + n%10)
					}
				}
				turn := cache.Use(scope)
				m, release, err := readRequest(r, body, 1<<30, newByteBudget(1<<30), c.f, turn.KnownPrefix(), decls, wire.Repeats{})
				if err != nil {
					b.Fatal(err)
				}
				if _, edits, err := c.f.mendHistory(m, turn); err != nil || len(edits) != 0 {
					b.Fatal(err, edits)
				}
				if q := c.f.open(m, decls, true); q == nil || q.Tools().Len() != c.tools {
					b.Fatal("no tools opened")
				}
				if c.f.uninspectable != nil && c.f.uninspectable(m, true) != "" {
					b.Fatal("uninspectable")
				}
				m.Release()
				release()
			}
		})
	}
}

// manyTools is how many tools an agent with many declares: about 20 KB of
// declarations from the BFCL corpus.
const manyTools = 24

// bfclChatTools declares the first n functions of distinct names in the
// BFCL corpus as chat tools.
func bfclChatTools(b *testing.B, n int) string {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	var tools []string
	for _, c := range cases {
		for _, fn := range c.Functions {
			if len(tools) == n || seen[fn.Name] {
				continue
			}
			seen[fn.Name] = true
			desc, _ := json.Marshal(fn.Description)
			tools = append(tools, `{"type":"function","function":{"name":`+strconv.Quote(fn.Name)+`,"description":`+string(desc)+`,"parameters":`+string(fn.Parameters)+`}}`)
		}
	}
	if len(tools) < n {
		b.Fatalf("%d functions in the corpus, want %d", len(tools), n)
	}
	return "[" + strings.Join(tools, ",") + "]"
}

// BenchmarkTokenisers reads the load test's 41 KB agent conversation (a
// first turn: nothing known) with chat's strict reading (and its one tool's
// declaration) alone, without the history's mending, and with what a
// reading cannot do without: one pass of jsontext, the tokeniser under the
// strict reading, skipping the whole body, and gjson's check that it is
// valid JSON (no duplicate names refused, no letter case compared). What the
// strict reading costs above them is the part of a first turn's reading
// that toolguard's own code decides.
func BenchmarkTokenisers(b *testing.B) {
	body := []byte(strings.Replace(`{"model":"gpt-4o","messages":[{"role":"user","content":"Log in."}],"tools":`+faulty.ClickTools+`}`,
		`"messages":[`, `"messages":[`+fake.AgentHistory(), 1))
	b.Run("strict", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			m, err := chatFormat.read(body, nil, nil, wire.Repeats{})
			if err != nil {
				b.Fatal(err)
			}
			m.Release()
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		var r bytes.Reader
		d := jsontext.NewDecoder(&r)
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			r.Reset(body)
			d.Reset(&r)
			if err := d.SkipValue(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gjson-valid", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !gjson.ValidBytes(body) {
				b.Fatal("not valid")
			}
		}
	})
}

// BenchmarkReplyRead is the reply side of an inspected chat completion,
// without HTTP: the strict reading, the usage, and the ladder over its one
// call (the load test's replies: valid, and a key in the wrong letter case
// that is repaired), as exchange.inspect runs them; and a response of the
// Responses API with a valid call, which echoes its request's instructions
// (2 KB here) and tools before its usage, as OpenAI's do; and a reply of
// the Messages API; each also with the key in the wrong letter case.
func BenchmarkReplyRead(b *testing.B) {
	chatReply := func(args string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-2025",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_Xc4Aiih37EUJvqjoZlu4Vdoi","type":"function","function":{"name":"click","arguments":"` + args + `"}}` +
			`]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}`
	}
	tools := `[{"type":"function","name":"click","description":"Click an element","strict":false,` +
		`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]`
	instructions := wire.Quote(strings.Repeat("You operate a web browser for the user. ", 50))
	responsesReply := func(args string) string {
		return `{"id":"resp_1","object":"response","created_at":1,"status":"completed","error":null,` +
			`"incomplete_details":null,"instructions":` + instructions + `,"max_output_tokens":null,"model":"gpt-test-2025",` +
			`"output":[{"id":"fc_1","type":"function_call","status":"completed","arguments":"` + args + `",` +
			`"call_id":"call_Xc4Aiih37EUJvqjoZlu4Vdoi","name":"click"}],"parallel_tool_calls":true,"previous_response_id":null,` +
			`"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"}},` +
			`"tool_choice":"auto","tools":` + tools + `,"top_p":1.0,"truncation":"disabled",` +
			`"usage":{"input_tokens":82,"output_tokens":17,"total_tokens":99},"user":null,"metadata":{}}`
	}
	messagesRequest := `{"model":"claude-test","max_tokens":256,"messages":[{"role":"user","content":"Log in."}],"tools":` +
		`[{"name":"click","description":"Click an element","input_schema":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}`
	messagesReply := func(input string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-2025","content":[` +
			`{"type":"text","text":"Logging in."},{"type":"tool_use","id":"toolu_1","name":"click","input":` + input + `}],` +
			`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":82,"output_tokens":17}}`
	}
	for _, c := range []struct {
		name    string
		f       format
		req     string
		reply   string
		outcome ladder.Outcome
	}{
		{"valid", chatFormat, `{"model":"gpt-4o","messages":[{"role":"user","content":"Log in."}],"tools":` + faulty.ClickTools + `}`,
			chatReply(`{\"selector\":\"#login-button\"}`), ladder.OutcomeValid},
		{"repaired", chatFormat, `{"model":"gpt-4o","messages":[{"role":"user","content":"Log in."}],"tools":` + faulty.ClickTools + `}`,
			chatReply(`{\"Selector\":\"#login-button\"}`), ladder.OutcomeRepaired},
		{"responses/valid", responsesFormat, `{"model":"gpt-4o","instructions":` + instructions + `,"input":"Log in.","tools":` + tools + `}`,
			responsesReply(`{\"selector\":\"#login-button\"}`), ladder.OutcomeValid},
		{"responses/repaired", responsesFormat, `{"model":"gpt-4o","instructions":` + instructions + `,"input":"Log in.","tools":` + tools + `}`,
			responsesReply(`{\"Selector\":\"#login-button\"}`), ladder.OutcomeRepaired},
		{"messages/valid", messagesFormat, messagesRequest, messagesReply(`{"selector":"#login-button"}`), ladder.OutcomeValid},
		{"messages/repaired", messagesFormat, messagesRequest, messagesReply(`{"Selector":"#login-button"}`), ladder.OutcomeRepaired},
	} {
		// As a client's replies are read (each compared with the one
		// before, which it repeats), and each read in full ("-full").
		for _, full := range []bool{false, true} {
			name := c.name
			if full {
				name += "-full"
			}
			b.Run(name, func(b *testing.B) {
				benchReplyRead(b, c.f, c.req, []byte(c.reply), c.outcome, full)
			})
		}
	}
}

// benchReplyRead is one case of BenchmarkReplyRead.
func benchReplyRead(b *testing.B, f format, req string, reply []byte, outcome ladder.Outcome, full bool) {
	h, q, pol := benchExchange(b, f, req)
	repeats := h.replies.For(1)
	if full {
		repeats = wire.Repeats{}
	}
	b.ReportAllocs()
	for b.Loop() {
		ex := h.newExchange(context.Background(), f, q, pol)
		if err := ex.req.ReadReply(reply, repeats); err != nil {
			b.Fatal(err)
		}
		ex.noteUsage(reply, false)
		if _, body, err := ex.run(reply); err != nil || len(body) == 0 || ex.x.Outcome != outcome {
			b.Fatal(err, ex.x.Outcome)
		}
	}
}

// BenchmarkStreamEvents is the events of a streamed reply through each
// format's handling, without HTTP: 50 text deltas and a valid call whose
// arguments come in three, as the fake model streams them in the format,
// read from the upstream's body in one piece.
func BenchmarkStreamEvents(b *testing.B) {
	reply := fake.Reply{Text: strings.Repeat("word ", 80), Calls: []fake.Call{{ID: "call_1", Name: "click", Args: `{"selector":"#login-button"}`}}, In: 82, Out: 17}
	const clickSchema = `{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`
	// A call alone, its arguments (208 bytes) in deltas of 4 bytes: 52 of
	// them, as models stream arguments a token at a time.
	call := fake.Reply{Calls: []fake.Call{{ID: "call_1", Name: "click", Args: `{"selector":"` + strings.Repeat("#login-button ", 14) + `"}`}}, In: 82, Out: 17}
	const chatRequest = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Log in."}],"tools":` + faulty.ClickTools + `}`
	for _, c := range []struct {
		name  string
		f     format
		fake  fake.Format
		req   string
		reply fake.Reply
		frag  int
	}{
		{"chat", chatFormat, fake.Chat, chatRequest, reply, 8},
		{"chat-call", chatFormat, fake.Chat, chatRequest, call, 4},
		{"responses", responsesFormat, fake.Responses, `{"model":"gpt-4o","stream":true,"input":"Log in.","tools":[{"type":"function","name":"click","parameters":` + clickSchema + `}]}`, reply, 8},
		{"messages", messagesFormat, fake.Messages, `{"model":"claude-test","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Log in."}],"tools":[{"name":"click","input_schema":` + clickSchema + `}]}`, reply, 8},
	} {
		for _, name := range []string{c.name, c.name + "-first"} {
			b.Run(name, func(b *testing.B) {
				// Text in deltas of 8 bytes: 50 of them; arguments in 3.
				events := c.fake.Events(c.reply, c.frag)
				var sb strings.Builder
				for _, ev := range events {
					sb.WriteString(ev)
				}
				stream := sb.String()
				h, q, pol := benchExchange(b, c.f, c.req)
				// starts: as a client's streams, one after another, whose first
				// events repeat those of the stream before; or each read as
				// the first stream of a client (-first).
				var starts wire.Repeats
				if !strings.HasSuffix(b.Name(), "-first") {
					starts = h.starts.For(1)
				}
				var out bytes.Buffer
				b.ReportAllocs()
				b.SetBytes(int64(len(stream)))
				for b.Loop() {
					ex := h.newExchange(context.Background(), c.f, q, pol)
					ex.starts = starts
					resp := &http.Response{Request: sentUpstream, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(stream))}
					ex.stream(resp)
					out.Reset()
					if _, err := io.Copy(&out, resp.Body); err != nil {
						b.Fatal(err)
					}
					if ex.x.Outcome != ladder.OutcomeValid || out.Len() < len(stream)/2 {
						b.Fatalf("outcome %q, %d bytes out:\n%s", ex.x.Outcome, out.Len(), out.String())
					}
				}
			})
		}
	}
}

// benchExchange is a Handler with the default configuration, and the
// request req of format f opened under its default policy.
func benchExchange(b testing.TB, f format, req string) (*Handler, request, requestPolicy) {
	cfg := policy.Default()
	cfg.UpstreamURL = "http://127.0.0.1:1/v1"
	h, err := New(Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	pol, perr := h.requestPolicyOf(httptest.NewRequest("POST", "/v1/chat/completions", nil))
	if perr != nil {
		b.Fatal(perr)
	}
	m, err := f.read([]byte(req), nil, nil, wire.Repeats{})
	if err != nil {
		b.Fatal(err)
	}
	q := f.open(m, nil, true)
	if q == nil {
		b.Fatal("nothing to inspect in the request")
	}
	return h, q, pol
}
