package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// resourceURL is the name a tool's schema is compiled under. It is not a
// location: nothing is ever loaded from it.
const resourceURL = "mem:///tool-parameters.json"

// ErrURLRefused is the cause of a compile error when a schema names a
// resource outside itself.
var ErrURLRefused = errors.New("schema references are limited to the schema itself")

// Schema is a compiled tool schema. It is safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	raw      []byte
	doc      any
	plan     *plan       // for the budget walk; nil when it cannot be made
	fast     *fastSchema // the fast path (see fast.go); nil when there is none
	explains bool        // the fast path's schema says errors (see explain.go)
	nodes    int         // objects and arrays (see MaxSchemaNodes)
	expanded int         // subschemas with references expanded (see MaxExpandedNodes)
	weight   int64       // estimated memory held (see Weight)
}

// Weight estimates the memory the compiled schema holds, from its size,
// subschemas and values (see MaxSchemaWeight).
func (s *Schema) Weight() int64 { return s.weight }

// Nodes is the number of objects and arrays in the schema (see
// MaxSchemaNodes).
func (s *Schema) Nodes() int { return s.nodes }

// Expanded is the schema's expanded size (see MaxExpandedNodes); 0 when its
// references cannot be followed, and its calls are then not checked.
func (s *Schema) Expanded() int { return s.expanded }

// Raw returns the schema's bytes as the client sent them.
func (s *Schema) Raw() []byte { return s.raw }

// Doc returns the schema decoded (objects as map[string]any, numbers as
// json.Number), for callers that walk it, such as schema-guided repair. It
// must not be modified.
func (s *Schema) Doc() any { return s.doc }

// Compile compiles one tool schema. The raw bytes must be a JSON object or a
// boolean; a missing schema should be passed as {"type":"object"}.
func Compile(raw []byte) (*Schema, error) {
	if err := checkLimits(raw); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	doc, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	if e := checkNumbers(doc, ""); e != nil {
		return nil, fmt.Errorf("compile schema: at %s: %w", e.Path, ErrSchemaTooLarge{e.Message})
	}
	nodes, w, err := checkSize(doc, len(raw))
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	patterns, err := compilePatterns(doc)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	// A schema whose references the budget walk cannot follow has no plan:
	// its calls are reported unchecked (see cost).
	p, _ := makePlan(doc, patterns)
	expanded := 0
	if p != nil {
		if expanded = expandedSize(p, MaxExpandedNodes); expanded > MaxExpandedNodes {
			return nil, fmt.Errorf("compile schema: %w", ErrSchemaTooLarge{fmt.Sprintf(
				"more than %d subschemas with its references expanded", MaxExpandedNodes)})
		}
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("load %q: %w", url, ErrURLRefused)
	}
	if err := c.AddResource(resourceURL, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	compiled, err := compile(c)
	if err != nil {
		return nil, err
	}
	var fast *fastSchema
	if p != nil { // the fast path counts the steps of the plan's walk
		fast = compileFast(doc)
	}
	explains := fast != nil && fast.link(compiled)
	return &Schema{compiled: compiled, raw: raw, doc: doc, plan: p, fast: fast, explains: explains, nodes: nodes, expanded: expanded, weight: w}, nil
}

// compile shields the caller from panics in the compiler: the schema comes
// from a client, and a crafted one must cost that client its validation, not
// the process.
func compile(c *jsonschema.Compiler) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("compile schema: compiler panic: %v", r)
		}
	}()
	s, err = c.Compile(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return s, nil
}

// Decode parses a JSON document as Validate expects it (numbers as
// json.Number). It rejects trailing data.
func Decode(data []byte) (any, error) { return decode(data) }

// Validate checks decoded arguments (see Decode) against the schema. It
// returns nil when they are valid.
func (s *Schema) Validate(v any) []Error { return s.ValidateWithin(v, nil) }

