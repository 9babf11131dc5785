package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
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
