package ladder

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validate"
)

// Outcome is what toolguard did with a reply, as the client is told in
// X-Toolguard-Outcome.
type Outcome string

// The outcomes.
const (
	OutcomeNone     Outcome = "none"     // no tool calls
	OutcomeValid    Outcome = "valid"    // every call valid as received
	OutcomeRepaired Outcome = "repaired" // made valid locally
	OutcomeReasked  Outcome = "reasked"  // made valid by asking the model again
	OutcomeFailed   Outcome = "failed"   // some calls could not be made valid
	// OutcomeUnchecked: some calls passed as JSON objects without a check,
	// because their tool's schema does not compile or checking them would
	// cost more than the work budget.
	OutcomeUnchecked Outcome = "unchecked"
)

// RequestSteps bounds the validation work of one request, all its calls
// and attempts together (validate.MaxSteps bounds one call's).
const RequestSteps = validate.RequestSteps

// MaxMendBytes bounds the arguments of one request's calls, over every
// attempt, that are handed to the mender: the work of mending is not
// linear in every shape (a fenced array of half a million numbers costs
// about a second a MiB), so the bytes alone, not the call count, bound it.
// One call of the largest size that is mended (repair.MaxInput) fits; the
// calls past the bound are checked, not mended.
const MaxMendBytes = repair.MaxInput

// objectSchema stands in for a function declared without parameters: such a
// function takes an object, and OpenAI sends "{}" for it.
var objectSchema = []byte(`{"type":"object"}`)

// Tool is one declared function.
type Tool struct {
	Name   string
	Params []byte // the parameters schema as the client sent it
}

// Tools are the functions a request declares, by name and in order.
type Tools struct {
	byName map[string]*Tool
	Names  []string
}

// NoTools are the tools of a request that declares none, shared by all
// of them: never added to.
var NoTools = &Tools{}

// Add declares a function. params is its parameters schema, nil for none
// (it then takes any object). A name already declared, or empty, is not
// added, and Add reports false.
func (ts *Tools) Add(name string, params []byte) bool {
	if name == "" || ts.byName[name] != nil {
		return false
	}
	if ts.byName == nil {
		ts.byName = map[string]*Tool{}
	}
	if params == nil {
		params = objectSchema
	}
	ts.byName[name] = &Tool{Name: name, Params: params}
	ts.Names = append(ts.Names, name)
	return true
}

// Lookup returns the declared tool of that name, or nil.
func (ts *Tools) Lookup(name string) *Tool { return ts.byName[name] }

// Len is the number of tools declared.
func (ts *Tools) Len() int { return len(ts.Names) }

// OutputTool names the tool that stands for a reply's content when the
// request declares a JSON response format (structured outputs): the content
// is checked as the arguments of a call to it, against the declared schema.
// No function can be named so, and no tool policy can name it.
const OutputTool = "(response_format)"

// Sent is a call as the model sent it, read from the wire.
type Sent struct {
	ID, Name string
	// Tool, if set, is the tool the call is checked against, whatever its
	// name: the response format's, for content.
	Tool *Tool
	// Args is the arguments field as raw JSON ("" when the call has none):
	// a string holding JSON, as the API sends it, or a JSON value that some
	// servers send in its place.
	Args string
	// Raw is the call as the model sent it, in its format (a JSON reply's
	// call object); "" for a call put together from a stream or text.
	Raw string
	// Edits were made before the ladder saw the call (reading it from
	// text): they come first in the call's edits.
	Edits []repair.Edit
	// Unread, if set, says why the call's arguments could not be read (a
	// call written as text, see repair.TextCall.Unread): the call is
	// invalid as it stands, with this error, whatever Args holds.
	Unread string
}

// Call is one tool call and what the ladder made of it.
type Call struct {
	ID   string
	Name string // as the model sent it
	Tool *Tool  // the declared tool it names, nil if none
	// Args is the arguments text, mended if edits were made; RawArgs the
	// arguments field as the model sent it (raw JSON).
	Args    []byte
	RawArgs string
	Edits   []repair.Edit
	Errs    []validate.Error
	Attempt int // 0 for the first reply, n for the n-th re-ask
	// Unchecked: the arguments passed as a JSON object without a check
	// against the schema (it does not compile, or checking would cost more
	// than the work budget).
	Unchecked bool
	Raw       string // Sent.Raw
}

// Valid reports whether the call may reach the client.
func (c *Call) Valid() bool { return c.Errs == nil }

// Changed reports whether the call must be rewritten before it is sent on.
func (c *Call) Changed() bool { return len(c.Edits) > 0 }

