package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// typeTools declares click and type, for responses that call both.
const typeTools = `[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}},` +
	`{"type":"function","function":{"name":"type","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}]`

func typeCall(id, argsField string) string {
	return `{"id":"` + id + `","type":"function","function":{"name":"type","arguments":` + argsField + `}}`
}

// guardEnv starts toolguard in front of up, configured from env as main
// would be.
func guardEnv(t *testing.T, up *fakeUpstream, env []string) *httptest.Server {
	t.Helper()
	cfg, err := policy.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := guard(t, up, func(c *policy.Config) { cfg.UpstreamURL = c.UpstreamURL; *c = cfg })
	return srv
}

// TestToolPoliciesAndOverrides checks how per-tool policies and request
// headers decide re-asks, repair and the failure, through real HTTP.
func TestToolPoliciesAndOverrides(t *testing.T) {
	usage := `{"total_tokens":1}`
	bareClick := toolReply(usage, clickCall("call_1", `"\"#login\""`)) // repairable by wrapping
	badClick := toolReply(usage, clickCall("call_1", `"{}"`))
	badBoth := toolReply(usage, clickCall("call_1", `"{}"`), typeCall("call_2", `"{}"`))
	tests := []struct {
		name      string
		env       []string
		header    http.Header
		tools     string
		reply     string
		status    int
		upstreams int    // upstream requests made
		outcome   string // X-Toolguard-Outcome
		code      string // error code, for a refused request
	}{
		{"tool-in-validate-mode-is-not-reasked", []string{"TOOLGUARD_TOOL_POLICIES=click:mode=validate"}, nil, clickTools, badClick, 400, 1, "failed", ""},
		{"tool-max-reasks", []string{"TOOLGUARD_MAX_REASKS=3", "TOOLGUARD_TOOL_POLICIES=click:max_reasks=1"}, nil, clickTools, badClick, 400, 2, "failed", ""},
		{"tool-on-failure-drop", []string{"TOOLGUARD_TOOL_POLICIES=click:on_failure=drop"}, nil, clickTools, badClick, 200, 3, "failed", ""},
		{"tool-in-off-mode-passes-unchecked", []string{"TOOLGUARD_TOOL_POLICIES=click:mode=off"}, nil, clickTools, badClick, 200, 1, "valid", ""},
		{"tool-without-schema-repair", []string{"TOOLGUARD_MAX_REASKS=0", "TOOLGUARD_TOOL_POLICIES=click:schema_repair=false"}, nil, clickTools, bareClick, 400, 1, "failed", ""},
		{"global-without-schema-repair", []string{"TOOLGUARD_MAX_REASKS=0", "TOOLGUARD_SCHEMA_REPAIR=false"}, nil, clickTools, bareClick, 400, 1, "failed", ""},
		{"schema-repair-by-default", []string{"TOOLGUARD_MAX_REASKS=0"}, nil, clickTools, bareClick, 200, 1, "repaired", ""},
		{"smallest-budget-among-failing-tools", []string{"TOOLGUARD_TOOL_POLICIES=click:max_reasks=1;type:max_reasks=2"}, nil, typeTools, badBoth, 400, 2, "failed", ""},
		{"strictest-failure-among-failing-tools", []string{"TOOLGUARD_MAX_REASKS=0", "TOOLGUARD_TOOL_POLICIES=click:on_failure=drop;type:on_failure=passthrough"}, nil, typeTools, badBoth, 200, 1, "failed", ""},
		{"error-beats-drop", []string{"TOOLGUARD_MAX_REASKS=0", "TOOLGUARD_TOOL_POLICIES=click:on_failure=drop"}, nil, typeTools, badBoth, 400, 1, "failed", ""},

		{"header-lowers-reasks", nil, http.Header{"X-Toolguard-Max-Reasks": {"0"}}, clickTools, badClick, 400, 1, "failed", ""},
		{"header-cannot-raise-reasks", []string{"TOOLGUARD_MAX_REASKS=1"}, http.Header{"X-Toolguard-Max-Reasks": {"9"}}, clickTools, badClick, 400, 2, "failed", ""},
		{"header-mode-validate-skips-repair", nil, http.Header{"X-Toolguard-Mode": {"validate"}}, clickTools, bareClick, 400, 1, "failed", ""},
		{"header-cannot-raise-mode", []string{"TOOLGUARD_MODE=validate"}, http.Header{"X-Toolguard-Mode": {"repair"}}, clickTools, bareClick, 400, 1, "failed", ""},
		{"header-off-refused", nil, http.Header{"X-Toolguard-Mode": {"off"}}, clickTools, badClick, 400, 0, "", "invalid_toolguard_header"},
		{"header-off-when-allowed", []string{"TOOLGUARD_ALLOW_CLIENT_OFF=true"}, http.Header{"X-Toolguard-Mode": {"off"}}, clickTools, badClick, 200, 1, "", ""},
		{"header-bad-mode", nil, http.Header{"X-Toolguard-Mode": {"fix"}}, clickTools, badClick, 400, 0, "", "invalid_toolguard_header"},
		{"header-bad-reasks", nil, http.Header{"X-Toolguard-Max-Reasks": {"-1"}}, clickTools, badClick, 400, 0, "", "invalid_toolguard_header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: tt.reply})
			srv := guardEnv(t, up, tt.env)
			req := `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":` + tt.tools + `}`
			resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", req, tt.header)
			if tt.code != "" {
				checkOpenAIError(t, resp, body, tt.status, tt.code)
			} else if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if got := resp.Header.Get("X-Toolguard-Outcome"); got != tt.outcome {
				t.Errorf("outcome %q, want %q", got, tt.outcome)
			}
			if got := len(up.requests()); got != tt.upstreams {
				t.Errorf("%d upstream requests, want %d", got, tt.upstreams)
			}
		})
	}
}

