package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/policy"
)

// TestUpstreamFaults runs each misbehaviour of the fault-injecting upstream
// against toolguard: the client gets a prompt, well-formed answer (the
// upstream's own error, an OpenAI-shaped 502/504, or an error event ending a
// stream), and no goroutine or connection is left behind.
func TestUpstreamFaults(t *testing.T) {
	for _, tc := range []struct {
		fault  faulty.Fault
		stream bool
		status int
		code   string // error code expected, "" for a valid reply
	}{
		{faulty.ResetMidBody, false, 502, "upstream_response_unreadable"},
		{faulty.ResetMidBody, true, 200, "upstream_unreachable"},
		{faulty.StallBeforeHeaders, false, 504, "upstream_timeout"},
		{faulty.StallBeforeHeaders, true, 504, "upstream_timeout"},
		{faulty.StallBetweenEvents, true, 200, "upstream_timeout"},
		{faulty.InvalidJSON, false, 502, "upstream_invalid_json"},
		{faulty.InvalidJSON, true, 200, "upstream_invalid_event"},
		{faulty.WrongContentType, false, 200, ""},
		{faulty.WrongContentType, true, 200, ""},
		{faulty.Gzip, false, 200, ""},
		{faulty.Enormous, false, 502, "upstream_response_unreadable"},
		{faulty.ChunkedCutShort, false, 502, "upstream_response_unreadable"},
		{faulty.ChunkedCutShort, true, 200, "upstream_unreachable"},
		{faulty.ServerError, false, 500, ""},
		{faulty.ServerError, true, 500, ""},
	} {
		name := string(tc.fault)
		if tc.stream {
			name += "-stream"
		}
		t.Run(name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			up := httptest.NewServer(&faulty.Server{EnormousBytes: 4 << 20})
			t.Cleanup(up.Close)
			srv, _ := guard(t, &fakeUpstream{Server: up}, func(c *policy.Config) {
				c.UpstreamHeaderTimeout = 200 * time.Millisecond
				// Only a stall between events needs the total timeout to
				// fire; elsewhere it must not race a slow (-race) read.
				c.UpstreamTimeout = 10 * time.Second
				if tc.fault == faulty.StallBetweenEvents {
					c.UpstreamTimeout = 500 * time.Millisecond
				}
				c.MaxResponseBytes = 1 << 20
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, body := do(t, ctx, srv, "POST", "/v1/chat/completions", faultRequest(tc.stream), http.Header{"X-Fault": {string(tc.fault)}})
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, body)
			}
			switch {
			case tc.status != 200 && tc.code == "":
				if !gjson.GetBytes(body, "error.message").Exists() {
					t.Errorf("the upstream's error did not pass through: %.300s", body)
				}
			case tc.status != 200 || !tc.stream:
				e := mustJSON(t, body).Get("error")
				if e.Get("code").String() != tc.code || (tc.code != "" && e.Get("message").String() == "") {
					t.Errorf("error %s, want code %q: %.300s", e.Raw, tc.code, body)
				}
				if tc.code == "" && resp.Header.Get("X-Toolguard-Outcome") != "valid" {
					t.Errorf("outcome %q", resp.Header.Get("X-Toolguard-Outcome"))
				}
			default:
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("stream served as %q", ct)
				}
				got := assemble(t, body)
				if gjson.Get(got.Error, "code").String() != tc.code {
					t.Errorf("error event %s, want code %q:\n%s", got.Error, tc.code, body)
				}
				if tc.code != "" && got.Done {
					t.Errorf("a broken stream ended with [DONE]")
				}
				if tc.code == "" && (len(got.Calls[0]) != 1 || !got.Done) {
					t.Errorf("calls %v done %v:\n%s", got.Calls, got.Done, body)
				}
			}
		})
	}
}

// TestTotalTimeoutIs504 lets TOOLGUARD_UPSTREAM_TIMEOUT pass before the
// upstream's headers arrive (the header timeout being longer): the client
// gets a 504, not the empty answer of a request whose client went away.
func TestTotalTimeoutIs504(t *testing.T) {
	for _, stream := range []bool{false, true} {
		up := httptest.NewServer(&faulty.Server{})
		t.Cleanup(up.Close)
		srv, _ := guard(t, &fakeUpstream{Server: up}, func(c *policy.Config) {
			c.UpstreamHeaderTimeout = time.Minute
			c.UpstreamTimeout = 100 * time.Millisecond
		})
		for _, path := range []string{"/v1/chat/completions", "/v1/embeddings"} {
			req := `{"model":"m","messages":[],"tools":` + faulty.ClickTools
			if stream {
				req += `,"stream":true`
			}
			resp, body := do(t, context.Background(), srv, "POST", path, req+"}", http.Header{"X-Fault": {string(faulty.StallBeforeHeaders)}})
			if resp.StatusCode != 504 || mustJSON(t, body).Get("error.code").String() != "upstream_timeout" {
				t.Errorf("%s stream=%v: status %d body %q", path, stream, resp.StatusCode, body)
			}
		}
	}
}

// faultRequest is a chat request that declares click, streamed or not, for
// the faulty upstream (X-Fault says what goes wrong).
func faultRequest(stream bool) string {
	req := `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":` + faulty.ClickTools
	if stream {
		req += `,"stream":true`
	}
	return req + "}"
}
