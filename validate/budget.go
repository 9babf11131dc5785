package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The validator's work for one call is the number of (subschema, value)
// pairs it visits, and a schema decides that number: subschemas that refer
// to one another from several places multiply, level after level, so a 1 KB
// schema can ask for 2^40 visits of the arguments {"a": 5}. The library has
// no budget of its own, so before it runs, the same walk is made without
// evaluating anything, counting the visits the validator could make (an
// upper bound: anyOf counts every branch) and stopping at MaxSteps. Arguments
// that would cost more are not validated: their call is reported unchecked,
// like a call of a schema that does not compile.
//
// Patterns count in proportion to the text they scan times their program
// size, since that is what matching costs, and a pattern whose program is
// over MaxPatternInsts does not compile at all.

const (
	// MaxSteps bounds the work of validating one call's arguments, in the
	// validator's visits (the fast path's count a sixteenth each: see
	// FastVisitsPerStep). A BFCL call costs a few dozen steps. A step costs
	// the validator 0.15 to 0.55 µs and 6 to 16 allocations, by kind (an
	// eight-way allOf is cheapest, an anyOf whose branches all fail
	// dearest), once bounds and uniqueItems are weighted (see
	// numberKeywordSteps, uniqueItemSteps, and BenchmarkStepCost for the
	// figures), so a call costs at most about 0.1 s of CPU.
	MaxSteps = 200_000
	// RequestSteps bounds the validation work of one request, all its
	// calls and attempts together: about 0.2 s of CPU at the dearest
	// rate, 7 million allocations (TestRequestBudgetBoundsValidatorWork).
	RequestSteps = 2 * MaxSteps
	// FastVisitsPerStep is how many of the fast path's visits make one
	// step: it costs 30 to 50 ns a visit without allocating, a sixteenth
	// or less of what the validator costs, so a valid flat call of a
	// megabyte (half a million array items) costs some 30,000 steps, not
	// 500,000.
	FastVisitsPerStep = 16
	// MaxPatternInsts bounds the program size of a schema's regular
	// expressions (pattern, patternProperties): RE2 runs in time linear in
	// the text, but the constant is the program size. Real patterns (an
	// e-mail address, a date) compile to a few dozen instructions;
	// (\p{L}|\p{N}){500}z to 1,503.
	MaxPatternInsts = 500
	// maxNumberDigits bounds the digits of a number in arguments or a
	// schema: the validator compares numbers as exact rationals, and
	// 1e999999 or a million digits costs milliseconds per comparison.
	maxNumberDigits = 400
	// patternCostDivisor scales a pattern's text length times program
	// size into steps.
	patternCostDivisor = 8
	// regexFormatSteps is what asserting the format "regex" costs for each
	// byte of the string: the validator compiles the string, about 1 µs a
	// byte (1 MB took a second), two of the dearest steps. Every other
	// format costs about what decoding the string does.
	regexFormatSteps = 2
)

// ErrOverBudget is the cause when validating arguments would take more than
// MaxSteps.
var ErrOverBudget = errors.New("validation would take more than the work budget")

// errUnresolved stops the walk at a reference it cannot follow.
var errUnresolved = errors.New("reference the budget walk cannot follow")

// cost counts the steps of validating v against the schema, stopping with
// ErrOverBudget past max.
func (s *Schema) cost(v any, max int) (int, error) {
	if s.plan == nil {
		return 0, ErrOverBudget
	}
	w := &walker{max: max}
	err := w.walk(s.plan, v, 0)
	return w.steps, err
}

// A plan is a schema node made ready for the budget walk: the subschemas
// that apply to the same value and to its members, with references
// resolved. It is built once per schema, at compile time.
type plan struct {
	inPlace    []*plan // $ref, allOf, anyOf, oneOf, not, if, then, else
	compare    int     // steps of comparing a value with enum, const and bounds
	unique     bool    // uniqueItems
	pattern    *compiledPattern
	regex      bool // the format "regex", asserted
	props      map[string]*plan
	patProps   []patternPlan
	additional []*plan // additionalProperties, unevaluatedProperties
	names      *plan   // propertyNames
	deps       map[string]*plan
	prefix     []*plan // prefixItems, or items as an array
	items      []*plan // items, additionalItems, unevaluatedItems
	contains   *plan
}

