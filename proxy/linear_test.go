package proxy_test

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestManyRepairedChoicesCostLinearWork: a reply whose every choice needs a
// repair is written back in one pass. The bytes allocated for ten times the
// choices must grow about ten times, not a hundred (one patch over the
// whole body per choice did that: 10,000 choices took 46 s).
func TestManyRepairedChoicesCostLinearWork(t *testing.T) {
	checkLinearRepair(t, "choices", func(n int) string {
		var b strings.Builder
		b.WriteString(`{"id":"x","object":"chat.completion","model":"m","choices":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"index":` + strconv.Itoa(i) + `,"message":{"role":"assistant","content":null,"tool_calls":[` +
				clickCall("c"+strconv.Itoa(i), `"{\"selector\": \"#a`+strconv.Itoa(i)+`\",}"`) + `]},"finish_reason":"tool_calls"}`)
		}
		b.WriteString(`],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
		return b.String()
	}, func(n int) string { return "choices." + strconv.Itoa(n-1) + ".message.tool_calls.0" })
}

// TestManyRepairedCallsCostLinearWork: the same for one choice whose every
// call needs a repair, each written over in place.
func TestManyRepairedCallsCostLinearWork(t *testing.T) {
	checkLinearRepair(t, "calls", func(n int) string {
		calls := make([]string, n)
		for i := range calls {
			calls[i] = clickCall("c"+strconv.Itoa(i), `"{\"Selector\": \"#a`+strconv.Itoa(i)+`\"}"`)
		}
		return toolReply(`{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`, calls...)
	}, func(n int) string { return "choices.0.message.tool_calls." + strconv.Itoa(n-1) })
}

// checkLinearRepair sends the reply of n repairable calls that build makes,
// for 300 and for 3,000 of them, checks that the last call (at the path
// last names) reaches the client repaired, and that ten times the calls
// allocate at most 25 times the bytes.
func checkLinearRepair(t *testing.T, what string, build func(n int) string, last func(n int) string) {
	t.Helper()
	allocated := func(n int) uint64 {
		up := newUpstream(t, reply{Body: build(n)})
		srv, _ := guard(t, up, nil)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
		runtime.ReadMemStats(&after)
		if resp.StatusCode != http.StatusOK || header(resp, "X-Toolguard-Outcome") != "repaired" {
			t.Fatalf("%d %s: status %d, outcome %q", n, what, resp.StatusCode, header(resp, "X-Toolguard-Outcome"))
		}
		call := mustJSON(t, body).Get(last(n))
		if args := call.Get("function.arguments").String(); args != `{"selector":"#a`+strconv.Itoa(n-1)+`"}` {
			t.Fatalf("%d %s: the last call is %s", n, what, call.Raw)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(300), allocated(3000)
	t.Logf("bytes allocated: 300 %s %d, 3,000 %s %d (%.1fx)", what, small, what, large, float64(large)/float64(small))
	if large > 25*small {
		t.Errorf("10x the %s allocated %.1fx the bytes: the work grows faster than the reply", what, float64(large)/float64(small))
	}
}
