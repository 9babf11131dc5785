package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/bfcl"
	"github.com/toolguard/toolguard/internal/fake"
)

// The click tool of the problem reports: {"selector": string}, required.
const clickTools = `[{"type":"function","function":{"name":"click","description":"Click an element",` +
	`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]`

// chatBody is a chat completion request declaring tools (none if it is
// ""); the fake upstream picks its reply by model (valid, repair, reask),
// which calls click. With history, the messages are longHistory before the
// last instruction.
func chatBody(model string, stream, history bool, tools string) string {
	s, h, t := "", "", ""
	if stream {
		s = `,"stream":true`
	}
	if history {
		h = longHistory
	}
	if tools != "" {
		t = `,"tools":` + tools
	}
	return `{"model":"` + model + `","messages":[` + h + `{"role":"user","content":"Click the login button."}]` + t + s + `}`
}

// manyTools declares the click tool after 23 functions of the BFCL corpus
// (testdata/bfcl), about 20 KB: the tools of an agent with many, sent with
// every request.
var manyTools = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	// The corpus is in the module's root, above the working directory.
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("many tools: no go.mod above the working directory, so no testdata/bfcl")
		}
		dir = up
	}
	cases, err := bfcl.Load(filepath.Join(dir, "testdata", "bfcl"))
	if err != nil {
		return "", fmt.Errorf("many tools: %w", err)
	}
	seen := map[string]bool{"click": true}
	var tools []string
	for _, c := range cases {
		for _, fn := range c.Functions {
			if len(tools) == 23 || seen[fn.Name] {
				continue
			}
			seen[fn.Name] = true
			desc, err := json.Marshal(fn.Description)
			if err != nil {
				return "", err
			}
			tools = append(tools, `{"type":"function","function":{"name":`+strconv.Quote(fn.Name)+
				`,"description":`+string(desc)+`,"parameters":`+string(fn.Parameters)+`}}`)
		}
	}
	return "[" + strings.Join(tools, ",") + "," + clickTools[1:], nil
})

// longHistory is the conversation an agent sends back after a few dozen
// turns, about 40 KB (fake.AgentHistory).
var longHistory = fake.AgentHistory()

// arm is one way of reaching the fake model.
type arm struct {
	name    string
	target  string // which server: direct, bare, off, guard, portkey
	model   string
	stream  bool
	history bool // send longHistory
	// firstTurn: each request's history is a conversation the proxy has
	// not seen, its system message numbered (conversationMark), so
	// toolguard's history cache knows no prefix of it.
	firstTurn bool
	noTools   bool // declare no tools: nothing to inspect
	manyTools bool // declare manyTools
	// responses sends the request on the Responses API (POST
	// /v1/responses), not Chat Completions.
	responses bool
	outcome   string // X-Toolguard-Outcome expected; "" for none
	// base and bare name the arms this one is measured against: its
	// direct path and its bare reverse proxy.
	base, bare string
}

var allArms = []arm{
	{name: "direct", target: "direct", model: "valid", base: "direct", bare: "reverseproxy"},
	{name: "reverseproxy", target: "bare", model: "valid", base: "direct", bare: "reverseproxy"},
	{name: "toolguard-off", target: "off", model: "valid", base: "direct", bare: "reverseproxy"},
	{name: "toolguard-valid", target: "guard", model: "valid", outcome: "valid", base: "direct", bare: "reverseproxy"},
	{name: "toolguard-repair", target: "guard", model: "repair", outcome: "repaired", base: "direct", bare: "reverseproxy"},
	{name: "toolguard-reask", target: "guard", model: "reask", outcome: "reasked", base: "direct", bare: "reverseproxy"},
	{name: "portkey", target: "portkey", model: "valid", base: "direct", bare: "reverseproxy"},
	{name: "stream-direct", target: "direct", model: "valid", stream: true, base: "stream-direct", bare: "stream-reverseproxy"},
	{name: "stream-reverseproxy", target: "bare", model: "valid", stream: true, base: "stream-direct", bare: "stream-reverseproxy"},
	{name: "stream-toolguard", target: "guard", model: "valid", stream: true, base: "stream-direct", bare: "stream-reverseproxy"},
	{name: "history-direct", target: "direct", model: "valid", history: true, base: "history-direct", bare: "history-reverseproxy"},
	{name: "history-reverseproxy", target: "bare", model: "valid", history: true, base: "history-direct", bare: "history-reverseproxy"},
	{name: "history-toolguard", target: "guard", model: "valid", history: true, outcome: "valid", base: "history-direct", bare: "history-reverseproxy"},
	{name: "firstturn-direct", target: "direct", model: "valid", history: true, firstTurn: true, base: "firstturn-direct", bare: "firstturn-reverseproxy"},
	{name: "firstturn-reverseproxy", target: "bare", model: "valid", history: true, firstTurn: true, base: "firstturn-direct", bare: "firstturn-reverseproxy"},
	{name: "firstturn-toolguard", target: "guard", model: "valid", history: true, firstTurn: true, outcome: "valid", base: "firstturn-direct", bare: "firstturn-reverseproxy"},
	{name: "notools-direct", target: "direct", model: "valid", noTools: true, base: "notools-direct", bare: "notools-reverseproxy"},
	{name: "notools-reverseproxy", target: "bare", model: "valid", noTools: true, base: "notools-direct", bare: "notools-reverseproxy"},
	{name: "notools-toolguard", target: "guard", model: "valid", noTools: true, base: "notools-direct", bare: "notools-reverseproxy"},
	{name: "manytools-direct", target: "direct", model: "valid", manyTools: true, base: "manytools-direct", bare: "manytools-reverseproxy"},
	{name: "manytools-reverseproxy", target: "bare", model: "valid", manyTools: true, base: "manytools-direct", bare: "manytools-reverseproxy"},
	{name: "manytools-toolguard", target: "guard", model: "valid", manyTools: true, outcome: "valid", base: "manytools-direct", bare: "manytools-reverseproxy"},
	{name: "responses-direct", target: "direct", model: "valid", responses: true, base: "responses-direct", bare: "responses-reverseproxy"},
	{name: "responses-reverseproxy", target: "bare", model: "valid", responses: true, base: "responses-direct", bare: "responses-reverseproxy"},
	{name: "responses-toolguard", target: "guard", model: "valid", responses: true, outcome: "valid", base: "responses-direct", bare: "responses-reverseproxy"},
	{name: "responses-repair", target: "guard", model: "repair", responses: true, outcome: "repaired", base: "responses-direct", bare: "responses-reverseproxy"},
	// A toolguard built from -baseline, beside the current one.
	{name: "baseline-valid", target: "baseline", model: "valid", outcome: "valid", base: "direct", bare: "reverseproxy"},
	{name: "baseline-repair", target: "baseline", model: "repair", outcome: "repaired", base: "direct", bare: "reverseproxy"},
	{name: "baseline-history", target: "baseline", model: "valid", history: true, outcome: "valid", base: "history-direct", bare: "history-reverseproxy"},
	{name: "baseline-firstturn", target: "baseline", model: "valid", history: true, firstTurn: true, outcome: "valid", base: "firstturn-direct", bare: "firstturn-reverseproxy"},
	{name: "baseline-stream", target: "baseline", model: "valid", stream: true, base: "stream-direct", bare: "stream-reverseproxy"},
	{name: "baseline-notools", target: "baseline", model: "valid", noTools: true, base: "notools-direct", bare: "notools-reverseproxy"},
	{name: "baseline-manytools", target: "baseline", model: "valid", manyTools: true, outcome: "valid", base: "manytools-direct", bare: "manytools-reverseproxy"},
}

