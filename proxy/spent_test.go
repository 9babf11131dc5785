package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSpentBudgetDoesNotPassInvalidCalls: the validation work of a request
// is bounded (validate.RequestSteps), and a call that would take it past the bound
// passed unchecked, as a JSON object. A reply of a few costly valid calls
// then spent the budget, and an invalid call after them reached the client
// unchecked: a model steered into many calls could pass anything. A call the
// request's spent budget leaves unchecked is now invalid, and re-asking stops
// (a re-ask's calls could not be checked either): the client gets the
// configured failure, saying why.
func TestSpentBudgetDoesNotPassInvalidCalls(t *testing.T) {
	items := `{"type":"array","items":{"allOf":[{},{},{},{},{},{},{},{}]}}`
	req := `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[` +
		`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":` + items + `}}}},` +
		`{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]}`
	// Each call costs 180,000 steps, under the per-call bound: two spend
	// most of the request's 400,000.
	heavy := `{"a":[` + strings.TrimSuffix(strings.Repeat("1,", 20_000), ",") + `]}`
	var calls []string
	for i := range 5 {
		calls = append(calls, namedCall("h"+string(rune('0'+i)), "f", heavy))
	}
	calls = append(calls, namedCall("bad", "click", `{}`))
	up := newUpstream(t, reply{Body: toolReply(`{}`, calls...)})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", req)
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("status 200, outcome %q: the invalid call reached the client", header(resp, "X-Toolguard-Outcome"))
	}
	checkOpenAIError(t, resp, body, http.StatusBadRequest, "tool_call_invalid")
	if !strings.Contains(string(body), "budget") {
		t.Errorf("the failure does not say the budget was spent: %.600s", body)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests: a re-ask's calls could not be checked either", n)
	}
}
