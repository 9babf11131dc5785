package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/fake"
)

// boundCases are the crafted exchanges of the second pass over costs and
// routes: label lengths, Responses under other prefixes, the repairer's
// cost, compressed bodies, requests that turn inspection off.
func boundCases() []hostileCase {
	return []hostileCase{
		{
			// A history call of array items without commas, in a request
			// declaring no tools: the repairer's work grew with the square.
			name: "repair: a 100 KB history call without commas",
			request: func() []byte {
				return []byte(`{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[` +
					`{"id":"c","type":"function","function":{"name":"click","arguments":` + strconv.Quote(commaless(100<<10)) + `}}]}]}`)
			},
			reply: jsonReply(`{"choices":[]}`),
		},
		{
			name:    "repair: a 100 KB upstream call without commas",
			request: clickRequest,
			reply:   callReply("click", commaless(100<<10)),
		},
		{
			name:    "repair: a 100 KB call without commas written as text",
			request: clickRequest,
			reply: jsonReply(`{"choices":[{"index":0,"message":{"role":"assistant","content":` +
				strconv.Quote("<tool_call>\n{\"name\":\"click\",\"arguments\":"+commaless(100<<10)+"}\n</tool_call>") + `},"finish_reason":"stop"}]}`),
		},
		{
			// 250 history calls of 4 KiB each, every one in need of the
			// repairer: the bound per call alone would allow them all.
			name: "repair: 250 history calls of 4 KB without commas",
			request: func() []byte {
				var b strings.Builder
				b.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}`)
				for i := range 250 {
					b.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"c` + strconv.Itoa(i) +
						`","type":"function","function":{"name":"click","arguments":` + strconv.Quote(commaless(4<<10)) + `}}]}`)
				}
				b.WriteString(`]}`)
				return []byte(b.String())
			},
			reply: jsonReply(`{"choices":[]}`),
		},
		{
			// 100 choices streaming text that may start a call: what is read
			// to decide holds was bounded for each choice, not the stream.
			name: "stream: 100 choices of '<' in 200 events of 64 bytes each",
			request: func() []byte {
				return []byte(`{"model":"m","stream":true,"n":100,"messages":[{"role":"user","content":"Click the button."}],"tools":` + clickTools + `}`)
			},
			reply: func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "text/event-stream")
				event := func(i int, delta, finish string) string {
					return `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":` + strconv.Itoa(i) +
						`,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
				}
				var b strings.Builder
				for range 200 {
					for i := range 100 {
						b.WriteString(event(i, `{"content":"`+strings.Repeat("<", 64)+`"}`, "null"))
					}
				}
				for i := range 100 {
					b.WriteString(event(i, `{}`, `"stop"`))
				}
				b.WriteString("data: [DONE]\n\n")
				io.WriteString(w, b.String())
			},
		},
		{
			// Lines ended by lone CRs, with no LF for a megabyte: a search
			// for the LF first, through the rest of the buffer for each
			// line, read the event once a line (1.6 s for 256 KB).
			name: "stream: an event of 1 MB of lines ended by lone CRs",
			request: func() []byte {
				return []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"Click the button."}],"tools":` + clickTools + `}`)
			},
			reply: func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "text/event-stream")
				chunk := func(delta, finish string) string {
					return `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0` +
						`,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
				}
				io.WriteString(w, chunk(`{"content":"Hi"}`, "null")+strings.Repeat("x\r", 512<<10)+"\r"+
					chunk(`{}`, `"stop"`)+"data: [DONE]\n\n")
			},
		},
		{
			// A string the schema says is a regular expression: the
			// validator compiles it, about 1 µs a byte, and the work budget
			// did not count it.
			name: "schema: 20 calls of a 1 MB string in format regex",
			request: func() []byte {
				return []byte(`{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"find",` +
					`"parameters":{"type":"object","properties":{"re":{"type":"string","format":"regex"}},"required":["re"]}}}]}`)
			},
			reply: callsReply(20, "c", "find", func() string { return `{"re":"` + strings.Repeat("a.", 500<<10) + `"}` }),
		},
		{
			// Content of nothing but '<': each was compared with every
			// marker of a call written as text, 120 ns a byte.
			name:    "text: 30 choices of 1 MB of '<' as content",
			request: clickRequest,
			reply: choicesReply(30, "stop", func() string {
				return `{"role":"assistant","content":` + strconv.Quote(strings.Repeat("<", 1000<<10)) + `}`
			}),
		},
		{
			// Text dense with quotes: the repairer reads a string that never
			// ends again from each quote in it, and its work grew with the
			// cube of the text (4.8 KB took 6.4 s and allocated 21 GB).
			name:    "repair: a 4 KB call dense with quotes",
			request: clickRequest,
			reply:   callReply("click", "["+strings.Repeat("'a", 2<<10)+"+0,"),
		},
		{
			// Brackets nested hundreds deep: the repairer copies all it has
			// written as it closes each, ten bytes for each unit of work.
			name:    "repair: 500 choices of calls nested 400 deep",
			request: clickRequest,
			reply: choicesReply(500, "tool_calls", func() string {
				return `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"click","arguments":` +
					strconv.Quote("["+strings.Repeat("{", 400)+"+0,") + `}}]}`
			}),
		},
		{
			// An invalid call on the Responses API under a prefix that
			// Azure and LiteLLM serve it at.
			name: "responses: an invalid call at /v1/openai/v1/responses",
			path: "/v1/openai/v1/responses",
			request: func() []byte {
				return []byte(`{"model":"m","input":"Click the button.","tools":[{"type":"function","name":"click",` +
					`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}`)
			},
			reply: jsonReply(fake.Responses.JSON(fake.Reply{Calls: []fake.Call{{ID: "c", Name: "click", Args: `{}`}}})),
		},
		{
			// background: true turned inspection off, even streamed.
			name: "responses: background with an invalid call",
			path: "/v1/responses",
			request: func() []byte {
				return []byte(`{"model":"m","input":"Click the button.","background":true,"stream":true,"tools":[{"type":"function","name":"click",` +
					`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]}`)
			},
			reply: jsonReply(fake.Responses.JSON(fake.Reply{Calls: []fake.Call{{ID: "c", Name: "click", Args: `{}`}}})),
		},
		{
			// 31 MiB of one byte in 32 KB of gzip, its call re-asked: each
			// attempt resent the decoded body upstream.
			name:    "compressed: 32 KB of gzip decoding to 31 MiB, re-asked",
			request: func() []byte { return gzipped(userRequest(strings.Repeat("a", 31<<20))) },
			header:  http.Header{"Content-Encoding": {"gzip"}},
			reply:   callReply("click", `{}`),
		},
		{
			// The most a body under 1 MB may decode to now: 19 times its
			// size (words of a real ratio, then one byte repeated), its
			// call re-asked.
			name: "compressed: 1 MB of gzip decoding to 19 MB, re-asked",
			request: func() []byte {
				text := words(12 << 20)
				text += strings.Repeat("a", 19*len(gzipped([]byte(text)))-len(text))
				return gzipped(userRequest(text))
			},
			header: http.Header{"Content-Encoding": {"gzip"}},
			reply:  callReply("click", `{}`),
		},
		{
			// With an exporter configured (here one that refuses
			// connections, so spans wait and are retried), 50 requests
			// naming 1 MB models: each name went into three spans.
			name:  "traces: 50 models named with 1 MB each, exporter configured",
			send:  func(addr string) (int, int64, error) { return sendLongModels(addr, 50) },
			reply: callReply("click", `{"selector":"#a"}`),
			env:   []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9"},
		},
		{
			// Five valid calls that spend the request's validation
			// budget, then an invalid one, which passed unchecked.
			name: "budget: five costly calls, then an invalid one",
			request: func() []byte {
				return []byte(`{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[` +
					`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":{"allOf":[{},{},{},{},{},{},{},{}]}}}}}},` +
					`{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]}`)
			},
			reply: func(w http.ResponseWriter, r *http.Request, n int) {
				heavy := strconv.Quote(`{"a":[` + strings.TrimSuffix(strings.Repeat("1,", 100_000), ",") + `]}`)
				var calls []string
				for i := range 5 {
					calls = append(calls, `{"id":"h`+strconv.Itoa(i)+`","type":"function","function":{"name":"f","arguments":`+heavy+`}}`)
				}
				calls = append(calls, `{"id":"bad","type":"function","function":{"name":"click","arguments":"{}"}}`)
				jsonReply(`{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[`+strings.Join(calls, ",")+`]},"finish_reason":"tool_calls"}]}`)(w, r, n)
			},
		},
		{
			// Calls just under the per-call bound whose every step is of
			// the dearest kind measured (an anyOf whose five branches all
			// fail), 14 of them in a reply under 1 MB: the request's
			// budget let the validator run on 20 such calls.
			name: "budget: 14 calls of the dearest steps, under 1 MB",
			request: func() []byte {
				return []byte(`{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[` +
					`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":` +
					`{"anyOf":[{"type":"string"},{"type":"boolean"},{"type":"null"},{"type":"array"},{"type":"object"}]}}}}}}]}`)
			},
			reply: callsReply(14, "h", "f", func() string {
				return `{"a":[` + strings.TrimSuffix(strings.Repeat("1,", 33_000), ",") + `]}`
			}),
		},
		{
			// Many choices, each a call written as text that needs the
			// repairer (single quotes, a trailing comma).
			name:    "choices: 6,000 calls written as text to repair",
			request: clickRequest,
			reply: choicesReply(6000, "stop", func() string {
				return `{"role":"assistant","content":` +
					strconv.Quote("<tool_call>\n{\"name\":\"click\",\"arguments\":{'selector': '#a',}}\n</tool_call>") + `}`
			}),
		},
		{
			// An upstream that answers 200 and cuts every body short: the
			// breaker judged by the headers and never opened. The bytes
			// upstream count the requests that reached it.
			name: "breaker: 20 requests, every body cut short",
			send: func(addr string) (int, int64, error) {
				status, read := 0, int64(0)
				for range 20 {
					resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader(clickRequest()))
					if err != nil {
						return 0, read, err
					}
					k, _ := io.Copy(io.Discard, resp.Body)
					read += k
					resp.Body.Close()
					status = resp.StatusCode
				}
				return status, read, nil
			},
			reply: func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "100000")
				io.WriteString(w, `{"choices":`)
			},
		},
		{
			// 20 requests naming 1 MB models, then a scrape: the bytes to
			// the client are those of /metrics.
			name:  "metrics: 20 models named with 1 MB each",
			send:  longModelNames,
			reply: callReply("click", `{"selector":"#a"}`),
		},
	}
}

