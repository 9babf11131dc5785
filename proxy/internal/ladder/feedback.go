package ladder

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validate"
)

// What the model and the client are told about invalid calls.

// ReaskInstruction closes every re-ask: the model is told what to send back.
const ReaskInstruction = "Some of your tool calls were invalid and were not executed; " +
	"the tool results above give each error with its JSON pointer path. " +
	"Send corrected tool calls for the invalid calls only, with arguments that match each tool's parameters schema. " +
	"The valid calls are kept: do not send them again."

// MaxFeedbackBytes bounds what one re-ask tells the model about its calls'
// errors (each call's errors are bounded by validate.MaxErrors): past it,
// the remaining invalid calls are only said to be invalid.
const MaxFeedbackBytes = 64 << 10

// Detail is one validation error as the client and the model see it:
// where (a JSON pointer into the arguments) and what was expected and found.
type Detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Details renders a call's errors. A missing property is reported at its
// own path (/selector), not at the object that lacks it, and each error
// names the value found where there is one.
func Details(c *Call) []Detail {
	var out []Detail
	for _, e := range c.Errs {
		switch {
		case e.Keyword == "required" && strings.HasPrefix(e.Message, "missing properties: "):
			for _, name := range quotedNames(strings.TrimPrefix(e.Message, "missing properties: ")) {
				out = append(out, Detail{Path: validate.PointerChild(e.Path, name), Message: "missing required property"})
			}
		case e.Keyword == "additionalProperties" && strings.HasPrefix(e.Message, "additionalProperties "):
			names := strings.TrimSuffix(strings.TrimPrefix(e.Message, "additionalProperties "), " not allowed")
			for _, name := range quotedNames(names) {
				out = append(out, Detail{Path: validate.PointerChild(e.Path, name), Message: "property not allowed by the schema (additionalProperties is false)"})
			}
		default:
			msg := e.Message
			if e.Keyword != "syntax" && e.Keyword != "tool" && e.Keyword != repair.KeywordUnknown {
				if v := valueAt(c.Args, e.Path); v != "" {
					msg += "; found " + wire.Clip(v, 120)
				}
			}
			out = append(out, Detail{Path: PointerOrRoot(e.Path), Message: msg})
		}
	}
	return out
}

// PointerOrRoot is a JSON pointer as the client reads it: "/" for the root.
func PointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// quotedNames splits the library's "'a', 'b'" lists.
func quotedNames(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ", ") {
		out = append(out, strings.Trim(part, "'"))
	}
	return out
}

// valueAt returns the raw JSON at a JSON pointer inside args, "" if none.
func valueAt(args []byte, pointer string) string {
	if pointer == "" {
		if gjson.ValidBytes(args) {
			return string(args)
		}
		return ""
	}
	var path []string
	for _, tok := range validate.PointerTokens(pointer) {
		path = append(path, gjson.Escape(tok))
	}
	return gjson.GetBytes(args, strings.Join(path, ".")).Raw
}

// Describe is a call's errors on one line.
func Describe(c *Call) string {
	var b strings.Builder
	for i, d := range Details(c) {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Path + ": " + d.Message)
	}
	return b.String()
}

// Feedback is what the model is told about one of its calls, its errors in
// at most room bytes.
func Feedback(c *Call, room int) string {
	if c.Valid() {
		return "This call is valid and has been kept; do not send it again."
	}
	if room <= 0 {
		return fmt.Sprintf("Error: this call to %q was not executed because its arguments are invalid (its errors are left out: the other calls' errors are long). Call the tool again with arguments that satisfy its parameters schema.", c.Name)
	}
	return listed(fmt.Sprintf("Error: this call to %q was not executed because its arguments are invalid:\n", c.Name), c,
		"Call the tool again with arguments that satisfy its parameters schema.")
}

