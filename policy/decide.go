package policy

// The decisions for a turn of a model's reply whose calls (some of them)
// are invalid. Each takes the Rules of the invalid calls' tools, one entry
// per invalid call, and combines them so that no tool gets more than its
// policy allows: they are pure functions, the same for every wire format.

// ReaskBudget is how many re-asks the invalid calls allow in all: the
// smallest budget among their tools. With no invalid call it is 0.
func ReaskBudget(failing []Rules) int {
	budget := -1
	for _, r := range failing {
		if n := r.Reasks(); budget < 0 || n < budget {
			budget = n
		}
	}
	return max(budget, 0)
}

// FailureBehaviour is what happens when the calls stay invalid: the
// strictest behaviour among their tools (error, then drop, then
// passthrough).
func FailureBehaviour(failing []Rules) OnFailure {
	f := FailPassthrough
	for _, r := range failing {
		f = f.Stricter(r.OnFailure)
	}
	return f
}

// FallbackModel says whether the last re-ask may go to the fallback, and
// with which model ("" keeps the request's). Every failing tool must allow
// it and name the same model: of two tools whose policies name different
// models, neither's would be a choice made for the other, so none is made.
func FallbackModel(failing []Rules) (string, bool) {
	model, any := "", false
	for _, r := range failing {
		if !r.Fallback || (any && r.FallbackModel != model) {
			return "", false
		}
		model, any = r.FallbackModel, true
	}
	return model, any
}

// ForceToolChoice says whether the last re-ask should name the failing tool
// in tool_choice: only when every invalid call names one and the same
// declared tool (tools, one name per invalid call, "" for an undeclared
// one) and its policy asks for it.
func ForceToolChoice(tools []string, rules Rules) (string, bool) {
	only := ""
	for _, t := range tools {
		if t == "" || (only != "" && t != only) {
			return "", false
		}
		only = t
	}
	return only, only != "" && rules.ForceToolChoice
}
