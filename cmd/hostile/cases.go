package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const clickTools = `[{"type":"function","function":{"name":"click","description":"Click an element",` +
	`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]`

func clickRequest() []byte {
	return []byte(`{"model":"m","messages":[{"role":"user","content":"Click the button."}],"tools":` + clickTools + `}`)
}

// jsonReply answers every upstream request with body.
func jsonReply(body string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// cases are the crafted exchanges, one per class of RELIABILITY.md's
// "Hostile requests and upstreams".
func cases() []hostileCase {
	return append(append(requestCases(), replyCases()...), boundCases()...)
}

func replyCases() []hostileCase {
	return []hostileCase{
		{
			// 10,000 choices, each with a call that needs a repair.
			name:    "reply: 10,000 choices to repair",
			request: clickRequest,
			reply:   jsonReply(manyChoices(10000)),
		},
		{
			// The same reply with a duplicate arguments name in the last
			// choice: refused whole.
			name:    "reply: duplicate arguments",
			request: clickRequest,
			reply: jsonReply(strings.Replace(manyChoices(10000), `\"#a9999\",}"`,
				`\"#a9999\"}","arguments":"{}"`, 1)),
		},
		{
			// One choice of 4,000 calls that each need a repair, within
			// the quota of 4,096: each is written over in place.
			name:    "reply: 4,000 calls to repair in one choice",
			request: clickRequest,
			reply:   jsonReply(manyCalls(4000)),
		},
		{
			// A usage object of 100,000 numbers, summed over a re-ask.
			name:    "reply: 100,000 usage fields",
			request: clickRequest,
			reply: func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "application/json")
				args := `"{}"`
				if n > 0 {
					args = `"{\"selector\":\"#a\"}"`
				}
				var b strings.Builder
				b.WriteString(`{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"click","arguments":` + args + `}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1`)
				for i := range 100000 {
					b.WriteString(`,"f` + strconv.Itoa(i) + `":1`)
				}
				b.WriteString(`}}`)
				io.WriteString(w, b.String())
			},
		},
	}
}

func manyChoices(n int) string {
	var b strings.Builder
	b.WriteString(`{"id":"x","object":"chat.completion","model":"m","choices":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		id := strconv.Itoa(i)
		b.WriteString(`{"index":` + id + `,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c` + id +
			`","type":"function","function":{"name":"click","arguments":"{\"selector\": \"#a` + id + `\",}"}}]},"finish_reason":"tool_calls"}`)
	}
	b.WriteString(`],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	return b.String()
}

// manyCalls is a reply of one choice with n calls, each needing a repair.
func manyCalls(n int) string {
	calls := make([]string, n)
	for i := range n {
		id := strconv.Itoa(i)
		calls[i] = `{"id":"c` + id + `","type":"function","function":{"name":"click","arguments":"{\"Selector\": \"#a` + id + `\"}"}}`
	}
	return `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		strings.Join(calls, ",") + `]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
}

func toolRequest(name, schema string) []byte {
	return []byte(`{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"` + name + `","parameters":` + schema + `}}]}`)
}

// callReply answers with one call of tool name and the given arguments.
func callReply(name, args string) func(http.ResponseWriter, *http.Request, int) {
	return jsonReply(`{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"` +
		name + `","arguments":` + strconv.Quote(args) + `}}]},"finish_reason":"tool_calls"}]}`)
}