// path is where the arm's requests go.
func (a arm) path() string {
	if a.responses {
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

// body is the arm's request, as check and the probes send it.
func (a arm) body() string {
	return strings.Replace(a.template(), conversationMark, "0", 1)
}

// conversationMark is where a firstTurn arm's request is numbered: the load
// generator writes a number of its own there for every request (writeScript).
const conversationMark = "{{conversation}}"

// template is the arm's request, with conversationMark in it for a
// firstTurn arm.
func (a arm) template() string {
	if a.responses {
		return responsesBody(a.model, a.stream)
	}
	body := chatBody(a.model, a.stream, a.history, a.tools())
	if a.firstTurn {
		body = strings.Replace(body, `"content":"You operate`, `"content":"Conversation `+conversationMark+`. You operate`, 1)
	}
	return body
}

// tools is what the arm's chat requests declare.
func (a arm) tools() string {
	switch {
	case a.noTools:
		return ""
	case a.manyTools:
		// pickArms made sure they load.
		t, err := manyTools()
		if err != nil {
			panic(err)
		}
		return t
	}
	return clickTools
}

// responsesBody is a Responses request declaring click, flat.
func responsesBody(model string, stream bool) string {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return `{"model":"` + model + `","input":"Click the login button.","tools":[{"type":"function","name":"click","parameters":` +
		gjson.Get(clickTools, "0.function.parameters").Raw + `}]` + s + `}`
}

// headers are sent by every client of the arm: a key (Portkey forwards it),
// and for Portkey the provider and the fake model's address.
func (a arm) headers(upstreamBase string) map[string]string {
	h := map[string]string{"Authorization": "Bearer sk-loadtest"}
	if a.target == "portkey" {
		h["x-portkey-provider"] = "openai"
		h["x-portkey-custom-host"] = upstreamBase + "/v1"
	}
	return h
}

// check sends the arm's request once and verifies the answer is what the
// arm claims to measure: 200, the expected toolguard outcome, a tool call
// in the body (or in the stream).
func check(ctx context.Context, a arm, url string, headers map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(a.body()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("arm %s: %w", a.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("arm %s: read: %w", a.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("arm %s: status %d: %s", a.name, resp.StatusCode, tail(string(b), 500))
	}
	if got := resp.Header.Get("X-Toolguard-Outcome"); a.outcome != "" && got != a.outcome {
		return fmt.Errorf("arm %s: X-Toolguard-Outcome %q, want %q", a.name, got, a.outcome)
	}
	if !strings.Contains(string(b), `"name":"click"`) && !strings.Contains(string(b), `"name": "click"`) {
		return fmt.Errorf("arm %s: no click call in the answer: %s", a.name, tail(string(b), 500))
	}
	if a.stream && !strings.Contains(string(b), "data: [DONE]") {
		return fmt.Errorf("arm %s: the stream does not end with [DONE]", a.name)
	}
	return nil
}

// streamProbe sends the arm's streaming request n times, one at a time, for
// at most d, and returns the median time to the first content event and to
// the last byte.
func streamProbe(ctx context.Context, url string, body string, headers map[string]string, n int, d time.Duration) (first, last time.Duration, err error) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(d)
	var firsts, lasts []time.Duration
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		f, l, err := streamOnce(ctx, c, url, body, headers)
		if err != nil {
			return 0, 0, err
		}
		firsts, lasts = append(firsts, f), append(lasts, l)
	}
	return median(firsts), median(lasts), nil
}

func streamOnce(ctx context.Context, c *http.Client, url, body string, headers map[string]string) (first, last time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if first == 0 && strings.Contains(string(line), `"content":"word`) {
			first = time.Since(start)
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return 0, 0, err
		}
	}
	if first == 0 {
		return 0, 0, fmt.Errorf("no content event from %s", url)
	}
	return first, time.Since(start), nil
}
