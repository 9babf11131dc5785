package validate

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Nearly every real tool schema is a flat object: typed properties, some
// enums, a required list (98% of the BFCL corpus). The validator spends
// microseconds and dozens of allocations on one, mostly building the error
// tree it may need. The fast path checks such a schema directly, on the
// decoded arguments, without allocating.
//
// It is built at compile time only for a schema made of keywords whose
// semantics, as the validator implements them, it reproduces exactly; any
// other keyword and there is no fast path. It only ever answers "valid":
// when it cannot prove validity (a failed keyword, a value of an unexpected
// kind, an enum of objects), the validator runs as before and reports the
// errors, so what Validate returns never depends on it. It counts the steps
// of the budget walk as it goes (see plan), so a call it answers costs the
// shared Budget what the walk would have charged, and one over the budget
// is left to the validator to report unchecked.

// fastSchema is one subschema of a schema the fast path understands.
type fastSchema struct {
	always, never bool // the boolean schemas true and false
	types         typeSet
	enum          []any
	hasEnum       bool
	constant      any
	hasConst      bool
	props         map[string]*fastSchema
	required      []string
	additional    *fastSchema // nil: any other property is allowed unchecked
	items         *fastSchema // nil: items are not checked
	// -1 where absent
	minLength, maxLength, minItems, maxItems, minProps, maxProps int
	minimum, maximum, exclMin, exclMax                           *decimal
	compare                                                      int // steps, as in plan.compare

	// For explain (see explain.go): the validator's compiled subschema,
	// the properties' names in order, and the messages of enum and const,
	// where explain may report them.
	node                          *jsonschema.Schema
	at                            string // the schema path of node, where inDoc
	inDoc                         bool
	names                         []string
	enumError, constError         string
	enumExplained, constExplained bool
}

// typeSet is the "type" keyword as bits; 0 allows every type.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeNames = map[string]typeSet{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// annotations are keywords the validator does not assert (it is not asked to
// extract annotations).
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// draftVersion is the draft a $schema URL names, as the validator reads it
// (findDraft in the library), or 0 for one it does not know.
func draftVersion(url string) int {
	if rest, ok := strings.CutPrefix(url, "http://"); ok {
		url = "https://" + rest
	}
	if strings.HasSuffix(url, "#") || strings.HasSuffix(url, "#/") {
		url = url[:strings.IndexByte(url, '#')]
	}
	switch url {
	case "https://json-schema.org/schema", "https://json-schema.org/draft/2020-12/schema":
		return 2020
	case "https://json-schema.org/draft/2019-09/schema":
		return 2019
	case "https://json-schema.org/draft-07/schema":
		return 7
	case "https://json-schema.org/draft-06/schema":
		return 6
	case "https://json-schema.org/draft-04/schema":
		return 4
	}
	return 0
}

// formatIsAnnotation reports whether the validator takes format as an
// annotation for the schema document doc, and whether it knows: it asserts
// format unless the schema declares a draft of 2019-09 or later, whose
// meta-schema makes it an annotation. Without $schema it reads the schema
// as 2020-12 but with every vocabulary, format assertion included. known
// is false for a $schema it does not recognise.
func formatIsAnnotation(doc any) (annotation, known bool) {
	m, ok := doc.(map[string]any)
	if !ok {
		return false, true
	}
	u, present := m["$schema"]
	if !present {
		return false, true
	}
	s, _ := u.(string)
	draft := draftVersion(s)
	if draft == 0 {
		return false, false
	}
	return draft >= 2019, true
}

// compileFast returns the fast path of a schema document, or nil when the
// schema holds anything it does not implement exactly.
func compileFast(doc any) *fastSchema {
	formatAnnotation, known := formatIsAnnotation(doc)
	if !known {
		return nil
	}
	f, ok := fastFrom(doc, formatAnnotation, true)
	if !ok {
		return nil
	}
	return f
}

func fastFrom(sch any, formatAnnotation, root bool) (*fastSchema, bool) {
	switch sch := sch.(type) {
	case bool:
		return &fastSchema{always: sch, never: !sch}, true
	case map[string]any:
		f := &fastSchema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
		for k, v := range sch {
			if !f.set(k, v, formatAnnotation, root) {
				return nil, false
			}
		}
		return f, true
	}
	return nil, false
}

// set reads one keyword into f; false when the fast path does not
// implement it, or not with that value.
func (f *fastSchema) set(k string, v any, formatAnnotation, root bool) bool {
	var ok bool
	switch k {
	case "$schema":
		return root // read by compileFast
	case "format":
		return formatAnnotation
	case "type":
		f.types, ok = readTypes(v)
	case "enum":
		f.enum, ok = v.([]any)
		f.hasEnum = true
		f.compare += compareCost(v)
	case "const":
		f.constant, f.hasConst, ok = v, true, true
		f.compare += compareCost(v)
	case "required":
		f.required, ok = readStrings(v)
	case "properties":
		var props map[string]any
		if props, ok = v.(map[string]any); ok {
			f.props = make(map[string]*fastSchema, len(props))
			for name, sub := range props {
				if f.props[name], ok = fastFrom(sub, formatAnnotation, false); !ok {
					return false
				}
			}
		}
	case "additionalProperties":
		f.additional, ok = fastFrom(v, formatAnnotation, false)
	case "items":
		f.items, ok = fastFrom(v, formatAnnotation, false) // an array (tuple) is not read
	case "minLength":
		f.minLength, ok = readCount(v)
	case "maxLength":
		f.maxLength, ok = readCount(v)
	case "minItems":
		f.minItems, ok = readCount(v)
	case "maxItems":
		f.maxItems, ok = readCount(v)
	case "minProperties":
		f.minProps, ok = readCount(v)
	case "maxProperties":
		f.maxProps, ok = readCount(v)
	case "minimum":
		f.minimum, ok = readBound(v)
		f.compare += numberKeywordSteps
	case "maximum":
		f.maximum, ok = readBound(v)
		f.compare += numberKeywordSteps
	case "exclusiveMinimum":
		f.exclMin, ok = readBound(v) // draft-04's boolean form is not read
		f.compare += numberKeywordSteps
	case "exclusiveMaximum":
		f.exclMax, ok = readBound(v)
		f.compare += numberKeywordSteps
	case "uniqueItems":
		return v == false
	default:
		return annotations[k]
	}
	return ok
}

