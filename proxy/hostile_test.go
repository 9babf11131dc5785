package proxy_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestThousandsOfTools declares 5,000 tools, each with its own schema, and
// calls two of them: only the schemas of called tools are compiled, so the
// request costs two compiles, and the calls are checked against the right
// schemas.
func TestThousandsOfTools(t *testing.T) {
	var tools []string
	for i := range 5000 {
		tools = append(tools, fmt.Sprintf(`{"type":"function","function":{"name":"tool_%d","parameters":{"type":"object","properties":{"n%d":{"type":"integer"}},"required":["n%d"]}}}`, i, i, i))
	}
	req := `{"model":"m","messages":[],"tools":[` + strings.Join(tools, ",") + `]}`
	valid := `{"id":"call_1","type":"function","function":{"name":"tool_4999","arguments":"{\"n4999\":1}"}}`
	mendable := `{"id":"call_2","type":"function","function":{"name":"tool_17","arguments":"{\"n17\":\"2\"}"}}`
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, valid, mendable)})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", req)
	out := mustJSON(t, body)
	if resp.StatusCode != 200 || out.Get("choices.0.message.tool_calls.1.function.arguments").String() != `{"n17":2}` {
		t.Errorf("status %d body %.300s", resp.StatusCode, body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "repaired" {
		t.Errorf("outcome %q", got)
	}
}

// TestHostileSchemaPassesThrough sends a schema nested past the limit: it is
// not compiled, the request is not broken, and the call passes unvalidated.
// (A body nested deeper than 10,000 levels is refused whole: see
// TestDeepBodyIsRefused.)
func TestHostileSchemaPassesThrough(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 100) + `{}` + strings.Repeat(`}}`, 100)
	req := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"click","parameters":` + deep + `}}]}`
	call := toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"a\":{}}"`))
	up := newUpstream(t, reply{Body: call})
	srv, logs := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", req)
	if resp.StatusCode != 200 || string(body) != call {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "nested deeper than") {
		t.Errorf("no warning naming the limit: %.500s", logs)
	}
}
