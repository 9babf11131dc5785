package proxy_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/policy"
)

// checkOpenAIError checks that a body is an OpenAI error object with the
// given status and code.
func checkOpenAIError(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	e := mustJSON(t, body).Get("error")
	if resp.StatusCode != status || e.Get("code").String() != code || e.Get("message").String() == "" ||
		e.Get("type").String() == "" || !e.Get("param").Exists() || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, want %d with code %q in the OpenAI error shape: %s", resp.StatusCode, status, code, body)
	}
}

func TestClientKeys(t *testing.T) {
	up := newUpstream(t, reply{Body: `{"object":"list","data":[]}`})
	srv, _ := guard(t, up, func(c *policy.Config) {
		c.APIKeys = []string{"tg-key-one", "tg-key-two"}
		c.UpstreamAPIKey = "sk-upstream"
	})
	tests := []struct {
		name   string
		path   string
		auth   string
		status int
	}{
		{"no-key", "/v1/models", "", 401},
		{"unknown-key", "/v1/models", "Bearer tg-key-three", 401},
		{"prefix-of-a-key", "/v1/models", "Bearer tg-key-on", 401},
		{"not-bearer", "/v1/models", "Basic tg-key-one", 401},
		{"bare-key", "/v1/models", "tg-key-one", 401},
		{"first-key", "/v1/models", "Bearer tg-key-one", 200},
		{"second-key", "/v1/models", "Bearer tg-key-two", 200},
		{"scheme-case-insensitive", "/v1/models", "bearer tg-key-two", 200},
		{"unknown-path-needs-a-key", "/admin", "", 401},
		{"healthz-is-open", "/healthz", "", 200},
		{"readyz-is-open", "/readyz", "", 200},
		{"metrics-is-open", "/metrics", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.auth != "" {
				h.Set("Authorization", tt.auth)
			}
			resp, body := do(t, t.Context(), srv, http.MethodGet, tt.path, "", h)
			if tt.status == 401 {
				checkOpenAIError(t, resp, body, 401, "invalid_api_key")
				return
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
		})
	}
	var sent []string
	for _, r := range up.requests() {
		sent = append(sent, r.Header.Get("Authorization"))
	}
	if diff := cmp.Diff(sent, []string{"Bearer sk-upstream", "Bearer sk-upstream", "Bearer sk-upstream"}); diff != "" {
		t.Errorf("Authorization the upstream saw (-got +want):\n%s", diff)
	}
}

func TestAuthorizationUpstream(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		upstream string
		want     string
	}{
		{"no-keys-client-authorization-passes", nil, "", "Bearer sk-client"},
		{"no-keys-upstream-key-replaces-it", nil, "sk-upstream", "Bearer sk-upstream"},
		{"keys-and-upstream-key", []string{"sk-client"}, "sk-upstream", "Bearer sk-upstream"},
		{"keys-without-upstream-key-send-none", []string{"sk-client"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{\"selector\":\"#a\"}"`))})
			srv, _ := guard(t, up, func(c *policy.Config) { c.APIKeys, c.UpstreamAPIKey = tt.keys, tt.upstream })
			resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", clickRequest(""), http.Header{"Authorization": {"Bearer sk-client"}})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := up.requests()[0].Header.Get("Authorization"); got != tt.want {
				t.Errorf("upstream saw Authorization %q, want %q", got, tt.want)
			}
		})
	}
}
