package repair

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/validate"
)

// MaxInput is the largest arguments field, in bytes, that is mended. Larger
// arguments are only validated: mending costs a few passes over the text, and
// a call that size is better asked again than patched.
const MaxInput = 1 << 20

// Options choose the steps of the ladder that run.
type Options struct {
	// Syntax enables ladder step 2. When false, arguments are only checked.
	Syntax bool
	// SchemaGuided enables ladder step 3 (it needs Syntax).
	SchemaGuided bool
	// Budget, if not nil, is the validation work the call may draw on,
	// shared with the other calls of its request (validate.Budget).
	Budget *validate.Budget
	// Quota, if not nil, is the JSON repair work the call may draw on,
	// shared with the other calls of its request (see Quota).
	Quota *Quota
	// CutOff says the model was stopped at its length limit
	// (finish_reason "length"): arguments that end early are then never
	// closed, since nothing says they were complete.
	CutOff bool
	// Tool names the tool in the hints added to the errors (see
	// KeywordUnknown); "" when there is no tool to name.
	Tool string
}

// Result is the outcome for one call's arguments.
type Result struct {
	// Args is the arguments exactly as received when Edits is empty, and a
	// compact JSON text when it is not. When Errors is not nil, Args is what
	// the errors describe: the arguments as received, or as the syntax step
	// left them when it could make them parse.
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
//
// When the arguments stay invalid and an object among them holds keys that
// its schema does not declare, the errors end with a hint per object that
// names them and what the schema declares (KeywordUnknown).
func Arguments(raw []byte, s *validate.Schema, opts Options) Result {
	r := arguments(raw, s, opts)
	if r.Errors == nil || s == nil || len(raw) > MaxInput {
		return r
	}
	if v, err := validate.Decode(r.Args); err == nil {
		r.Errors = append(r.Errors, unknownKeys(v, r.Errors, s, opts.Tool)...)
	}
	return r
}

func arguments(raw []byte, s *validate.Schema, opts Options) Result {
	if len(raw) > MaxInput {
		// Checked, not mended.
		opts.Syntax, opts.SchemaGuided = false, false
	}
	text, edits, ferr := field(raw, opts.Syntax)
	if ferr != nil {
		return Result{Args: raw, Errors: []validate.Error{*ferr}}
	}
	v, errs := check(text, s, opts.Budget)
	if errs == nil {
		if len(edits) == 0 {
			return Result{Args: text}
		}
		return Result{Args: compact(text), Edits: edits}
	}
	if !opts.Syntax {
		return Result{Args: text, Errors: errs}
	}

	// Text that decoded to a value other than null or an encoded string is
	// what the syntax step would decode again, unchanged: reuse the value and
	// its errors instead of decoding and validating it a second time.
	sedits, serrs := []Edit(nil), errs
	if v == nil || isEncoded(v) {
		var err error
		c := cut{quota: opts.Quota}
		if v, sedits, err = mend(text, &c); err != nil {
			return Result{Args: text, Edits: edits, Errors: errs}
		}
		if e := closable(v, &c, s, opts.CutOff); e != nil {
			return Result{Args: text, Edits: edits, Errors: []validate.Error{*e}}
		}
		edits = append(edits, sedits...)
		serrs = nil
	}
	if v == nil {
		// "" and null both say "no arguments": that is {} when the tool
		// takes none, and a re-ask otherwise.
		_, empty := check([]byte("{}"), s, opts.Budget)
		if empty == nil {
			return finish(map[string]any{}, append(edits, Edit{Kind: KindEmptyArguments, Before: clip(bytes.TrimSpace(text)), After: "{}"}), len("{}"))
		}
		// Say so, and what {} lacks: a parser's "EOF" tells the model
		// nothing it can act on.
		return Result{Args: text, Edits: edits, Errors: append([]validate.Error{{Keyword: "syntax", Message: "no JSON value was sent (empty or null)"}}, empty...)}
	}
	if serrs == nil {
		if serrs = checkValue(v, s, opts.Budget); serrs == nil {
			return finish(v, edits, len(text))
		}
	}
	if opts.SchemaGuided && s != nil {
		// v is kept, for what the syntax step mended, when guiding fails.
		if g, gedits, ok := guide(v, serrs, s, opts.Budget, len(sedits) > 0); ok {
			if len(edits) > 0 {
				gedits = append(edits, gedits...)
			}
			return finish(g, gedits, len(text))
		}
	}
	if _, isObject := v.(map[string]any); isObject && len(sedits) > 0 {
		if out, err := encodeSized(v, len(text)); err == nil {
			return Result{Args: out, Edits: edits, Errors: serrs}
		}
	}
	return Result{Args: text, Edits: edits, Errors: errs}
}

// Syntax mends the syntax of one call's function.arguments without a schema
// (ladder step 2 alone), for the calls in a request's history: it returns
// the text of a JSON object, and an error when the arguments cannot be made
// one without changing their meaning. Arguments that are already a JSON
// object text come back as received, with no edit.
func Syntax(raw []byte) ([]byte, []Edit, error) { return SyntaxWithin(raw, nil) }

// SyntaxWithin is Syntax, drawing the JSON repair work from q, the
// request's (see Quota).
func SyntaxWithin(raw []byte, q *Quota) ([]byte, []Edit, error) {
	if len(raw) > MaxInput {
		return nil, nil, fmt.Errorf("arguments are %d bytes, more than the %d that are mended", len(raw), MaxInput)
	}
	text, edits, ferr := field(raw, true)
	if ferr != nil {
		return nil, nil, errors.New(ferr.Message)
	}
	if gjson.ValidBytes(text) && gjson.ParseBytes(text).IsObject() {
		if len(edits) == 0 {
			return text, nil, nil
		}
		return compact(text), edits, nil
	}
	// History is mended for the provider's sake: the call was made long
	// ago, and closing what a cut-off call left open changes nothing the
	// tool saw, so no truncation rule applies here.
	v, sedits, err := mend(text, &cut{quota: q})
	if err != nil {
		return nil, nil, err
	}
	edits = append(edits, sedits...)
	if v == nil {
		return []byte("{}"), append(edits, Edit{Kind: KindEmptyArguments, Before: clip(bytes.TrimSpace(text)), After: "{}"}), nil
	}
	if errs := checkValue(v, nil, nil); errs != nil {
		return nil, nil, errors.New(validate.Join(errs))
	}
	out, err := encodeSized(v, len(text))
	if err != nil {
		return nil, nil, err
	}
	return out, edits, nil
}

// isEncoded reports whether a decoded value is a string that the syntax
// step would decode once more (see encoded).
func isEncoded(v any) bool {
	str, isString := v.(string)
	return isString && encoded(str)
}

// field extracts the arguments text from the raw function.arguments field.
// An object instead of a string is accepted (and recorded) only when
// mending is allowed.
func field(raw []byte, mending bool) ([]byte, []Edit, *validate.Error) {
	if len(raw) > 0 && raw[0] == '"' {
		// A string, as arguments are sent: checked and unescaped in one
		// pass, into a buffer of its own. jsontext refuses a string
		// gjson reads all the same (invalid UTF-8, white space around
		// it), which the reading below then decides.
		if text, err := jsontext.AppendUnquote(make([]byte, 0, len(raw)), raw); err == nil {
			return text, nil, nil
		}
	}
	return fieldRead(raw, mending)
}

// fieldRead is field read with gjson, for any raw value.
func fieldRead(raw []byte, mending bool) ([]byte, []Edit, *validate.Error) {
	if !gjson.ValidBytes(raw) {
		return nil, nil, &validate.Error{Keyword: "syntax", Message: "function.arguments is not valid JSON"}
	}
	f := gjson.ParseBytes(raw)
	switch {
	case f.Type == gjson.String:
		return []byte(f.Str), nil, nil
	case f.IsObject() && mending:
		return raw, []Edit{{Kind: KindObjectArguments, Before: clip(raw)}}, nil
	}
	return nil, nil, &validate.Error{
		Keyword: "type",
		Message: "function.arguments must be a string holding a JSON object, but got " + typeName(f),
	}
}

// anyObject stands for a schema that failed to compile: arguments must
// still be a JSON object.
var anyObject = func() *validate.Schema {
	s, err := validate.Compile([]byte(`{"type":"object"}`))
	if err != nil {
		panic("repair: compile the object schema: " + err.Error())
	}
	return s
}()

// check decodes and validates; without a schema it requires an object.
// check validates text against s. Valid arguments of a flat schema are
// proven so on their bytes, without decoding them, and come back with no
// value: only invalid ones are decoded.
func check(text []byte, s *validate.Schema, b *validate.Budget) (any, []validate.Error) {
	s = orObject(s)
	if s.ValidJSON(text, b) {
		return nil, nil
	}
	return s.ValidateJSONWithin(text, b)
}

func checkValue(v any, s *validate.Schema, b *validate.Budget) []validate.Error {
	return orObject(s).ValidateWithin(v, b)
}

func orObject(s *validate.Schema) *validate.Schema {
	if s == nil {
		return anyObject
	}
	return s
}

// finish is the result of arguments mended into v, from a text of about
// size bytes.
func finish(v any, edits []Edit, size int) Result {
	out, err := encodeSized(v, size)
	if err != nil {
		return Result{Edits: edits, Errors: []validate.Error{{Keyword: "syntax", Message: err.Error()}}}
	}
	return Result{Args: out, Edits: edits}
}

// compact removes insignificant space from valid JSON without reordering
// keys, which re-encoding a decoded map would do.
func compact(text []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, text); err != nil {
		return text
	}
	return buf.Bytes()
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
