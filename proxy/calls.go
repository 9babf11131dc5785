package proxy

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validate"
)

// call is one tool call of a response and what the ladder made of it.
type call struct {
	raw     string // the call object as the model sent it
	legacy  bool   // a legacy function_call object, not a tool_calls entry
	id      string
	name    string // as the model sent it
	tool    *tool  // the declared tool it names, nil if none
	args    []byte // the arguments text, mended if edits were made
	rawArgs string // the arguments field as the model sent it (raw JSON)
	edits   []repair.Edit
	errs    []validate.Error
	attempt int // 0 for the first response, n for the n-th re-ask
	// unchecked: the arguments passed as a JSON object without a check
	// against the schema (it does not compile, or checking would cost more
	// than the work budget).
	unchecked bool
}

func (c *call) valid() bool { return c.errs == nil }

// changed reports whether the call must be rewritten before it is sent on.
func (c *call) changed() bool { return len(c.edits) > 0 }

// output returns the call object to send to the client.
func (c *call) output() (string, error) {
	if !c.changed() {
		return c.raw, nil
	}
	prefix := "function."
	if c.legacy {
		prefix = ""
	}
	out, err := sjson.Set(c.raw, prefix+"arguments", string(c.args))
	if err != nil {
		return "", fmt.Errorf("write the arguments of call %q: %w", c.id, err)
	}
	if c.tool != nil && c.tool.name != c.name {
		if out, err = sjson.Set(out, prefix+"name", c.tool.name); err != nil {
			return "", fmt.Errorf("write the name of call %q: %w", c.id, err)
		}
	}
	return out, nil
}

// forHistory returns the call as it goes back to the model in a re-ask: as
// sent, except that arguments that are not a string become one, because
// providers reject a conversation whose history holds non-string arguments.
func (c *call) forHistory() (string, error) {
	prefix := "function."
	if c.legacy {
		prefix = ""
	}
	if gjson.Get(c.raw, prefix+"arguments").Type == gjson.String {
		return c.raw, nil
	}
	out, err := sjson.Set(c.raw, prefix+"arguments", c.rawArgs)
	if err != nil {
		return "", fmt.Errorf("write the arguments of call %q for the history: %w", c.id, err)
	}
	return out, nil
}

// checkCall runs the ladder's local steps (validate, and repair if the mode
// allows) on one call object.
func (ex *exchange) checkCall(raw gjson.Result, legacy bool, attempt int) *call {
	return ex.checkCut(raw, legacy, attempt, true, false)
}

// check is checkCall; with mend false it only validates, which is all a
// stream needs to know whether a call may go out early.
func (ex *exchange) check(raw gjson.Result, legacy bool, attempt int, mend bool) *call {
	return ex.checkCut(raw, legacy, attempt, mend, false)
}

// checkCut is check for a call whose choice ended with cutOff set when the
// model was stopped at its length limit (finish_reason "length"): its
// arguments, if they end early, are then never closed (repair.Options).
func (ex *exchange) checkCut(raw gjson.Result, legacy bool, attempt int, mend, cutOff bool) *call {
	fn := raw.Get("function")
	if legacy {
		fn = raw
	}
	c := &call{
		raw:     raw.Raw,
		legacy:  legacy,
		id:      raw.Get("id").String(),
		name:    fn.Get("name").String(),
		attempt: attempt,
	}
	argsField := fn.Get("arguments")
	c.rawArgs = argsField.Raw
	if !argsField.Exists() {
		c.rawArgs = `""`
	}
	global := ex.pol.rules("")
	c.tool = ex.tools.byName[c.name]
	var nameEdit *repair.Edit
	if c.tool == nil && mend && global.Mode.Repairs() && global.SchemaRepair {
		if mapped, ok := repair.ToolName(c.name, ex.tools.names); ok {
			c.tool = ex.tools.byName[mapped]
			nameEdit = &repair.Edit{Kind: repair.KindToolName, Path: "", Before: c.name, After: mapped}
		}
	}
	if c.tool == nil {
		c.args = []byte(argsField.String())
		names := ex.tools.names
		more := ""
		if len(names) > 20 {
			names, more = names[:20], fmt.Sprintf(" and %d more", len(names)-20)
		}
		c.errs = []validate.Error{{Keyword: "tool", Message: fmt.Sprintf("tool %q is not declared; the declared tools are: %s%s",
			wire.Clip(c.name, 64), wire.Clip(strings.Join(names, ", "), 1000), more)}}
		return c
	}
	rules := ex.rulesOf(c)
	if rules.Mode == policy.ModeOff {
		// The operator exempted this tool: its calls pass as sent.
		c.args = []byte(argsField.String())
		return c
	}
	s := ex.tools.schema(ex.h.schemas, c.tool)
	res := repair.Arguments([]byte(c.rawArgs), s, repair.Options{
		Budget:       ex.work,
		Syntax:       mend && rules.Mode.Repairs(),
		SchemaGuided: mend && rules.Mode.Repairs() && rules.SchemaRepair,
		CutOff:       cutOff,
	})
	c.args, c.edits, c.errs = res.Args, res.Edits, res.Errors
	switch {
	case s == nil && c.errs == nil:
		c.unchecked = true
	case validate.Unchecked(c.errs):
		// Over the work budget: like a schema that does not compile, the
		// arguments must still be a JSON object.
		if gjson.ValidBytes(c.args) && gjson.ParseBytes(c.args).IsObject() {
			c.errs, c.unchecked = nil, true
			ex.h.log.WarnContext(ex.ctx, "tool call not checked: validating it would exceed the work budget", "tool", c.tool.name, "call_id", c.id)
		} else {
			c.errs = []validate.Error{{Keyword: "type", Message: "arguments must be a JSON object"}}
		}
	}
	if nameEdit != nil {
		c.edits = append([]repair.Edit{*nameEdit}, c.edits...)
	}
	return c
}