// fanOut refers to the next level twice at each of levels levels.
func fanOut(levels int) string {
	var defs []string
	for i := range levels {
		next := `{"$ref":"#/$defs/l` + strconv.Itoa(i+1) + `"}`
		defs = append(defs, `"l`+strconv.Itoa(i)+`":{"anyOf":[`+next+`,{"allOf":[`+next+`]}]}`)
	}
	defs = append(defs, `"l`+strconv.Itoa(levels)+`":{"type":"object"}`)
	return `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// requestCases are the crafted requests of RELIABILITY.md.
func requestCases() []hostileCase {
	var enum, keys, calls []string
	for i := range 300 {
		enum = append(enum, `"v`+strconv.Itoa(i)+`-`+strings.Repeat("x", 60)+`"`)
	}
	for i := range 500 {
		keys = append(keys, `"k`+strconv.Itoa(i)+`":"nope"`)
	}
	for i := range 20 {
		calls = append(calls, `{"id":"c`+strconv.Itoa(i)+`","type":"function","function":{"name":"f","arguments":`+strconv.Quote(`{`+strings.Join(keys, ",")+`}`)+`}}`)
	}
	enumReply := `{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[` + strings.Join(calls, ",") + `]},"finish_reason":"tool_calls"}]}`
	var history strings.Builder
	history.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}`)
	for i := range 1000 {
		id := strconv.Itoa(i)
		history.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"c` + id + `","type":"function","function":{"name":"click","arguments":{"selector":"#` + id + `"}}}]},{"role":"tool","tool_call_id":"c` + id + `","content":"` + strings.Repeat("x", 900) + `"}`)
	}
	history.WriteString(`]}`)
	// Thirty calls of a fenced array of half a million numbers, each 1 MB:
	// some shapes cost the mender about 0.5 s a MiB.
	fencedArray, _ := json.Marshal("```json\n{\"a\": [" + strings.Repeat("1,", (1<<19)-64) + "]\n```")
	var fencedHistory strings.Builder
	fencedHistory.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}`)
	for i := range 30 {
		fencedHistory.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"c` + strconv.Itoa(i) + `","type":"function","function":{"name":"click","arguments":` + string(fencedArray) + `}}]}`)
	}
	fencedHistory.WriteString(`]}`)
	var tools strings.Builder
	tools.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[`)
	for i := range 20000 {
		if i > 0 {
			tools.WriteByte(',')
		}
		tools.WriteString(`{"type":"function","function":{"name":"f` + strconv.Itoa(i) + `","parameters":{"type":"object"}}}`)
	}
	duplicate := strings.Replace(tools.String(), `"name":"f19999"`, `"name":"f0"`, 1) + `]}`
	tools.WriteString(`]}`)
	var numberKeys []string
	for i := range 400 {
		numberKeys = append(numberKeys, fmt.Sprintf(`"k%d":%d`, i, i))
	}
	numberObject := "{" + strings.Join(numberKeys, ",") + "}"
	var enumObjects []string
	for i := range 60 {
		enumObjects = append(enumObjects, strings.Replace(numberObject, `"k399":399`, fmt.Sprintf(`"k399":%d`, 1000+i), 1))
	}
	return []hostileCase{
		{name: "declarations: 20,000 function tools (1.6 MB)", request: func() []byte { return []byte(tools.String()) }, reply: jsonReply(`{"choices":[]}`)},
		{name: "declarations: 20,000 tools, the last named as the first", request: func() []byte { return []byte(duplicate) }, reply: jsonReply(`{"choices":[]}`)},
		{name: "schema: references fanning out 20 levels", request: func() []byte { return toolRequest("f", fanOut(20)) }, reply: callReply("f", `{"a":5}`)},
		{name: "schema: enum errors for 20 x 500 values", request: func() []byte {
			return toolRequest("f", `{"type":"object","additionalProperties":{"enum":[`+strings.Join(enum, ",")+`]}}`)
		}, reply: jsonReply(enumReply)},
		{name: "arguments: 1e999999", request: func() []byte {
			return toolRequest("f", `{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":10}}}`)
		}, reply: callReply("f", `{"n":1e999999}`)},
		{name: "schema: 1e999999 in an enum", request: func() []byte {
			return toolRequest("f", `{"type":"object","properties":{"n":{"enum":[1e999999,2e999999,3e999999]}}}`)
		}, reply: callReply("f", `{"n":5}`)},
		{name: "pattern: (\\p{L}|\\p{N}){500}z on 500 KB", request: func() []byte {
			return toolRequest("f", `{"type":"object","properties":{"s":{"type":"string","pattern":"(\\p{L}|\\p{N}){500}z"}}}`)
		}, reply: callReply("f", `{"s":"`+strings.Repeat("a", 500<<10)+`"}`)},
		{name: "schema: 80,000 empty subschemas", request: func() []byte {
			return toolRequest("f", `{"type":"object","allOf":[`+strings.TrimSuffix(strings.Repeat(`{},`, 80_000), ",")+`]}`)
		}, reply: callReply("f", `{"a":5}`)},
		{name: "schema: enum of 60 objects of 400 numbers, 216 items", request: func() []byte {
			return toolRequest("f", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[`+strings.Join(enumObjects, ",")+`]}}}}`)
		}, reply: callReply("f", `{"a":[`+strings.TrimSuffix(strings.Repeat(numberObject+",", 216), ",")+`]}`)},
		{name: "40 connections declaring 32 MiB, sending 10 bytes", send: slowDeclared, reply: jsonReply(`{}`)},
		{name: "history: 1,000 calls to mend (1 MB)", request: func() []byte { return []byte(history.String()) }, reply: jsonReply(`{"choices":[]}`)},
		{name: "history: 30 fenced 1 MB arrays to mend (31 MB)", request: func() []byte { return []byte(fencedHistory.String()) }, reply: jsonReply(`{"choices":[]}`)},
		{name: "arguments: 1.1 MB, valid", request: func() []byte {
			return toolRequest("f", `{"type":"object","properties":{"text":{"type":"string"}}}`)
		}, reply: callReply("f", `{"text":"`+strings.Repeat("a", 1100<<10)+`"}`)},
	}
}

// slowDeclared opens 40 connections that each declare a 32 MiB body and send
// 10 bytes of it, then reads toolguard's memory while they wait, and closes
// them.
func slowDeclared(addr string) (int, int64, error) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":", 32<<20)
	}
	// Let the server read what was sent. The buffers are allocated but
	// not touched, so resident memory hides them: the heap in use, from
	// toolguard's own metrics, shows them.
	time.Sleep(500 * time.Millisecond)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			var f float64
			fmt.Sscan(v, &f)
			fmt.Fprintf(os.Stderr, "40 connections declaring 32 MiB: heap in use %.1f MiB\n", f/(1<<20))
		}
	}
	return resp.StatusCode, int64(len(b)), nil
}
