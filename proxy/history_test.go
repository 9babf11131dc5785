package proxy_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// TestHistoryIsMended checks that the malformed tool calls of assistant
// messages in the request are mended (syntax only) before the request goes
// upstream, and that a history that needs nothing is sent byte for byte.
func TestHistoryIsMended(t *testing.T) {
	history := `{"model":"m","tools":` + clickTools + `,"messages":[` +
		`{"role":"user","content":"go"},` +
		`{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"click","arguments":"{\"selector\": \"#a\""}},` +
		`{"id":"c2","type":"function","function":{"name":"click","arguments":{"selector":"#b"}}},` +
		`{"id":"c3","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#c\"}"}},` +
		`{"id":"c4","type":"function","function":{"name":"click","arguments":"not json at all, just words"}},` +
		`{"id":"c5","type":"function","function":{"name":"click"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"tool","tool_call_id":"c2","content":"ok"},` +
		`{"role":"tool","tool_call_id":"c3","content":"ok"},{"role":"tool","tool_call_id":"c4","content":"ok"}]}`
	for _, tc := range []struct {
		mode policy.Mode
		want []string
	}{
		{policy.ModeRepair, []string{`{"selector":"#a"}`, `{"selector":"#b"}`, `{"selector":"#c"}`, `not json at all, just words`, `{}`}},
		{policy.ModeReask, []string{`{"selector": "#a"`, `{"selector":"#b"}`, `{"selector":"#c"}`, `not json at all, just words`, ``}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, clickCall("call_9", `"{\"selector\":\"#d\"}"`))})
			srv, _ := guard(t, up, func(c *policy.Config) { c.Mode = tc.mode })
			post(t, srv, "/v1/chat/completions", history)
			// Sent again (as agents resend a conversation), it is mended
			// the same: the history cache remembers only what needed nothing.
			post(t, srv, "/v1/chat/completions", history)
			sent := up.requests()[0].Body
			if again := up.requests()[1].Body; string(again) != string(sent) {
				t.Errorf("the same history sent twice went upstream differently:\n%s\n%s", sent, again)
			}
			var got []string
			for _, c := range gjson.GetBytes(sent, "messages.1.tool_calls").Array() {
				a := c.Get("function.arguments")
				if a.Type == gjson.String {
					got = append(got, a.Str)
				} else {
					got = append(got, a.Raw)
				}
			}
			if diff := cmp.Diff(got, tc.want); diff != "" {
				t.Errorf("arguments sent upstream (-got +want):\n%s", diff)
			}
			if gjson.GetBytes(sent, "messages.2").Raw != gjson.Get(history, "messages.2").Raw {
				t.Errorf("other messages changed")
			}
		})
	}
	t.Run("clean-history-byte-identical", func(t *testing.T) {
		clean := `{"model":"m","tools":` + clickTools + `,"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c3","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#c\"}"}}]},{"role":"tool","tool_call_id":"c3","content":"ok"}]}`
		up := newUpstream(t, reply{Body: `{"choices":[]}`})
		srv, _ := guard(t, up, nil)
		post(t, srv, "/v1/chat/completions", clean)
		if got := string(up.requests()[0].Body); got != clean {
			t.Errorf("clean request changed:\n%s", got)
		}
	})
}

// TestHistoryMendingIsLinear: a history of many malformed calls is mended in
// one pass. Patching the whole body once per call took 164 s for 4 MB; the
// bytes allocated for 4x the history must now grow about 4x, and the calls
// past the bound go as sent.
func TestHistoryMendingIsLinear(t *testing.T) {
	history := func(calls int) string {
		var b strings.Builder
		b.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}`)
		for i := range calls {
			fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"click","arguments":{"selector":"#%d"}}}]},{"role":"tool","tool_call_id":"c%d","content":"%s"}`,
				i, i, i, strings.Repeat("x", 900))
		}
		b.WriteString(`]}`)
		return b.String()
	}
	up := newUpstream(t, reply{Body: `{"choices":[]}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxBodyBytes = 64 << 20 })
	allocated := func(body string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, _ := post(t, srv, "/v1/chat/completions", body)
		runtime.ReadMemStats(&after)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(history(1000)), allocated(history(4000))
	t.Logf("1 MB history: %d bytes allocated; 4 MB: %d (%.1fx)", small, large, float64(large)/float64(small))
	if large > 8*small {
		t.Errorf("4x the history allocated %.1fx the bytes: mending grows faster than the body", float64(large)/float64(small))
	}
	sent := up.requests()[1].Body
	mended := 0
	for _, m := range gjson.GetBytes(sent, "messages.#.tool_calls.0.function.arguments").Array() {
		if m.Type == gjson.String {
			mended++
		}
	}
	if mended != 256 {
		t.Errorf("%d calls mended, want the bound, 256", mended)
	}
}

// TestHistoryMendingIsBoundedInBytes: mending costs a few hundred
// nanoseconds a byte for some shapes (a fenced array of half a million
// numbers: about 0.5 s a MiB), so 256 calls are no bound on their own: thirty
// such calls in a 31 MB history took 11 s. At most 1 MiB of arguments is
// handed to the mender per request, calls in order; a call that does not fit
// what is left goes as sent, and later smaller calls are still mended.
func TestHistoryMendingIsBoundedInBytes(t *testing.T) {
	fenced := func(n int) string { // a fenced object, n bytes and a little more
		return "```json\n{\"selector\": \"" + strings.Repeat("x", n) + "\"}\n```"
	}
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"user","content":"go"}`)
	sizes := []int{300 << 10, 300 << 10, 300 << 10, 300 << 10, 10, 300 << 10, 10}
	for i, n := range sizes {
		fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"click","arguments":%q}}]}`, i, fenced(n))
	}
	b.WriteString(`]}`)
	up := newUpstream(t, reply{Body: `{"choices":[]}`})
	srv, _ := guard(t, up, nil)
	if resp, body := post(t, srv, "/v1/chat/completions", b.String()); resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	var mended []bool
	for _, a := range gjson.GetBytes(up.requests()[0].Body, "messages.#.tool_calls.0.function.arguments").Array() {
		mended = append(mended, !strings.HasPrefix(a.Str, "```"))
	}
	// 3 x 300 KiB fit in 1 MiB, the fourth and sixth do not; the small
	// ones do.
	want := []bool{true, true, true, false, true, false, true}
	if diff := cmp.Diff(mended, want); diff != "" {
		t.Errorf("calls mended (-got +want):\n%s", diff)
	}
}