type compiledPattern struct {
	re    *regexp.Regexp
	insts int
}

type patternPlan struct {
	p   *compiledPattern
	sch *plan
}

// makePlan builds the plan of a schema document; it fails on a reference
// it cannot follow (an anchor, another document), and the schema is then
// not run.
func makePlan(root any, patterns map[string]*compiledPattern) (*plan, error) {
	// An unknown $schema has no fast path, and the format may be asserted.
	annotation, _ := formatIsAnnotation(root)
	seen := map[uintptr]*plan{}
	var build func(sch any) (*plan, error)
	resolve := func(ref string) (any, error) { return resolvePointer(root, ref) }
	build = func(sch any) (*plan, error) {
		m, ok := sch.(map[string]any)
		if !ok {
			return &plan{}, nil
		}
		key := reflect.ValueOf(m).Pointer()
		if p := seen[key]; p != nil {
			return p, nil
		}
		p := &plan{}
		seen[key] = p
		one := func(sub any) (*plan, error) { return build(sub) }
		for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
			if ref, ok := m[k].(string); ok {
				target, err := resolve(ref)
				if err != nil {
					return nil, err
				}
				t, err := one(target)
				if err != nil {
					return nil, err
				}
				p.inPlace = append(p.inPlace, t)
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if subs, ok := m[k].([]any); ok {
				for _, sub := range subs {
					t, err := one(sub)
					if err != nil {
						return nil, err
					}
					p.inPlace = append(p.inPlace, t)
				}
			}
		}
		for _, k := range []string{"not", "if", "then", "else"} {
			if sub, ok := m[k]; ok {
				t, err := one(sub)
				if err != nil {
					return nil, err
				}
				p.inPlace = append(p.inPlace, t)
			}
		}
		if e, ok := m["enum"]; ok {
			p.compare += compareCost(e)
		}
		if c, ok := m["const"]; ok {
			p.compare += compareCost(c)
		}
		for _, k := range numberKeywords {
			if _, ok := m[k]; ok {
				p.compare += numberKeywordSteps
			}
		}
		p.unique = m["uniqueItems"] == true
		p.regex = !annotation && m["format"] == "regex"
		if pat, ok := m["pattern"].(string); ok {
			p.pattern = patterns[pat]
			if p.pattern == nil {
				p.pattern = &compiledPattern{insts: MaxPatternInsts}
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			p.props = make(map[string]*plan, len(props))
			for name, sub := range props {
				t, err := one(sub)
				if err != nil {
					return nil, err
				}
				p.props[name] = t
			}
		}
		if pp, ok := m["patternProperties"].(map[string]any); ok {
			for pat, sub := range pp {
				t, err := one(sub)
				if err != nil {
					return nil, err
				}
				cp := patterns[pat]
				if cp == nil {
					cp = &compiledPattern{insts: MaxPatternInsts}
				}
				p.patProps = append(p.patProps, patternPlan{p: cp, sch: t})
			}
		}
		for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
			if sub, ok := m[k]; ok {
				t, err := one(sub)
				if err != nil {
					return nil, err
				}
				p.additional = append(p.additional, t)
			}
		}
		if sub, ok := m["propertyNames"]; ok {
			t, err := one(sub)
			if err != nil {
				return nil, err
			}
			p.names = t
		}
		for _, k := range []string{"dependentSchemas", "dependencies"} {
			if deps, ok := m[k].(map[string]any); ok {
				if p.deps == nil {
					p.deps = map[string]*plan{}
				}
				for name, sub := range deps {
					t, err := one(sub)
					if err != nil {
						return nil, err
					}
					p.deps[name] = t
				}
			}
		}
		var prefix []any
		if pi, ok := m["prefixItems"].([]any); ok {
			prefix = pi
		} else if pi, ok := m["items"].([]any); ok { // drafts before 2020-12
			prefix = pi
		}
		for _, sub := range prefix {
			t, err := one(sub)
			if err != nil {
				return nil, err
			}
			p.prefix = append(p.prefix, t)
		}
		for _, k := range []string{"items", "additionalItems", "unevaluatedItems"} {
			if sub, ok := m[k]; ok {
				if _, tuple := sub.([]any); tuple {
					continue
				}
				t, err := one(sub)
				if err != nil {
					return nil, err
				}
				p.items = append(p.items, t)
			}
		}
		if sub, ok := m["contains"]; ok {
			t, err := one(sub)
			if err != nil {
				return nil, err
			}
			p.contains = t
		}
		return p, nil
	}
	return build(root)
}

