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
	allocated := func(n int) uint64 {
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
		up := newUpstream(t, reply{Body: b.String()})
		srv, _ := guard(t, up, nil)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
		runtime.ReadMemStats(&after)
		if resp.StatusCode != http.StatusOK || header(resp, "X-Toolguard-Outcome") != "repaired" {
			t.Fatalf("%d choices: status %d, outcome %q", n, resp.StatusCode, header(resp, "X-Toolguard-Outcome"))
		}
		last := mustJSON(t, body).Get("choices." + strconv.Itoa(n-1) + ".message.tool_calls.0.function.arguments").String()
		if last != `{"selector":"#a`+strconv.Itoa(n-1)+`"}` {
			t.Fatalf("%d choices: the last choice's call is %s", n, last)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(300), allocated(3000)
	t.Logf("bytes allocated: 300 choices %d, 3,000 choices %d (%.1fx)", small, large, float64(large)/float64(small))
	if large > 25*small {
		t.Errorf("10x the choices allocated %.1fx the bytes: the work grows faster than the reply", float64(large)/float64(small))
	}
}
