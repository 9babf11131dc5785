package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// demoCase is one scripted model behaviour: the arguments it sends first and,
// when re-asked, the ones it sends next ("" means it repeats itself).
type demoCase struct {
	name, first, second string
}

var demoCases = []demoCase{
	{"a valid call", `{"selector":"#submit"}`, ""},
	{"a bare string where an object is declared", `"myCoolButton"`, ""},
	{"a near-miss key", `{"element":"myCoolButton"}`, ""},
	{"truncated JSON", `{"selector": "myCoolButton"`, ""},
	{"JSON fenced in markdown", "```json\n{\"selector\": \"myCoolButton\"}\n```", ""},
	{"a missing required field, fixed when re-asked", `{}`, `{"selector":"#login"}`},
	{"a model that never corrects itself", `{}`, ""},
}

const demoRequest = `{"model":"demo-model","messages":[{"role":"user","content":"Click the button."}],` +
	`"tools":[{"type":"function","function":{"name":"click","description":"Click an element",` +
	`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"],"additionalProperties":false}}}]}`

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
	fmt.Fprintf(out, "tool declared: click({\"selector\": string}, required)\n\n")
	for i, c := range demoCases {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+guard.Addr().String()+"/v1/chat/completions", strings.NewReader(demoRequest))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Demo-Case", fmt.Sprint(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%d. %s\n", i+1, c.name)
		fmt.Fprintf(out, "   model sent:      %s\n", oneLine(c.first))
		if c.second != "" {
			fmt.Fprintf(out, "   when re-asked:   %s\n", oneLine(c.second))
		}
		fmt.Fprintf(out, "   client received: HTTP %d, outcome=%s, re-asks=%s, repairs=%s\n", resp.StatusCode,
			resp.Header.Get("X-Toolguard-Outcome"), resp.Header.Get("X-Toolguard-Reasks"), resp.Header.Get("X-Toolguard-Repairs"))
		if resp.StatusCode == http.StatusOK {
			fmt.Fprintf(out, "                    arguments %s\n\n", gjson.GetBytes(body, "choices.0.message.tool_calls.0.function.arguments").String())
		} else {
			fmt.Fprintf(out, "                    error %s\n\n", gjson.GetBytes(body, "error.message").String())
		}
	}
	return nil
}

// scriptedModel answers like a model making the mistake of the case named in
// X-Demo-Case; a request holding tool results is a re-ask.
func scriptedModel(w http.ResponseWriter, r *http.Request) {
	var c demoCase
	var i int
	if _, err := fmt.Sscan(r.Header.Get("X-Demo-Case"), &i); err == nil && i >= 0 && i < len(demoCases) {
		c = demoCases[i]
	}
	body, _ := io.ReadAll(r.Body)
	args := c.first
	if bytes.Contains(body, []byte(`"role":"tool"`)) && c.second != "" {
		args = c.second
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-demo","object":"chat.completion","created":1,"model":"demo-model",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"call_1","type":"function","function":{"name":"click","arguments":%s}}]},"finish_reason":"tool_calls"}],`+
		`"usage":{"prompt_tokens":20,"completion_tokens":10,"total_tokens":30}}`, jsonQuote(args))
}

// jsonQuote renders s as a JSON string literal.
func jsonQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
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