type walker struct {
	steps int
	max   int
}

func (w *walker) spend(n int) error {
	w.steps += n
	if w.steps > w.max {
		return ErrOverBudget
	}
	return nil
}

// walk visits v with the plan p. inPlace counts the subschemas followed
// without moving into v, to stop a loop that consumes nothing.
func (w *walker) walk(p *plan, v any, inPlace int) error {
	if err := w.spend(1 + p.compare); err != nil {
		return err
	}
	if inPlace > 64 {
		return ErrOverBudget
	}
	for _, sub := range p.inPlace {
		if err := w.walk(sub, v, inPlace+1); err != nil {
			return err
		}
	}
	switch v := v.(type) {
	case string:
		if p.regex {
			if err := w.spend(len(v) * regexFormatSteps); err != nil {
				return err
			}
		}
		if p.pattern != nil {
			return w.spend(patternCost(p.pattern, v))
		}
	case map[string]any:
		return w.object(p, v, inPlace)
	case []any:
		return w.array(p, v)
	}
	return nil
}

func (w *walker) object(p *plan, v map[string]any, inPlace int) error {
	for name, sub := range p.deps {
		if _, present := v[name]; present {
			if err := w.walk(sub, v, inPlace+1); err != nil {
				return err
			}
		}
	}
	for key, val := range v {
		if p.names != nil {
			if err := w.walk(p.names, key, 0); err != nil {
				return err
			}
		}
		matched := false
		if sub, ok := p.props[key]; ok {
			matched = true
			if err := w.walk(sub, val, 0); err != nil {
				return err
			}
		}
		for _, pp := range p.patProps {
			if err := w.spend(patternCost(pp.p, key)); err != nil {
				return err
			}
			if pp.p.re != nil && pp.p.re.MatchString(key) {
				matched = true
				if err := w.walk(pp.sch, val, 0); err != nil {
					return err
				}
			}
		}
		if !matched {
			for _, sub := range p.additional {
				if err := w.walk(sub, val, 0); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *walker) array(p *plan, v []any) error {
	if p.unique {
		if err := w.spend(len(v) * uniqueItemSteps); err != nil {
			return err
		}
	}
	for i, item := range v {
		if i < len(p.prefix) {
			if err := w.walk(p.prefix[i], item, 0); err != nil {
				return err
			}
		} else {
			for _, sub := range p.items {
				if err := w.walk(sub, item, 0); err != nil {
					return err
				}
			}
		}
		if p.contains != nil {
			if err := w.walk(p.contains, item, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// numberCompareSteps is what comparing a number of an enum or const costs,
// in steps: the validator compares numbers as exact rationals, some 700 ns
// each (an enum of 60 objects of 400 numbers took 3.6 s for 216 array
// items). Any other value costs a step.
const numberCompareSteps = 4

// numberKeywords are the keywords that compare a number with a bound, as
// exact rationals; each costs numberKeywordSteps a visit, since a failing
// one costs the validator an error of its own besides (1.4 µs and 32
// allocations a visit of a failing minimum, 0.2 to 0.5 µs a plain visit).
var numberKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}

const numberKeywordSteps = 4

// uniqueItemSteps is what uniqueItems costs, in steps an item: the
// validator compares each item with the others (0.9 µs and 25 allocations
// an item).
const uniqueItemSteps = 2

// compareCost is the steps of comparing a value with v, an enum's list or a
// const: each nested value counts, since objects and arrays are compared
// member by member. It stops counting past MaxSteps.
func compareCost(v any) int {
	n := 0
	var walk func(any)
	walk = func(v any) {
		if n > MaxSteps {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			n++
			for _, e := range v {
				walk(e)
			}
		case []any:
			n++
			for _, e := range v {
				walk(e)
			}
		case json.Number:
			n += numberCompareSteps
		default:
			n++
		}
	}
	walk(v)
	return n
}

// resolvePointer follows a reference inside the schema: "#" and
// "#/json/pointer". Anything else (anchors, other documents) is an error.
func resolvePointer(root any, ref string) (any, error) {
	if ref == "#" {
		return root, nil
	}
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || !strings.HasPrefix(ptr, "/") || strings.Contains(ptr, "%") {
		return nil, errUnresolved
	}
	v, ok := walkPointer(root, PointerTokens(ptr))
	if !ok {
		return nil, errUnresolved
	}
	return v, nil
}

// patternCost is what matching pattern p against s costs, in steps.
func patternCost(p *compiledPattern, s string) int {
	return 1 + len(s)*p.insts/patternCostDivisor
}

// compilePatterns compiles every pattern of the schema once, for the budget
// walk, and refuses one whose program is over MaxPatternInsts.
func compilePatterns(doc any) (map[string]*compiledPattern, error) {
	out := map[string]*compiledPattern{}
	add := func(p string) error {
		if _, ok := out[p]; ok {
			return nil
		}
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return nil // the compiler reports it
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			return nil
		}
		if len(prog.Inst) > MaxPatternInsts {
			return ErrSchemaTooLarge{fmt.Sprintf("pattern %q compiles to %d instructions, over the limit of %d",
				clipRunes(p, 40), len(prog.Inst), MaxPatternInsts)}
		}
		cre, err := regexp.Compile(p)
		if err != nil {
			return nil
		}
		out[p] = &compiledPattern{re: cre, insts: len(prog.Inst)}
		return nil
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if k == "pattern" {
					if p, ok := sub.(string); ok {
						if err := add(p); err != nil {
							return err
						}
					}
				}
				if k == "patternProperties" {
					if pp, ok := sub.(map[string]any); ok {
						for p := range pp {
							if err := add(p); err != nil {
								return err
							}
						}
					}
				}
				if err := walk(sub); err != nil {
					return err
				}
			}
		case []any:
			for _, sub := range v {
				if err := walk(sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(doc)
}

// checkNumbers reports the first number in v that the validator cannot
// compare cheaply: beyond float64's range, or of more than maxNumberDigits
// digits. Its path is a JSON pointer.
func checkNumbers(v any, path string) *Error {
	e := badNumberIn(v)
	if e != nil {
		e.Path = path + e.Path
	}
	return e
}

// badNumberIn is checkNumbers at the root of v: the error's path is written
// as the walk returns, so a value without one costs no allocation.
func badNumberIn(v any) *Error {
	switch v := v.(type) {
	case json.Number:
		if why := badNumber(string(v)); why != "" {
			return &Error{Keyword: "number", Message: why}
		}
	case map[string]any:
		for k, e := range v {
			if err := badNumberIn(e); err != nil {
				err.Path = PointerChild("", k) + err.Path
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := badNumberIn(e); err != nil {
				err.Path = "/" + strconv.Itoa(i) + err.Path
				return err
			}
		}
	}
	return nil
}

// badNumber says why a JSON number is refused, or "".
func badNumber(n string) string {
	if len(n) > maxNumberDigits {
		return fmt.Sprintf("number %s has more than %d digits", clipRunes(n, 24), maxNumberDigits)
	}
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
		if err != nil || exp > 400 || exp < -400 {
			return fmt.Sprintf("number %s is outside the range of a 64-bit floating-point number", clipRunes(n, 24))
		}
	}
	if f, err := strconv.ParseFloat(n, 64); err != nil && math.IsInf(f, 0) {
		return fmt.Sprintf("number %s is outside the range of a 64-bit floating-point number", clipRunes(n, 24))
	}
	return ""
}

func clipRunes(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}
