package proxy_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// TestRequestID checks that each request gets an id in its response and on
// every one of its log lines, taken from the client's X-Request-Id when that
// is a plain token and made up otherwise.
func TestRequestID(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{}"`))})
	srv, logs := guard(t, up, func(c *policy.Config) { c.MaxReasks = 1 })
	for _, tc := range []struct{ name, give, want string }{
		{"client-id-kept", "req-abc_123", "req-abc_123"},
		{"none-made-up", "", ""},
		{"unsafe-id-replaced", "evil\tid", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.give != "" {
				h.Set("X-Request-Id", tc.give)
			}
			resp, _ := do(t, context.Background(), srv, "POST", "/v1/chat/completions", clickRequest(""), h)
			id := resp.Header.Get("X-Toolguard-Request-Id")
			if id == "" || (tc.want != "" && id != tc.want) || id == tc.give && tc.want == "" {
				t.Fatalf("request id %q", id)
			}
			// The access line and each invalid-call line carry it, once.
			var lines []string
			sc := bufio.NewScanner(strings.NewReader(logs.String()))
			for sc.Scan() {
				if n := strings.Count(sc.Text(), `"request_id":`); n > 1 {
					t.Errorf("request_id %d times in %s", n, sc.Text())
				}
				if gjson.Get(sc.Text(), "request_id").String() == id {
					lines = append(lines, gjson.Get(sc.Text(), "msg").String())
				}
			}
			if strings.Join(lines, ",") != "invalid tool call,invalid tool call,request" {
				t.Errorf("lines with id %s: %v", id, lines)
			}
		})
	}
}