// userRequest is a request for the click tool whose user message is text.
func userRequest(text string) []byte {
	return []byte(`{"model":"m","messages":[{"role":"user","content":` + strconv.Quote(text) + `}],"tools":` + clickTools + `}`)
}

// gzipped is b compressed with gzip.
func gzipped(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// words is n bytes of four words in a random order, which gzip compresses
// about 13:1.
func words(n int) string {
	list := []string{"select ", "button ", "click ", "the "}
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(list[r.IntN(len(list))])
	}
	return b.String()[:n]
}

// sendLongModels sends n chat completions whose model is 1 MB long, and
// returns the last status and the bytes read.
func sendLongModels(addr string, n int) (int, int64, error) {
	var read int64
	for i := range n {
		model := fmt.Sprintf("%s-%02d", strings.Repeat("m", 1<<20), i)
		body := strings.Replace(string(clickRequest()), `"model":"m"`, `"model":"`+model+`"`, 1)
		resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return 0, read, err
		}
		k, _ := io.Copy(io.Discard, resp.Body)
		read += k
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, read, nil
		}
	}
	return http.StatusOK, read, nil
}

// commaless is a call's arguments of about n bytes, array items without
// commas: {"selector":"a","x":[1 1 1 ...]}.
// callsReply answers with one choice of n calls of the tool name, their ids
// id0, id1…, each with the arguments args returns, built when the case runs.
func callsReply(n int, id, name string, args func() string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, k int) {
		a := strconv.Quote(args())
		var calls []string
		for i := range n {
			calls = append(calls, `{"id":"`+id+strconv.Itoa(i)+`","type":"function","function":{"name":"`+name+`","arguments":`+a+`}}`)
		}
		jsonReply(`{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[`+strings.Join(calls, ",")+`]},"finish_reason":"tool_calls"}]}`)(w, r, k)
	}
}

// choicesReply answers with n choices, each the message that message
// returns (a JSON object) and finish, built when the case runs.
func choicesReply(n int, finish string, message func() string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, k int) {
		m := message()
		var b strings.Builder
		b.WriteString(`{"choices":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"index":` + strconv.Itoa(i) + `,"message":` + m + `,"finish_reason":"` + finish + `"}`)
		}
		b.WriteString(`]}`)
		jsonReply(b.String())(w, r, k)
	}
}

func commaless(n int) string {
	return `{"selector":"a","x":[` + strings.Repeat("1 ", n/2) + `1]}`
}

// longModelNames sends 20 chat completions whose model is 1 MB long, then
// reads /metrics and returns its size.
func longModelNames(addr string) (int, int64, error) {
	if status, _, err := sendLongModels(addr, 20); status != http.StatusOK || err != nil {
		return status, 0, err
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}
