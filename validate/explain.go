package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Arguments the fast path cannot prove valid are, nearly always, invalid
// for a reason the model is told and the repair is guided by: a required
// property missing, a key not declared, a value of the wrong type or not
// in an enum. The validator reports those at a cost of about twenty times
// the fast path's (its error tree, allocated whole, then flattened). So for
// a schema the fast path reads, the errors of the keywords below are made
// here, in the validator's words: the same path, keyword, schema path and
// message for each, from the validator's own compiled schema (its types,
// enum, required list and locations). Any other failure (a bound, a const
// of an object, an enum of arrays, a false schema), and the validator runs
// as before: explain only answers what it can say exactly.
//
// The validator visits an object's properties in map order, so which of
// them it reports first, and the order of the names in an
// "additionalProperties" message, vary from run to run; explain reports
// them in the order of their names. FuzzFastPath checks every answer
// against the validator's errors, that order aside.

// link attaches the validator's compiled schema c to f and to its
// subschemas; false when their shapes differ, and explain is then not used.
func (f *fastSchema) link(c *jsonschema.Schema) bool {
	if c == nil {
		return false
	}
	f.node = c
	if base, frag, ok := strings.Cut(c.Location, "#"); ok && base == resourceURL {
		f.at, f.inDoc = unescape(frag), true
	}
	if f.always || f.never {
		return true
	}
	if f.hasEnum && len(c.Enum) > 0 {
		f.enumError, f.enumExplained = enumError(c.Enum)
	}
	if f.hasConst && len(c.Constant) == 1 { // draft-04 has no const
		switch c.Constant[0].(type) {
		case map[string]any, []any:
		default:
			f.constError, f.constExplained = fmt.Sprintf("value must be %#v", c.Constant[0]), true
		}
	}
	for name, sub := range f.props {
		if !sub.link(c.Properties[name]) {
			return false
		}
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	if f.additional != nil {
		switch a := c.AdditionalProperties.(type) {
		case bool:
			// true and false are read by the fast path as the schemas
			// true and false.
			if a != f.additional.always || f.additional.never == a {
				return false
			}
		case *jsonschema.Schema:
			if !f.additional.link(a) {
				return false
			}
		default:
			return false
		}
	}
	if f.items != nil {
		items := c.Items2020
		if items == nil {
			items, _ = c.Items.(*jsonschema.Schema)
		}
		if !f.items.link(items) {
			return false
		}
	}
	return true
}

// enumError is the validator's message for a value not in enum, and
// whether explain may report it: for an enum of scalars only, each a number
// the fast path can compare.
func enumError(enum []any) (string, bool) {
	for _, e := range enum {
		switch e := e.(type) {
		case map[string]any, []any:
			return "", false
		case json.Number:
			if _, ok := parseDecimal(string(e)); !ok {
				return "", false
			}
		}
	}
	var msg string
	if len(enum) == 1 {
		msg = fmt.Sprintf("value must be %#v", enum[0])
	} else {
		vals := make([]string, len(enum))
		for i, e := range enum {
			vals[i] = fmt.Sprintf("%#v", e)
		}
		msg = "value must be one of " + strings.Join(vals, ", ")
	}
	// The validator then formats this message again, as a format with no
	// arguments: a '%' in an enum's value reads as a verb ("%!"(MISSING)").
	var none []any
	return fmt.Sprintf(msg, none...), true
}

// explainRun is one run of explain: the schema, for its messages, the
// errors found so far, and where the walk is: a member's name, or an item's
// index where name is unset. The path is written only for an error, so a
// walk that finds few costs no allocation per value.
type explainRun struct {
	s    *Schema
	out  []Error
	path []step
}

type step struct {
	name  string
	index int // -1 for a member
}

func (r *explainRun) enter(name string, index int) { r.path = append(r.path, step{name, index}) }
func (r *explainRun) leave()                       { r.path = r.path[:len(r.path)-1] }

// add records the failure of keyword kw of f where the walk is.
func (r *explainRun) add(f *fastSchema, kw, msg string) {
	var path string
	for _, st := range r.path {
		switch {
		case st.index < 0 && st.name == "":
			// The validator writes no token for a member named "" (its
			// errors are at the object's path), and neither does this.
		case st.index < 0:
			path = PointerChild(path, st.name)
		default:
			path += "/" + strconv.Itoa(st.index)
		}
	}
	e := Error{Path: path, Keyword: kw, Message: msg}
	if f.inDoc {
		// unescape(fragment(Location + "/" + kw)), as flatten has it: kw
		// holds neither '#' nor '%'.
		e.SchemaPath = f.at + "/" + kw
	}
	if kw == "enum" {
		e.Message = r.s.message(e)
	} else {
		e.Message = clipRunes(msg, maxMessage)
	}
	if r.out == nil {
		r.out = make([]Error, 0, 2) // a missing property and an unknown one
	}
	r.out = append(r.out, e)
}

// explain returns the validator's errors for v, a value the fast path did
// not prove valid and whose numbers checkNumbers passed, and true; or
// false when it cannot say them exactly (see above), and the validator
// must run. It is used only after the budget walk counted v's cost.
func (s *Schema) explain(v any) ([]Error, bool) {
	if !s.explains {
		return nil, false
	}
	r := explainRun{s: s}
	if !s.fast.explain(v, &r) || len(r.out) == 0 || len(r.out) > MaxErrors {
		// No error found is a disagreement with the fast path: the
		// validator decides.
		return nil, false
	}
	return r.out, true
}

// explain appends v's errors against f, in the validator's order:
// type (and nothing else when it fails), const, enum, then the keywords of
// v's kind; false when it cannot say them exactly.
func (f *fastSchema) explain(v any, r *explainRun) bool {
	switch {
	case f.always:
		return true
	case f.never:
		return false
	}
	c := f.node
	if len(c.Types) > 0 {
		ok, known := f.typeOK(v)
		if !known {
			return false
		}
		if !ok {
			r.add(f, "type", "expected "+strings.Join(c.Types, " or ")+", but got "+jsonType(v))
			return true
		}
	}
	// The validator ignores a const under draft-04, and an empty enum.
	if f.hasConst && len(c.Constant) > 0 {
		if !f.constExplained {
			return false
		}
		if eq, known := f.equalsScalar(v, []any{f.constant}); !known {
			return false
		} else if !eq {
			r.add(f, "const", f.constError)
		}
	}
	if f.hasEnum && len(c.Enum) > 0 {
		if !f.enumExplained {
			return false
		}
		if in, known := f.equalsScalar(v, f.enum); !known {
			return false
		} else if !in {
			r.add(f, "enum", f.enumError)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return f.explainObject(v, r)
	case []any:
		if c.MinItems != -1 && len(v) < c.MinItems {
			r.add(f, "minItems", fmt.Sprintf("minimum %d items required, but found %d items", c.MinItems, len(v)))
		}
		if c.MaxItems != -1 && len(v) > c.MaxItems {
			r.add(f, "maxItems", fmt.Sprintf("maximum %d items required, but found %d items", c.MaxItems, len(v)))
		}
		if f.items != nil {
			for i, item := range v {
				r.enter("", i)
				ok := f.items.explain(item, r)
				r.leave()
				if !ok {
					return false
				}
			}
		}
	case string:
		if c.MinLength != -1 || c.MaxLength != -1 {
			n := utf8.RuneCountInString(v)
			if c.MinLength != -1 && n < c.MinLength {
				r.add(f, "minLength", fmt.Sprintf("length must be >= %d, but got %d", c.MinLength, n))
			}
			if c.MaxLength != -1 && n > c.MaxLength {
				r.add(f, "maxLength", fmt.Sprintf("length must be <= %d, but got %d", c.MaxLength, n))
			}
		}
	case json.Number:
		// The bounds' messages print rationals: left to the validator.
		d, ok := parseDecimal(string(v))
		return ok && (f.minimum == nil || d.cmp(*f.minimum) >= 0) &&
			(f.maximum == nil || d.cmp(*f.maximum) <= 0) &&
			(f.exclMin == nil || d.cmp(*f.exclMin) > 0) &&
			(f.exclMax == nil || d.cmp(*f.exclMax) < 0)
	case nil, bool:
	default:
		return false
	}
	return len(r.out) <= MaxErrors
}

// explainObject is explain for an object: its size, required properties,
// properties in the order of their names, then the others.
func (f *fastSchema) explainObject(v map[string]any, r *explainRun) bool {
	c := f.node
	if c.MinProperties != -1 && len(v) < c.MinProperties {
		r.add(f, "minProperties", fmt.Sprintf("minimum %d properties allowed, but found %d properties", c.MinProperties, len(v)))
	}
	if c.MaxProperties != -1 && len(v) > c.MaxProperties {
		r.add(f, "maxProperties", fmt.Sprintf("maximum %d properties allowed, but found %d properties", c.MaxProperties, len(v)))
	}
	var missing []byte
	var text [64]byte
	for _, name := range c.Required {
		if _, ok := v[name]; !ok {
			if missing == nil {
				missing = append(text[:0], "missing properties: "...)
			} else {
				missing = append(missing, ", "...)
			}
			missing = appendQuoted(missing, name)
		}
	}
	if missing != nil {
		r.add(f, "required", string(missing))
	}
	names := f.names
	if len(names) > 2*len(v)+8 {
		// Far more properties declared than present: the members, in the
		// order of their names, so that a value's walk costs what its
		// size does, whatever the schema declares.
		names = nil
		for name := range v {
			if _, declared := f.props[name]; declared {
				names = append(names, name)
			}
		}
		slices.Sort(names)
	}
	for _, name := range names {
		if val, present := v[name]; present {
			r.enter(name, -1)
			ok := f.props[name].explain(val, r)
			r.leave()
			if !ok {
				return false
			}
		}
	}
	if f.additional == nil || f.additional.always {
		return len(r.out) <= MaxErrors
	}
	var room [8]string
	others := room[:0]
	for name := range v {
		if _, ok := f.props[name]; !ok {
			others = append(others, name)
		}
	}
	if len(others) == 0 {
		return len(r.out) <= MaxErrors
	}
	slices.Sort(others)
	if f.additional.never {
		msg := append(make([]byte, 0, 64), "additionalProperties "...)
		for i, name := range others {
			if i > 0 {
				msg = append(msg, ", "...)
			}
			msg = appendQuoted(msg, name)
		}
		r.add(f, "additionalProperties", string(append(msg, " not allowed"...)))
		return len(r.out) <= MaxErrors
	}
	for _, name := range others {
		r.enter(name, -1)
		ok := f.additional.explain(v[name], r)
		r.leave()
		if !ok {
			return false
		}
	}
	return len(r.out) <= MaxErrors
}

// typeOK reports whether v is of one of f's types, as the validator reads
// them ("integer" allows a number of integer value); known is false for a
// number the fast path cannot read.
func (f *fastSchema) typeOK(v any) (ok, known bool) {
	switch v := v.(type) {
	case nil:
		return f.allows(typeNull), true
	case bool:
		return f.allows(typeBoolean), true
	case string:
		return f.allows(typeString), true
	case []any:
		return f.allows(typeArray), true
	case map[string]any:
		return f.allows(typeObject), true
	case json.Number:
		if f.allows(typeNumber) {
			return true, true
		}
		if f.types&typeInteger == 0 {
			return false, true
		}
		d, ok := parseDecimal(string(v))
		if !ok {
			return false, false
		}
		return d.isInt(), true
	}
	return false, false
}

// equalsScalar reports whether v equals one of vals, all scalars, as the
// validator compares them; known is false for a number the fast path
// cannot read.
func (f *fastSchema) equalsScalar(v any, vals []any) (eq, known bool) {
	switch v := v.(type) {
	case map[string]any, []any:
		return false, true // never equal to a scalar
	case json.Number:
		if _, ok := parseDecimal(string(v)); !ok {
			return false, false
		}
	}
	for _, e := range vals {
		switch e.(type) {
		case map[string]any, []any:
			return false, false
		}
		if scalarEqual(v, e) {
			return true, true
		}
	}
	return false, true
}

// appendQuoted appends the validator's quoting of a name in its messages:
// Go's, in single quotes.
func appendQuoted(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' && s[i] != '\''
	}
	if plain {
		b = append(b, '\'')
		b = append(b, s...)
		return append(b, '\'')
	}
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	b = append(b, '\'')
	b = append(b, s[1:len(s)-1]...)
	return append(b, '\'')
}
