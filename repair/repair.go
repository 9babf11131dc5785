package repair

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/validate"
)

// Kind names one kind of edit. The names are stable: they are metric labels
// and log fields.
type Kind string

// The kinds of edit.
const (
	// Syntax (ladder step 2).
	KindObjectArguments Kind = "object-arguments" // arguments sent as a JSON object, not a string
	KindEmptyArguments  Kind = "empty-arguments"  // "" where the schema accepts {}
)

// Edit is one change made to a call.
type Edit struct {
	Kind Kind `json:"kind"`
	// Path is the JSON pointer, inside the arguments, of the value changed;
	// "" is the arguments themselves.
	Path string `json:"path"`
	// Before and After are short JSON renderings of the value before and
	// after the edit.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// Options choose the steps of the ladder that run.
type Options struct {
	// Syntax enables ladder step 2. When false, arguments are only checked.
	Syntax bool
	// SchemaGuided enables ladder step 3 (it needs Syntax).
	SchemaGuided bool
}

// Result is the outcome for one call's arguments.
type Result struct {
	// Args is the arguments as a compact JSON object text when Edits is not
	// empty, and the arguments exactly as received when it is.
	Args []byte
	// Edits lists what was changed, in order.
	Edits []Edit
	// Errors is nil when Args validates; otherwise why it does not.
	Errors []validate.Error
}

// Valid reports whether the result can be forwarded.
func (r Result) Valid() bool { return r.Errors == nil }

// Arguments runs the ladder on one call's function.arguments. raw is the raw
// JSON of that field as the model sent it (normally a JSON string holding the
// object). s may be nil when the tool's schema could not be compiled: then the
// arguments must only be a JSON object.
func Arguments(raw []byte, s *validate.Schema, opts Options) Result {
	field := gjson.ParseBytes(raw)
	var text []byte
	var edits []Edit
	switch {
	case field.Type == gjson.String:
		text = []byte(field.Str)
	case field.IsObject() && opts.Syntax:
		text = raw
		edits = append(edits, Edit{Kind: KindObjectArguments, Before: clip(raw)})
	default:
		return Result{Args: raw, Errors: []validate.Error{{
			Keyword: "type",
			Message: "function.arguments must be a string holding a JSON object, but got " + typeName(field),
		}}}
	}

	if opts.Syntax && len(bytes.TrimSpace(text)) == 0 {
		if v, errs := check([]byte("{}"), s); errs == nil {
			edits = append(edits, Edit{Kind: KindEmptyArguments, Before: `""`, After: "{}"})
			return finish(v, edits)
		}
	}
	v, errs := check(text, s)
	if errs == nil {
		if len(edits) == 0 {
			return Result{Args: text}
		}
		return finish(v, edits)
	}
	return Result{Args: text, Edits: edits, Errors: errs}
}

// check decodes and validates; without a schema it requires an object.
func check(text []byte, s *validate.Schema) (any, []validate.Error) {
	if s != nil {
		return s.ValidateJSON(text)
	}
	v, err := validate.Decode(text)
	if err != nil {
		return nil, []validate.Error{{Keyword: "syntax", Message: "arguments are not valid JSON: " + err.Error()}}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, []validate.Error{{Keyword: "type", Message: "expected object"}}
	}
	return v, nil
}

func finish(v any, edits []Edit) Result {
	out, err := json.Marshal(v)
	if err != nil {
		return Result{Edits: edits, Errors: []validate.Error{{Keyword: "syntax", Message: err.Error()}}}
	}
	return Result{Args: out, Edits: edits}
}

func typeName(r gjson.Result) string {
	switch {
	case r.IsObject():
		return "object"
	case r.IsArray():
		return "array"
	case r.Type == gjson.Null:
		if !r.Exists() {
			return "nothing"
		}
		return "null"
	case r.Type == gjson.Number:
		return "number"
	case r.Type == gjson.True, r.Type == gjson.False:
		return "boolean"
	}
	return "string"
}

const maxClip = 200

// clip bounds what an edit records of a value.
func clip(b []byte) string {
	if len(b) <= maxClip {
		return string(b)
	}
	return string(b[:maxClip]) + "..."
}