// ToolName is the name the call goes out with: the declared tool's for a
// valid call (a mended name), the model's otherwise.
func (c *Call) ToolName() string {
	if c.Valid() && c.Tool != nil {
		return c.Tool.Name
	}
	return c.Name
}

// messageName is the tool's name as the model's feedback gives it: "" for
// the reply's content (OutputTool), which is no tool the model called.
func (t *Tool) messageName() string {
	if t.Name == OutputTool {
		return ""
	}
	return t.Name
}

// Exchange is one inspected request: its tools and rules, and what became
// of every call checked for it, in every attempt.
type Exchange struct {
	Tools   *Tools
	Policy  RuleSet
	Schemas *validate.Cache
	// Work is the validation all of the request's calls may do together,
	// over every attempt: past it, calls pass unchecked.
	Work *validate.Budget
	Log  *slog.Logger
	Ctx  context.Context // the client's request, for the log
	// mended is the bytes of arguments handed to the mender so far;
	// overMend is set once a call was past MaxMendBytes.
	mended   int
	overMend bool
	// repairs is the JSON repair work of the request's calls, written as
	// calls or as text, over every attempt.
	repairs repair.Quota
	// global is Policy.Rules(""), once globalOK (see globalRules).
	global   policy.Rules
	globalOK bool

	// What happened.
	Calls  []*Call // every call checked, in every attempt
	Reasks int
	GaveUp error // why re-asking stopped short, if it did
	// Spent is set once a call was left unchecked because the request's
	// validation budget (Work) was spent: a re-ask's calls could not be
	// checked either, so none is made.
	Spent   bool
	Outcome Outcome
}

// quota returns the request's JSON repair work.
func (x *Exchange) quota() *repair.Quota { return &x.repairs }

// globalRules returns Policy.Rules(""), read once: a RuleSet's rules do not
// change during an exchange, and a stream asks for them at every event
// (TextCallHold).
func (x *Exchange) globalRules() policy.Rules {
	if !x.globalOK {
		x.global, x.globalOK = x.Policy.Rules(""), true
	}
	return x.global
}

// A RuleSet gives the rules for a tool's calls ("" for the global ones):
// the configuration, narrowed by the request.
type RuleSet interface {
	Rules(tool string) policy.Rules
}

// rulesOf returns the settings for one call: its tool's, or the global ones
// for a call naming no declared tool.
func (x *Exchange) rulesOf(c *Call) policy.Rules {
	if c.Tool == nil {
		return x.globalRules()
	}
	return x.Policy.Rules(c.Tool.Name)
}

