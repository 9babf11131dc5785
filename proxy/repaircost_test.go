package proxy_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// TestJSONRepairIsBoundedPerRequest sends the shape whose repair cost grew
// with the square of its size (array items without commas) in a request's
// history, as the upstream's tool calls and as a call written as text, in
// one large call and in many small ones, and checks what the whole exchange
// allocates. Before the bound, 64 KiB of it in one call allocated 5 GB; the
// request and the reply here allocated over 10 GB between them.
func TestJSONRepairIsBoundedPerRequest(t *testing.T) {
	args := func(n int) string { return `{"selector":"a","x":[` + strings.Repeat("1 ", n/2) + `1]}` }
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}`)
	for i := range 100 {
		n := 4 << 10
		if i == 0 {
			n = 64 << 10
		}
		fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"h%d","type":"function","function":{"name":"click","arguments":%s}}]}`,
			i, strconv.Quote(args(n)))
	}
	b.WriteString(`],"tools":` + clickTools + `}`)
	var calls []string
	for i := range 100 {
		n := 4 << 10
		if i == 0 {
			n = 64 << 10
		}
		calls = append(calls, clickCall("c"+strconv.Itoa(i), strconv.Quote(args(n))))
	}
	text := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":` +
		strconv.Quote("<tool_call>\n{\"name\":\"click\",\"arguments\":"+args(64<<10)+"}\n</tool_call>") + `},"finish_reason":"stop"}]}`
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, calls...)}, reply{Body: text})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 1 })
	var resp *http.Response
	var body []byte
	got := bytesAllocated(func() { resp, body = post(t, srv, "/v1/chat/completions", b.String()) })
	if resp.StatusCode != 400 || header(resp, "X-Toolguard-Outcome") != "failed" {
		t.Errorf("status %d, outcome %q: want the calls past the bound re-asked and failed: %.300s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
	}
	t.Logf("%d MiB allocated", got>>20)
	if got > 400<<20 {
		t.Errorf("one request of %d bytes allocated %d MiB", b.Len(), got>>20)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("%d upstream requests, want the request and one re-ask", n)
	}
}
