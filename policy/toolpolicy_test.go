package policy_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/policy"
)

func ptr[T any](v T) *T { return &v }

func TestToolPoliciesParse(t *testing.T) {
	tests := []struct {
		name string
		give string
		want policy.ToolPolicies
	}{
		{"one-tool", "click:mode=reask", policy.ToolPolicies{"click": {Mode: policy.ModeReask}}},
		{"every-key", "click:mode=repair,max_reasks=1,on_failure=drop,schema_repair=false,force_tool_choice=true",
			policy.ToolPolicies{"click": {Mode: policy.ModeRepair, MaxReasks: ptr(1), OnFailure: policy.FailDrop, SchemaRepair: ptr(false), ForceToolChoice: ptr(true)}}},
		{"two-tools", "click:mode=reask,max_reasks=1,on_failure=drop;search:mode=validate",
			policy.ToolPolicies{"click": {Mode: policy.ModeReask, MaxReasks: ptr(1), OnFailure: policy.FailDrop}, "search": {Mode: policy.ModeValidate}}},
		{"spaces-newlines-trailing-semicolon", " click : mode = reask ;\n  web.search-v2:max_reasks=0 ;\n",
			policy.ToolPolicies{"click": {Mode: policy.ModeReask}, "web.search-v2": {MaxReasks: ptr(0)}}},
		{"empty", "", policy.ToolPolicies{}},
		{"longest-name", strings.Repeat("a", 128) + ":mode=off", policy.ToolPolicies{strings.Repeat("a", 128): {Mode: policy.ModeOff}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got policy.ToolPolicies
			if err := got.UnmarshalText([]byte(tt.give)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
			// The text form reads back to the same policies.
			text, _ := got.MarshalText()
			var again policy.ToolPolicies
			if err := again.UnmarshalText(text); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			if diff := cmp.Diff(again, tt.want); diff != "" {
				t.Errorf("round trip of %q (-got +want):\n%s", text, diff)
			}
		})
	}
}

// TestMalformedToolPoliciesStopLoad checks that each malformed value is
// refused with a message naming the variable, the entry and the problem.
func TestMalformedToolPoliciesStopLoad(t *testing.T) {
	tests := []struct {
		name string
		give string
		want string
	}{
		{"no-colon", "click", `entry 1 ("click"): no colon after the tool name`},
		{"bad-mode", "click:mode=reask;search:mode=fix", `entry 2 ("search:mode=fix"): mode "fix" is not one of repair, reask, validate, off`},
		{"reasks-out-of-range", "click:max_reasks=11", `max_reasks "11" is not a whole number from 0 to 10`},
		{"reasks-not-a-number", "click:max_reasks=two", `max_reasks "two" is not a whole number`},
		{"bad-on-failure", "click:on_failure=ignore", `on_failure "ignore" is not one of error, passthrough, drop`},
		{"bad-bool", "click:schema_repair=no-thanks", `schema_repair "no-thanks" is not true or false`},
		{"unknown-key", "click:retries=2", `unknown setting "retries"`},
		{"not-key-value", "click:mode", `setting "mode" is not key=value`},
		{"empty-settings", "click:", `setting "" is not key=value`},
		{"bad-name", "my tool:mode=off", `"my tool" is not a tool name`},
		{"long-name", strings.Repeat("a", 129) + ":mode=off", `"` + strings.Repeat("a", 129) + `" is not a tool name`},
		{"empty-name", ":mode=off", `"" is not a tool name`},
		{"duplicate-tool", "click:mode=off;click:mode=repair", `tool "click" has a policy already`},
		{"duplicate-key", "click:mode=off,mode=repair", `mode is set twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Load([]string{"TOOLGUARD_TOOL_POLICIES=" + tt.give})
			if err == nil {
				t.Fatal("Load accepted a malformed TOOLGUARD_TOOL_POLICIES")
			}
			msg := err.Error()
			for _, want := range []string{"TOOLGUARD_TOOL_POLICIES: ", tt.want, "the format is tool:key=value"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

func TestValidateChecksToolPoliciesBuiltInCode(t *testing.T) {
	c := policy.Default()
	c.ToolPolicies = policy.ToolPolicies{"click": {Mode: "fix"}, "search": {MaxReasks: ptr(99)}}
	err := c.Validate()
	for _, want := range []string{`TOOLGUARD_TOOL_POLICIES: click: mode "fix"`, "TOOLGUARD_TOOL_POLICIES: search: max_reasks 99 is out of range"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want %q", err, want)
		}
	}
}

func TestRules(t *testing.T) {
	env := []string{
		"TOOLGUARD_MAX_REASKS=3",
		"TOOLGUARD_FORCE_TOOL_CHOICE_ON_LAST_REASK=true",
		"TOOLGUARD_TOOL_POLICIES=click:mode=reask,max_reasks=1,on_failure=drop;search:mode=validate,schema_repair=false,force_tool_choice=false",
	}
	tests := []struct {
		name string
		env  []string
		tool string
		want policy.Rules
	}{
		{"tool-without-policy-gets-globals", env, "type",
			policy.Rules{Mode: policy.ModeRepair, MaxReasks: 3, OnFailure: policy.FailError, SchemaRepair: true, ForceToolChoice: true, TextCalls: policy.TextCallsMarked}},
		{"policy-overrides-what-it-sets", env, "click",
			policy.Rules{Mode: policy.ModeReask, MaxReasks: 1, OnFailure: policy.FailDrop, SchemaRepair: true, ForceToolChoice: true, TextCalls: policy.TextCallsMarked}},
		{"booleans-override", env, "search",
			policy.Rules{Mode: policy.ModeValidate, MaxReasks: 3, OnFailure: policy.FailError, SchemaRepair: false, ForceToolChoice: false, TextCalls: policy.TextCallsMarked}},
		{"global-off-wins", append([]string{"TOOLGUARD_MODE=off"}, env...), "click",
			policy.Rules{Mode: policy.ModeOff, MaxReasks: 3, OnFailure: policy.FailError, SchemaRepair: true, ForceToolChoice: true, TextCalls: policy.TextCallsMarked}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := policy.Load(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.Rules(tt.tool), tt.want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
		})
	}
}

func TestRulesReasks(t *testing.T) {
	tests := []struct {
		name string
		give policy.Rules
		want int
	}{
		{"repair", policy.Rules{Mode: policy.ModeRepair, MaxReasks: 2}, 2},
		{"reask", policy.Rules{Mode: policy.ModeReask, MaxReasks: 1}, 1},
		{"validate-never-reasks", policy.Rules{Mode: policy.ModeValidate, MaxReasks: 2}, 0},
		{"off-never-reasks", policy.Rules{Mode: policy.ModeOff, MaxReasks: 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.Reasks(); got != tt.want {
				t.Errorf("Reasks() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestModeCap(t *testing.T) {
	tests := []struct {
		m, limit, want policy.Mode
	}{
		{policy.ModeRepair, policy.ModeReask, policy.ModeReask},
		{policy.ModeRepair, policy.ModeValidate, policy.ModeValidate},
		{policy.ModeReask, policy.ModeRepair, policy.ModeReask},
		{policy.ModeValidate, policy.ModeRepair, policy.ModeValidate},
		{policy.ModeRepair, policy.ModeOff, policy.ModeOff},
		{policy.ModeOff, policy.ModeRepair, policy.ModeOff},
	}
	for _, tt := range tests {
		t.Run(string(tt.m)+"-capped-by-"+string(tt.limit), func(t *testing.T) {
			if got := tt.m.Cap(tt.limit); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOnFailureStricter(t *testing.T) {
	tests := []struct {
		f, g, want policy.OnFailure
	}{
		{policy.FailPassthrough, policy.FailDrop, policy.FailDrop},
		{policy.FailDrop, policy.FailPassthrough, policy.FailDrop},
		{policy.FailDrop, policy.FailError, policy.FailError},
		{policy.FailError, policy.FailPassthrough, policy.FailError},
		{policy.FailPassthrough, policy.FailPassthrough, policy.FailPassthrough},
	}
	for _, tt := range tests {
		t.Run(string(tt.f)+"-and-"+string(tt.g), func(t *testing.T) {
			if got := tt.f.Stricter(tt.g); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestAPIKeysAreTrimmedAndNeverEchoed(t *testing.T) {
	c, err := policy.Load([]string{"TOOLGUARD_API_KEYS= key-one , key-two,"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.APIKeys, []string{"key-one", "key-two"}); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
	c.APIKeys = []string{"good", "bad key"}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "TOOLGUARD_API_KEYS: key 2") || strings.Contains(err.Error(), "bad key") {
		t.Errorf("Validate: %v", err)
	}
}