// Check runs the ladder's local steps on one call: the tool's name, then
// validation and, if mend is set and the rules allow, repair. cutOff says
// the reply ended at the model's length limit: arguments that end early are
// then never closed (repair.Options). The call is not added to x.Calls.
func (x *Exchange) Check(s Sent, attempt int, mend, cutOff bool) *Call {
	c := &Call{ID: s.ID, Name: s.Name, Attempt: attempt, RawArgs: s.Args, Raw: s.Raw}
	if s.Args == "" {
		c.RawArgs = `""`
	}
	global := x.globalRules()
	c.Tool = s.Tool
	if c.Tool == nil {
		c.Tool = x.Tools.Lookup(c.Name)
	}
	var nameEdit *repair.Edit
	if c.Tool == nil && mend && global.Mode.Repairs() && global.SchemaRepair {
		if mapped, ok := repair.ToolName(c.Name, x.Tools.Names); ok {
			c.Tool = x.Tools.Lookup(mapped)
			nameEdit = &repair.Edit{Kind: repair.KindToolName, Path: "", Before: c.Name, After: mapped}
		}
	}
	if c.Tool == nil {
		c.Args = []byte(gjson.Parse(s.Args).String())
		names := x.Tools.Names
		more := ""
		if len(names) > 20 {
			names, more = names[:20], fmt.Sprintf(" and %d more", len(names)-20)
		}
		c.Errs = []validate.Error{{Keyword: "tool", Message: fmt.Sprintf("tool %q is not declared; the declared tools are: %s%s",
			wire.Clip(c.Name, 64), wire.Clip(strings.Join(names, ", "), 1000), more)}}
		return c
	}
	if s.Unread != "" {
		c.Args = []byte(gjson.Parse(s.Args).String())
		c.Edits = append(c.Edits, s.Edits...)
		c.Errs = []validate.Error{{Keyword: "syntax", Message: s.Unread}}
		return c
	}
	rules := x.rulesOf(c)
	if rules.Mode == policy.ModeOff {
		// The operator exempted this tool: its calls pass as sent.
		c.Args = []byte(gjson.Parse(s.Args).String())
		return c
	}
	schema, err := x.Schemas.Get(c.Tool.Params)
	if err != nil {
		schema = nil // the cache logs it once per schema
	}
	if mend && rules.Mode.Repairs() {
		if x.mended+len(c.RawArgs) > MaxMendBytes {
			mend = false
			if !x.overMend {
				x.overMend = true
				x.Log.WarnContext(x.Ctx, "tool calls checked, not mended: the request's calls are over the mending bound",
					"tool", c.Tool.Name, "call_id", c.ID, "bytes", len(c.RawArgs), "bound", MaxMendBytes)
			}
		} else {
			x.mended += len(c.RawArgs)
		}
	}
	res := repair.Arguments([]byte(c.RawArgs), schema, repair.Options{
		Budget:       x.Work,
		Quota:        x.quota(),
		Syntax:       mend && rules.Mode.Repairs(),
		SchemaGuided: mend && rules.Mode.Repairs() && rules.SchemaRepair,
		CutOff:       cutOff,
		Tool:         c.Tool.messageName(),
	})
	c.Args, c.Edits, c.Errs = res.Args, res.Edits, res.Errors
	switch {
	case schema == nil && c.Errs == nil:
		c.Unchecked = true
	case validate.Spent(c.Errs):
		// The calls before it spent the request's budget: passing it
		// unchecked would let a reply of costly calls carry any call
		// after them. It stays invalid, and nothing more is asked.
		x.Spent = true
		x.Log.WarnContext(x.Ctx, "tool call not checked: the request's validation budget is spent; it counts as invalid", "tool", c.Tool.Name, "call_id", c.ID)
	case validate.Unchecked(c.Errs):
		// Over the work budget: like a schema that does not compile, the
		// arguments must still be a JSON object.
		if gjson.ValidBytes(c.Args) && gjson.ParseBytes(c.Args).IsObject() {
			c.Errs, c.Unchecked = nil, true
			x.Log.WarnContext(x.Ctx, "tool call not checked: validating it would exceed the work budget", "tool", c.Tool.Name, "call_id", c.ID)
		} else {
			c.Errs = []validate.Error{{Keyword: "type", Message: "arguments must be a JSON object"}}
		}
	}
	if nameEdit != nil {
		c.Edits = append([]repair.Edit{*nameEdit}, c.Edits...)
	}
	if len(s.Edits) > 0 {
		c.Edits = append(s.Edits[:len(s.Edits):len(s.Edits)], c.Edits...)
	}
	return c
}

// CheckAll checks the calls of one reply (mending them) and records them.
// It stops with the context's error if the client goes away.
func (x *Exchange) CheckAll(ctx context.Context, sent []Sent, attempt int, cutOff bool) ([]*Call, error) {
	calls := make([]*Call, 0, len(sent))
	for _, s := range sent {
		if ctx != nil && ctx.Err() != nil {
			// The client left: no more work for it.
			return nil, ctx.Err()
		}
		calls = append(calls, x.Check(s, attempt, true, cutOff))
	}
	return calls, nil
}

// Repairs counts the edits made to the calls that reached the client.
func (x *Exchange) Repairs() int {
	n := 0
	for _, c := range x.Calls {
		if c.Valid() {
			n += len(c.Edits)
		}
	}
	return n
}

// Decide sets the outcome from what happened to the calls.
func (x *Exchange) Decide(failed bool) Outcome {
	switch {
	case failed:
		x.Outcome = OutcomeFailed
	case x.anyUnchecked():
		// Said before reasked and repaired, whose counts the other headers
		// carry: an operator must see that a call went through unchecked.
		x.Outcome = OutcomeUnchecked
	case x.Reasks > 0:
		x.Outcome = OutcomeReasked
	case x.Repairs() > 0:
		x.Outcome = OutcomeRepaired
	case len(x.Calls) > 0:
		x.Outcome = OutcomeValid
	default:
		x.Outcome = OutcomeNone
	}
	return x.Outcome
}

// anyUnchecked reports whether a call that reached the client was not
// checked against its schema.
func (x *Exchange) anyUnchecked() bool {
	for _, c := range x.Calls {
		if c.Valid() && c.Unchecked {
			return true
		}
	}
	return false
}

// OutputFormat returns the tool that stands for a reply's content under a
// JSON response format of the given type: schema for json_schema (any value
// when it has none), any object for json_object; nil for another type.
func OutputFormat(typ string, schema gjson.Result) *Tool {
	switch typ {
	case "json_schema":
		params := []byte(`{}`)
		if schema.IsObject() || schema.IsBool() {
			params = []byte(schema.Raw)
		}
		return &Tool{Name: OutputTool, Params: params}
	case "json_object":
		return &Tool{Name: OutputTool, Params: []byte(`{"type":"object"}`)}
	}
	return nil
}
