package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// demoCase is one scripted model behaviour: the arguments it sends first and,
// when re-asked, the ones it sends next ("" means it repeats itself), on
// Chat Completions unless kind says otherwise.
type demoCase struct {
	name, first, second string
	kind                demoKind
}

// What a demo case asks and the model answers.
type demoKind int

const (
	demoChat       demoKind = iota // a click call
	demoResponses                  // a click call, on the Responses API
	demoMessages                   // a click call, on the Anthropic Messages API
	demoStructured                 // JSON content under a response_format
	demoTextCall                   // a click call written as text
)

var demoCases = []demoCase{
	{"a valid call", `{"selector":"#submit"}`, "", demoChat},
	{"a bare string where an object is declared", `"myCoolButton"`, "", demoChat},
	{"a key in another case", `{"Selector":"myCoolButton"}`, "", demoChat},
	{"a near-miss key: another word is asked about, never renamed", `{"element":"myCoolButton"}`, `{"selector":"myCoolButton"}`, demoChat},
	{"truncated JSON", `{"selector": "myCoolButton"`, "", demoChat},
	{"JSON fenced in markdown", "```json\n{\"selector\": \"myCoolButton\"}\n```", "", demoChat},
	{"a missing required field, fixed when re-asked", `{}`, `{"selector":"#login"}`, demoChat},
	{"a model that never corrects itself", `{}`, "", demoChat},
	{"the Responses API: a missing required field, fixed when re-asked", `{}`, `{"selector":"#login"}`, demoResponses},
	{"the Anthropic Messages API: a near-miss key, fixed when re-asked", `{"element":"#login"}`, `{"selector":"#login"}`, demoMessages},
	{"structured output: JSON content fenced, with a trailing comma", "```json\n{\"button\": \"#login\", \"clicks\": 1,}\n```", "", demoStructured},
	{"a call written as text (Hermes format)", `<tool_call>{"name": "click", "arguments": {"Selector": "#login"}}</tool_call>`, "", demoTextCall},
}

const clickParameters = `{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"],"additionalProperties":false}`

// The demo's requests, on Chat Completions and on the Responses API.
const (
	demoRequest = `{"model":"demo-model","messages":[{"role":"user","content":"Click the button."}],` +
		`"tools":[{"type":"function","function":{"name":"click","description":"Click an element","parameters":` + clickParameters + `}}]}`
	demoResponsesRequest = `{"model":"demo-model","input":"Click the button.",` +
		`"tools":[{"type":"function","name":"click","description":"Click an element","parameters":` + clickParameters + `}]}`
	demoMessagesRequest = `{"model":"demo-model","max_tokens":1024,"messages":[{"role":"user","content":"Click the button."}],` +
		`"tools":[{"name":"click","description":"Click an element","input_schema":` + clickParameters + `}]}`
	demoStructuredRequest = `{"model":"demo-model","messages":[{"role":"user","content":"Which button, how many clicks?"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"plan","strict":true,"schema":{"type":"object",` +
		`"properties":{"button":{"type":"string"},"clicks":{"type":"integer"}},"required":["button","clicks"],"additionalProperties":false}}}}`
)