// OutputFeedback is what the model is told about content that is not valid
// for the response format its request declared.
func OutputFeedback(c *Call) string {
	return listed("Your reply is not valid for the requested response format:\n", c,
		"Reply again with only the JSON value, and make it match the schema.")
}

// listed is head, a line per error of c (its path and message), and tail.
func listed(head string, c *Call, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, d := range Details(c) {
		fmt.Fprintf(&b, "- %s: %s\n", d.Path, d.Message)
	}
	b.WriteString(tail)
	return b.String()
}

// Reminder is what the model is told when its last answer in a turn had no
// calls: the errors of the calls still invalid, then ReaskInstruction.
func Reminder(t *Turn) string {
	var b strings.Builder
	for _, c := range t.Calls {
		if !c.Valid() {
			b.WriteString(Feedback(c, MaxFeedbackBytes-b.Len()))
			b.WriteString("\n")
		}
	}
	return b.String() + ReaskInstruction
}

// CallDetail is one invalid call in the failure body.
type CallDetail struct {
	Choice int      `json:"choice"`
	Tool   string   `json:"tool"`
	CallID string   `json:"call_id"`
	Errors []Detail `json:"errors"`
}

// FailureError is the error the client gets when the turns' calls stay
// invalid. redact cleans the reason re-asking stopped, which may quote an
// upstream's error body.
func (x *Exchange) FailureError(turns []*Turn, redact func(string) string) *wire.Error {
	// The message names the first few calls, details the first
	// maxDetailedCalls: a reply of thousands of invalid calls must not make
	// a failure body of megabytes.
	const named, maxDetailedCalls = 5, 64
	var details []CallDetail
	var names []string
	invalid := 0
	for _, t := range turns {
		for _, c := range t.Calls {
			if c.Valid() {
				continue
			}
			invalid++
			output := c.Tool != nil && c.Tool.Name == OutputTool
			if len(details) < maxDetailedCalls {
				d := CallDetail{Choice: t.Index, Tool: wire.Clip(c.Name, 128), CallID: wire.Clip(c.ID, 128), Errors: Details(c)}
				if output {
					d.Tool = "response_format"
				}
				details = append(details, d)
			}
			switch {
			case len(names) >= named:
			case output:
				names = append(names, fmt.Sprintf("choice %d: %s", t.Index, wire.Clip(Describe(c), 500)))
			default:
				names = append(names, fmt.Sprintf("%s (%s): %s", wire.Clip(c.Name, 64), wire.Clip(c.ID, 64), wire.Clip(Describe(c), 500)))
			}
		}
	}
	if invalid > named {
		names = append(names, fmt.Sprintf("and %d more", invalid-named))
	}
	msg := fmt.Sprintf("toolguard: %d tool call(s) could not be made valid after %d re-ask(s): %s",
		invalid, x.Reasks, strings.Join(names, "; "))
	typ, code := "invalid_tool_call", "tool_call_invalid"
	if outputOnly(turns) {
		typ, code = "invalid_output", "output_invalid"
		msg = fmt.Sprintf("toolguard: the reply's content could not be made valid for the requested response format after %d re-ask(s): %s",
			x.Reasks, strings.Join(names, "; "))
	}
	if invalid > len(details) {
		msg += fmt.Sprintf(" (details lists the first %d)", len(details))
	}
	if x.GaveUp != nil {
		msg += " (re-asking stopped: " + redact(x.GaveUp.Error()) + ")"
	}
	return &wire.Error{Status: 400, Type: typ, Code: code, Msg: msg, Details: details,
		Header: map[string][]string{"X-Should-Retry": {"false"}}}
}

// outputOnly reports whether every invalid call of the turns stands for
// content (OutputTool).
func outputOnly(turns []*Turn) bool {
	any := false
	for _, t := range turns {
		for _, c := range t.Calls {
			if c.Valid() {
				continue
			}
			if c.Tool == nil || c.Tool.Name != OutputTool {
				return false
			}
			any = true
		}
	}
	return any
}