// TestForceToolChoiceOnLastReask checks that only the last re-ask forces
// tool_choice, and only when exactly one tool is failing.
func TestForceToolChoiceOnLastReask(t *testing.T) {
	usage := `{"total_tokens":1}`
	forced := `{"type":"function","function":{"name":"click"}}`
	tests := []struct {
		name  string
		env   []string
		reply string
		want  []string // tool_choice of each upstream request ("" when absent)
	}{
		{"global-switch", []string{"TOOLGUARD_FORCE_TOOL_CHOICE_ON_LAST_REASK=true"},
			toolReply(usage, clickCall("call_1", `"{}"`)), []string{`"auto"`, `"auto"`, forced}},
		{"per-tool", []string{"TOOLGUARD_TOOL_POLICIES=click:force_tool_choice=true"},
			toolReply(usage, clickCall("call_1", `"{}"`)), []string{`"auto"`, `"auto"`, forced}},
		{"off-by-default", nil,
			toolReply(usage, clickCall("call_1", `"{}"`)), []string{`"auto"`, `"auto"`, `"auto"`}},
		{"not-with-two-failing-tools", []string{"TOOLGUARD_FORCE_TOOL_CHOICE_ON_LAST_REASK=true"},
			toolReply(usage, clickCall("call_1", `"{}"`), typeCall("call_2", `"{}"`)), []string{`"auto"`, `"auto"`, `"auto"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: tt.reply})
			srv := guardEnv(t, up, tt.env)
			req := `{"model":"m","messages":[{"role":"user","content":"go"}],"tool_choice":"auto","tools":` + typeTools + `}`
			post(t, srv, "/v1/chat/completions", req)
			var got []string
			for _, r := range up.requests() {
				got = append(got, gjson.GetBytes(r.Body, "tool_choice").Raw)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("tool_choice of each upstream request (-got +want):\n%s", diff)
			}
		})
	}
}