// Budget is the validation work, in the steps of MaxSteps, that a group of
// validations (one request's: RequestSteps) may still do together. It is not safe for
// concurrent use.
type Budget struct{ left int }

// NewBudget returns a budget of steps.
func NewBudget(steps int) *Budget { return &Budget{left: steps} }

// Left is what remains of the budget.
func (b *Budget) Left() int { return b.left }

// ValidateWithin is Validate drawing on b as well as on MaxSteps: arguments
// whose check would cost more than what is left of either are not checked
// (see Unchecked). A nil b is no shared budget.
func (s *Schema) ValidateWithin(v any, b *Budget) []Error {
	max := MaxSteps
	if b != nil {
		max = min(max, b.left)
	}
	visits, ok := s.fastValid(v, max*FastVisitsPerStep)
	spent := fastSteps(visits)
	if b != nil {
		b.left -= min(spent, b.left)
	}
	if ok {
		return nil
	}
	if b != nil {
		// What the fast path spent before it gave up is work done too.
		max = min(max, b.left)
	}
	return s.validateFull(v, b, max)
}

// fastSteps is what visits of the fast path cost, in steps.
func fastSteps(visits int) int {
	return (visits + FastVisitsPerStep - 1) / FastVisitsPerStep
}

// fastValid runs the fast path: ok means v is valid. visits is the fast
// path's count of the budget walk's visits, at most max: past that, or
// when it cannot prove validity, ok is false and the validator must run.
func (s *Schema) fastValid(v any, max int) (visits int, ok bool) {
	m, isObject := v.(map[string]any)
	if s.fast == nil || !isObject {
		return 0, false
	}
	r := fastRun{max: max}
	ok = s.fast.valid(m, &r)
	return min(r.steps, max), ok
}

// validateFull checks v with the validator, after the checks of numbers and
// of the work budget.
func (s *Schema) validateFull(v any, b *Budget, max int) []Error {
	if _, ok := v.(map[string]any); !ok {
		return []Error{{
			Keyword: "type",
			Message: "expected object, but got " + jsonType(v),
		}}
	}
	if e := checkNumbers(v, ""); e != nil {
		return []Error{*e}
	}
	steps, err := s.cost(v, max)
	if b != nil {
		b.left -= min(steps, b.left)
	}
	if err != nil {
		if b != nil && max < MaxSteps {
			// The calls before this one spent the request's budget: what
			// is left is not this call's bound, and its check is not one
			// to skip.
			return []Error{{Keyword: KeywordSpent, Message: fmt.Sprintf(
				"not checked: the request's validation work budget is spent (%d steps were left, this check needs more), so the arguments cannot be accepted", max)}}
		}
		return []Error{{Keyword: KeywordBudget, Message: fmt.Sprintf(
			"validating these arguments against this schema would take more than the %d steps left of the work budget, so they were not checked", max)}}
	}
	if errs, ok := s.explain(v); ok {
		return errs
	}
	return s.validator(v)
}

// validator returns the validator's errors for v, flattened.
func (s *Schema) validator(v any) []Error {
	err := validateValue(s.compiled, v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Error{{Keyword: "schema", Message: clipRunes(err.Error(), maxMessage)}}
	}
	return s.flatten(ve)
}

// KeywordBudget is the keyword of the one error Validate returns for
// arguments it did not check because checking them would cost more than
// MaxSteps (see Unchecked).
const KeywordBudget = "budget"

// KeywordSpent is the keyword of the one error ValidateWithin returns for
// arguments it did not check because the shared budget had less left than
// MaxSteps and checking them would cost more: calls before them spent it.
// Unlike KeywordBudget, it says nothing of these arguments, and a caller
// that must fail closed treats them as invalid (see Spent).
const KeywordSpent = "budget_spent"

// Spent reports whether errs says the arguments were not checked because
// the shared budget was spent.
func Spent(errs []Error) bool {
	return len(errs) == 1 && errs[0].Keyword == KeywordSpent
}