// runDemo starts a scripted upstream and toolguard in front of it, both on
// loopback, sends one request per case and prints what happened.
func runDemo(ctx context.Context, cfg policy.Config, out io.Writer) error {
	upstream, err := serve(http.HandlerFunc(scriptedModel))
	if err != nil {
		return err
	}
	defer upstream.Close()
	cfg.UpstreamURL = "http://" + upstream.Addr().String() + "/v1"
	cfg.UpstreamAPIKey = ""
	h, err := proxy.New(proxy.Options{Config: cfg})
	if err != nil {
		return err
	}
	guard, err := serve(h)
	if err != nil {
		return err
	}
	defer guard.Close()

	fmt.Fprintf(out, "toolguard demo: mode=%s, max re-asks=%d, on failure=%s\n", cfg.Mode, cfg.MaxReasks, cfg.OnFailure)
	structured := slices.IndexFunc(demoCases, func(c demoCase) bool { return c.kind == demoStructured }) + 1
	fmt.Fprintf(out, "tool declared: click({\"selector\": string}, required); response format (case %d): {\"button\": string, \"clicks\": integer}\n\n", structured)
	for i, c := range demoCases {
		path, body, f := "/v1/chat/completions", demoRequest, fake.Chat
		switch c.kind {
		case demoResponses:
			path, body, f = "/v1/responses", demoResponsesRequest, fake.Responses
		case demoMessages:
			path, body, f = "/v1/messages", demoMessagesRequest, fake.Messages
		case demoStructured:
			body = demoStructuredRequest
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+guard.Addr().String()+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Demo-Case", fmt.Sprint(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%d. %s\n", i+1, c.name)
		fmt.Fprintf(out, "   model sent:      %s\n", oneLine(c.first))
		if c.second != "" {
			for k, line := range feedback.lines(i) {
				fmt.Fprintf(out, "   %-17s%s\n", map[bool]string{true: "toolguard asked:"}[k == 0], line)
			}
			fmt.Fprintf(out, "   when re-asked:   %s\n", oneLine(c.second))
		}
		fmt.Fprintf(out, "   client received: HTTP %d, outcome=%s, re-asks=%s, repairs=%s\n", resp.StatusCode,
			resp.Header.Get("X-Toolguard-Outcome"), resp.Header.Get("X-Toolguard-Reasks"), resp.Header.Get("X-Toolguard-Repairs"))
		if resp.StatusCode == http.StatusOK {
			text, args := f.Read(got)
			if c.kind == demoStructured {
				fmt.Fprintf(out, "                    content %s\n\n", text)
			} else {
				fmt.Fprintf(out, "                    arguments %s\n\n", args)
			}
		} else {
			// Every API's error shape has its message at error.message.
			fmt.Fprintf(out, "                    error %s\n\n", gjson.GetBytes(got, "error.message").String())
		}
	}
	return nil
}

// scriptedModel answers like a model making the mistake of the case named in
// X-Demo-Case, in the format of the route asked; a re-ask gets the case's
// second arguments.
func scriptedModel(w http.ResponseWriter, r *http.Request) {
	var c demoCase
	var i int
	if _, err := fmt.Sscan(r.Header.Get("X-Demo-Case"), &i); err == nil && i >= 0 && i < len(demoCases) {
		c = demoCases[i]
	}
	f := fake.Chat
	switch {
	case strings.HasSuffix(r.URL.Path, fake.Responses.Path()):
		f = fake.Responses
	case strings.HasSuffix(r.URL.Path, fake.Messages.Path()):
		f = fake.Messages
	}
	body, _ := io.ReadAll(r.Body)
	args := c.first
	if f.Reasked(body) && c.second != "" {
		args = c.second
		// What toolguard told the model of its call: a chat tool message,
		// a Responses function_call_output, or a Messages tool_result.
		told := gjson.GetBytes(body, `messages.#(role=="tool").content`).String()
		switch f {
		case fake.Responses:
			told = gjson.GetBytes(body, `input.#(type=="function_call_output").output`).String()
		case fake.Messages:
			told = gjson.GetBytes(body, `messages.#(role=="user")#.content.#(type=="tool_result").content|@flatten|0`).String()
		}
		feedback.set(i, told)
	}
	reply := fake.Reply{Model: "demo-model", Calls: []fake.Call{{ID: "call_1", Name: "click", Args: args}}, In: 20, Out: 10}
	if c.kind == demoStructured || c.kind == demoTextCall {
		reply.Text, reply.Calls = args, nil
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.JSON(reply))
}

// feedback keeps, by case, what toolguard told the scripted model when it
// asked again.
var feedback = &demoFeedback{told: map[int]string{}}

type demoFeedback struct {
	mu   sync.Mutex
	told map[int]string
}

func (d *demoFeedback) set(i int, s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.told[i] = s
}

// lines returns the error lines ("- /path: message") of a case's feedback.
func (d *demoFeedback) lines(i int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, l := range strings.Split(d.told[i], "\n") {
		if strings.HasPrefix(l, "- ") {
			out = append(out, l)
		}
	}
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

// server is a loopback HTTP server for the demo.
type server struct {
	ln  net.Listener
	srv *http.Server
}

func serve(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{ln: ln, srv: &http.Server{Handler: h}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return s, nil
}

func (s *server) Addr() net.Addr { return s.ln.Addr() }
func (s *server) Close()         { s.srv.Close() }
