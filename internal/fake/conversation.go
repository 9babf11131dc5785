package fake

import (
	"fmt"
	"strings"
)

// AgentHistory is the messages an agent sends back in a Chat Completions
// request after a few dozen turns of clicking through a site, about 40 KB
// of them: a system message, then each turn the user's instruction, the
// assistant's call of the click tool (valid arguments), and the tool's
// result, a slice of the page (HTML, its quotes escaped). Each message ends
// with a comma. The load test sends it; benchmarks read it.
func AgentHistory() string {
	var b strings.Builder
	b.WriteString(`{"role":"system","content":"You operate a web browser through tools. Call one tool at a time."},`)
	page := strings.Repeat(`<li class=\"result\"><a href=\"/item\">An item of the list</a></li>`, 8)
	for i := 0; b.Len() < 40<<10; i++ {
		fmt.Fprintf(&b, `{"role":"user","content":"Open the next page of results, number %d."},`, i+2)
		fmt.Fprintf(&b, `{"role":"assistant","content":null,"tool_calls":[{"id":"call_%04d","type":"function",`+
			`"function":{"name":"click","arguments":"{\"selector\":\"#pager a.next:nth-of-type(%d)\"}"}}]},`, i, i+2)
		fmt.Fprintf(&b, `{"role":"tool","tool_call_id":"call_%04d","content":"<ul>%s</ul>"},`, i, page)
	}
	return b.String()
}
