package policy_test

import (
	"testing"

	"github.com/toolguard/toolguard/policy"
)

func TestDecisions(t *testing.T) {
	repair := policy.Rules{Mode: policy.ModeRepair, MaxReasks: 2, OnFailure: policy.FailPassthrough, Fallback: true, FallbackModel: "big"}
	strict := policy.Rules{Mode: policy.ModeReask, MaxReasks: 1, OnFailure: policy.FailError, Fallback: true, FallbackModel: "big"}
	validate := policy.Rules{Mode: policy.ModeValidate, MaxReasks: 5, OnFailure: policy.FailDrop}
	other := policy.Rules{Mode: policy.ModeRepair, MaxReasks: 3, Fallback: true, FallbackModel: "other"}
	tests := []struct {
		name     string
		failing  []policy.Rules
		budget   int
		failure  policy.OnFailure
		model    string
		fallback bool
	}{
		{name: "none", budget: 0, failure: policy.FailPassthrough, fallback: false},
		{name: "one tool", failing: []policy.Rules{repair}, budget: 2, failure: policy.FailPassthrough, model: "big", fallback: true},
		{name: "smallest budget, strictest failure", failing: []policy.Rules{repair, strict}, budget: 1, failure: policy.FailError, model: "big", fallback: true},
		{name: "validate mode re-asks nothing", failing: []policy.Rules{repair, validate}, budget: 0, failure: policy.FailDrop, fallback: false},
		{name: "models disagree", failing: []policy.Rules{repair, other}, budget: 2, failure: policy.FailPassthrough, fallback: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.ReaskBudget(tt.failing); got != tt.budget {
				t.Errorf("ReaskBudget = %d, want %d", got, tt.budget)
			}
			if got := policy.FailureBehaviour(tt.failing); got != tt.failure {
				t.Errorf("FailureBehaviour = %s, want %s", got, tt.failure)
			}
			if model, ok := policy.FallbackModel(tt.failing); ok != tt.fallback || model != tt.model {
				t.Errorf("FallbackModel = %q, %v; want %q, %v", model, ok, tt.model, tt.fallback)
			}
		})
	}
	force := policy.Rules{ForceToolChoice: true}
	for _, tt := range []struct {
		tools []string
		rules policy.Rules
		want  string
		ok    bool
	}{
		{tools: []string{"click", "click"}, rules: force, want: "click", ok: true},
		{tools: []string{"click", "search"}, rules: force},
		{tools: []string{"click", ""}, rules: force},
		{tools: []string{"click"}, rules: policy.Rules{}, want: "click"},
		{rules: force},
	} {
		if got, ok := policy.ForceToolChoice(tt.tools, tt.rules); got != tt.want || ok != tt.ok {
			t.Errorf("ForceToolChoice(%q) = %q, %v; want %q, %v", tt.tools, got, ok, tt.want, tt.ok)
		}
	}
}