func readTypes(v any) (typeSet, bool) {
	var names []any
	switch v := v.(type) {
	case string:
		names = []any{v}
	case []any:
		names = v
	default:
		return 0, false
	}
	var t typeSet
	for _, n := range names {
		s, _ := n.(string)
		bit, ok := typeNames[s]
		if !ok {
			return 0, false
		}
		t |= bit
	}
	// An empty list is read by the validator as no type keyword at all.
	return t, true
}

func readStrings(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// readCount reads minLength and the like as the validator does: the number
// as a float64, truncated to an int.
func readCount(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

func readBound(v any) (*decimal, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	d, ok := parseDecimal(string(n))
	return &d, ok
}

// fastRun is one run of the fast path: the steps counted so far and the most
// it may count.
type fastRun struct{ steps, max int }

// valid reports whether v is valid against f; false means "not proven", not
// "invalid". It counts the steps the budget walk would count for v, and
// gives up past the maximum.
func (f *fastSchema) valid(v any, r *fastRun) bool {
	r.steps += 1 + f.compare
	switch {
	case r.steps > r.max || f.never:
		return false
	case f.always:
		return numbersOK(v)
	case f.hasConst && !scalarEqual(v, f.constant):
		return false
	case f.hasEnum && !f.inEnum(v):
		return false
	}
	switch v := v.(type) {
	case nil:
		return f.allows(typeNull)
	case bool:
		return f.allows(typeBoolean)
	case string:
		if !f.allows(typeString) {
			return false
		}
		if f.minLength >= 0 || f.maxLength >= 0 {
			n := utf8.RuneCountInString(v)
			return (f.minLength < 0 || n >= f.minLength) && (f.maxLength < 0 || n <= f.maxLength)
		}
		return true
	case json.Number:
		return f.number(v)
	case []any:
		return f.array(v, r)
	case map[string]any:
		return f.object(v, r)
	}
	return false
}

func (f *fastSchema) allows(t typeSet) bool { return f.types == 0 || f.types&t != 0 }

func (f *fastSchema) number(n json.Number) bool {
	if badNumber(string(n)) != "" {
		return false
	}
	d, ok := parseDecimal(string(n))
	if !ok {
		return false
	}
	if !f.allows(typeNumber) && !(f.types&typeInteger != 0 && d.isInt()) {
		return false
	}
	return (f.minimum == nil || d.cmp(*f.minimum) >= 0) &&
		(f.maximum == nil || d.cmp(*f.maximum) <= 0) &&
		(f.exclMin == nil || d.cmp(*f.exclMin) > 0) &&
		(f.exclMax == nil || d.cmp(*f.exclMax) < 0)
}

func (f *fastSchema) array(v []any, r *fastRun) bool {
	if !f.allows(typeArray) ||
		(f.minItems >= 0 && len(v) < f.minItems) || (f.maxItems >= 0 && len(v) > f.maxItems) {
		return false
	}
	for _, item := range v {
		if f.items == nil {
			if !numbersOK(item) {
				return false
			}
		} else if !f.items.valid(item, r) {
			return false
		}
	}
	return true
}

func (f *fastSchema) object(v map[string]any, r *fastRun) bool {
	if !f.allows(typeObject) ||
		(f.minProps >= 0 && len(v) < f.minProps) || (f.maxProps >= 0 && len(v) > f.maxProps) {
		return false
	}
	for _, name := range f.required {
		if _, ok := v[name]; !ok {
			return false
		}
	}
	for k, val := range v {
		sub, ok := f.props[k]
		if !ok {
			sub = f.additional
		}
		if sub == nil {
			if !numbersOK(val) {
				return false
			}
		} else if !sub.valid(val, r) {
			return false
		}
	}
	return true
}

// inEnum reports whether v is one of the enum's values. Objects and arrays
// are not compared: an enum that holds them is left to the validator.
func (f *fastSchema) inEnum(v any) bool {
	for _, e := range f.enum {
		if scalarEqual(v, e) {
			return true
		}
	}
	return false
}

// scalarEqual is the validator's equality for values other than objects and
// arrays (for which it reports false): numbers are equal by value, 1.0 and
// 1 included.
func scalarEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		da, okA := parseDecimal(string(a))
		db, okB := parseDecimal(string(bn))
		return okA && okB && da.cmp(db) == 0
	}
	return false
}

// numbersOK is checkNumbers for a value the fast path does not otherwise
// look into: true when every number in it is one the validator takes, and
// it holds only the types Decode makes.
func numbersOK(v any) bool {
	switch v := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		return badNumber(string(v)) == ""
	case []any:
		for _, e := range v {
			if !numbersOK(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range v {
			if !numbersOK(e) {
				return false
			}
		}
		return true
	}
	return false
}
