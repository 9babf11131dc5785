package policy_test

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

func TestResilienceSettingsValidate(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want string // the variable the error names; "" for none
	}{
		{"defaults", nil, ""},
		{"model-alone", []string{"TOOLGUARD_FALLBACK_MODEL=gpt-4o"}, ""},
		{"url-alone", []string{"TOOLGUARD_FALLBACK_UPSTREAM_URL=https://api.openai.com/v1"}, ""},
		{"url-with-key", []string{"TOOLGUARD_FALLBACK_UPSTREAM_URL=http://127.0.0.1:8000/v1", "TOOLGUARD_FALLBACK_UPSTREAM_API_KEY=sk-x"}, ""},
		{"key-without-url", []string{"TOOLGUARD_FALLBACK_UPSTREAM_API_KEY=sk-x"}, "TOOLGUARD_FALLBACK_UPSTREAM_API_KEY"},
		{"relative-url", []string{"TOOLGUARD_FALLBACK_UPSTREAM_URL=/v1"}, "TOOLGUARD_FALLBACK_UPSTREAM_URL"},
		{"ftp-url", []string{"TOOLGUARD_FALLBACK_UPSTREAM_URL=ftp://example.com/v1"}, "TOOLGUARD_FALLBACK_UPSTREAM_URL"},
		{"model-with-spaces", []string{"TOOLGUARD_FALLBACK_MODEL= gpt-4o"}, "TOOLGUARD_FALLBACK_MODEL"},
		{"breaker-off", []string{"TOOLGUARD_BREAKER_FAILURES=0"}, ""},
		{"breaker-negative", []string{"TOOLGUARD_BREAKER_FAILURES=-1"}, "TOOLGUARD_BREAKER_FAILURES"},
		{"breaker-too-many", []string{"TOOLGUARD_BREAKER_FAILURES=1001"}, "TOOLGUARD_BREAKER_FAILURES"},
		{"cooldown-zero", []string{"TOOLGUARD_BREAKER_COOLDOWN=0s"}, "TOOLGUARD_BREAKER_COOLDOWN"},
		{"cooldown-under-a-second", []string{"TOOLGUARD_BREAKER_COOLDOWN=500ms"}, "TOOLGUARD_BREAKER_COOLDOWN"},
		{"fallback-off-and-model", []string{"TOOLGUARD_TOOL_POLICIES=click:fallback=off,fallback_model=x"}, "TOOLGUARD_TOOL_POLICIES"},
		{"fallback-bad-value", []string{"TOOLGUARD_TOOL_POLICIES=click:fallback=maybe"}, "TOOLGUARD_TOOL_POLICIES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Load(tt.give)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v does not name %s", err, tt.want)
			}
		})
	}
}

func TestFallbackKeyIsNeverEchoed(t *testing.T) {
	_, err := policy.Load([]string{"TOOLGUARD_FALLBACK_UPSTREAM_URL=http://x/v1", "TOOLGUARD_FALLBACK_UPSTREAM_API_KEY=sk-se cret"})
	if err == nil || strings.Contains(err.Error(), "sk-se") {
		t.Errorf("error %v", err)
	}
}

func TestFallbackRules(t *testing.T) {
	tests := []struct {
		name      string
		give      []string
		tool      string
		wantOn    bool
		wantModel string
	}{
		{"off-by-default", nil, "click", false, ""},
		{"global-model", []string{"TOOLGUARD_FALLBACK_MODEL=big"}, "click", true, "big"},
		{"global-url-keeps-the-model", []string{"TOOLGUARD_FALLBACK_UPSTREAM_URL=http://x/v1"}, "click", true, ""},
		{"tool-turns-it-off", []string{"TOOLGUARD_FALLBACK_MODEL=big", "TOOLGUARD_TOOL_POLICIES=click:fallback=off"}, "click", false, "big"},
		{"other-tool-keeps-it", []string{"TOOLGUARD_FALLBACK_MODEL=big", "TOOLGUARD_TOOL_POLICIES=click:fallback=off"}, "type", true, "big"},
		{"tool-model-without-global", []string{"TOOLGUARD_TOOL_POLICIES=click:fallback_model=org/model:free"}, "click", true, "org/model:free"},
		{"tool-model-over-global", []string{"TOOLGUARD_FALLBACK_MODEL=big", "TOOLGUARD_TOOL_POLICIES=click:fallback_model=bigger"}, "click", true, "bigger"},
		{"tool-on-without-anything", []string{"TOOLGUARD_TOOL_POLICIES=click:fallback=on"}, "click", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := policy.Load(tt.give)
			if err != nil {
				t.Fatal(err)
			}
			if r := c.Rules(tt.tool); r.Fallback != tt.wantOn || (r.Fallback && r.FallbackModel != tt.wantModel) {
				t.Errorf("Fallback %v model %q, want %v %q", r.Fallback, r.FallbackModel, tt.wantOn, tt.wantModel)
			}
		})
	}
}

func TestFallbackPoliciesRoundTrip(t *testing.T) {
	const give = "click:fallback=off;search:max_reasks=1,fallback_model=org/model:free"
	var p policy.ToolPolicies
	if err := p.UnmarshalText([]byte(give)); err != nil {
		t.Fatal(err)
	}
	got, _ := p.MarshalText()
	if string(got) != give {
		t.Errorf("MarshalText = %q, want %q", got, give)
	}
}