// Unchecked reports whether errs says the arguments were not checked (over
// the work budget), rather than that they are invalid.
func Unchecked(errs []Error) bool {
	return len(errs) == 1 && errs[0].Keyword == KeywordBudget
}

// ValidateJSON decodes the arguments and validates them. A syntax error is
// reported as a single error at the root.
func (s *Schema) ValidateJSON(data []byte) (any, []Error) { return s.ValidateJSONWithin(data, nil) }

// ValidateJSONWithin is ValidateJSON drawing on b (see ValidateWithin).
func (s *Schema) ValidateJSONWithin(data []byte, b *Budget) (any, []Error) {
	v, err := decode(data)
	if err != nil {
		return nil, []Error{{Keyword: "syntax", Message: "arguments are not valid JSON: " + clipRunes(err.Error(), maxMessage)}}
	}
	return v, s.ValidateWithin(v, b)
}

func validateValue(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validator panic: %v", r)
		}
	}()
	return s.Validate(v)
}

// MaxErrors bounds the errors kept for one call, and maxMessage the length
// of each message: errors go back to the model and into the client's error
// body, and an enum of thousands of values failing for thousands of items
// must not make megabytes of either.
const (
	MaxErrors  = 16
	maxMessage = 300
)

// flatten keeps the leaves of the library's error tree: the keywords that
// actually failed, not the schemas that contain them. It keeps at most
// MaxErrors of them, and says how many more there were in the last.
func (s *Schema) flatten(ve *jsonschema.ValidationError) []Error {
	var out []Error
	more := 0
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if len(out) == MaxErrors {
				more++
				return
			}
			ferr := Error{
				Path:       unescape(e.InstanceLocation),
				Keyword:    lastSegment(e.KeywordLocation),
				SchemaPath: unescape(fragment(e.AbsoluteKeywordLocation)),
				Message:    e.Message,
			}
			ferr.Message = s.message(ferr)
			out = append(out, ferr)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if more > 0 {
		out[len(out)-1].Message += fmt.Sprintf(" (and %d more errors not listed)", more)
	}
	return out
}

// message bounds an error's message: an enum is described by its size and
// a few of its values, never quoted whole, and any message is clipped.
func (s *Schema) message(e Error) string {
	if e.Keyword == "enum" {
		if vals, ok := s.at(e.SchemaPath).([]any); ok && len(vals) > 3 {
			var b strings.Builder
			for i, v := range vals[:3] {
				if i > 0 {
					b.WriteString(", ")
				}
				j, _ := json.Marshal(v)
				b.WriteString(clipRunes(string(j), 40))
			}
			return fmt.Sprintf("value must be one of the %d values the schema lists, such as %s", len(vals), b.String())
		}
	}
	return clipRunes(e.Message, maxMessage)
}

// at returns the part of the schema at a JSON pointer, or nil.
func (s *Schema) at(ptr string) any {
	v, _ := walkPointer(s.doc, PointerTokens(ptr))
	return v
}

// walkPointer follows a JSON pointer's tokens into a decoded document; ok
// is false when one names nothing.
func walkPointer(cur any, tokens []string) (v any, ok bool) {
	for _, tok := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// unescape turns the library's locations, JSON pointers whose tokens are
// also URL-escaped ("/a%C3%B1o" for "año"), into plain JSON pointers.
func unescape(ptr string) string {
	if !strings.Contains(ptr, "%") {
		return ptr
	}
	u, err := url.PathUnescape(ptr)
	if err != nil {
		return ptr
	}
	return u
}

func lastSegment(ptr string) string {
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		return ptr[i+1:]
	}
	return ptr
}

// fragment returns the JSON pointer part of an absolute keyword location that
// points into the tool's own schema document, and "" for any other document.
func fragment(loc string) string {
	base, frag, ok := strings.Cut(loc, "#")
	if !ok || base != resourceURL {
		return ""
	}
	return frag
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
