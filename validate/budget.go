package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	// MaxSteps bounds the work of validating one call's arguments. A BFCL
	// call costs a few dozen steps; a megabyte of arguments against a flat
	// schema a few hundred thousand.
	MaxSteps = 1_000_000
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
)

// ErrOverBudget is the cause when validating arguments would take more than
// MaxSteps.
var ErrOverBudget = errors.New("validation would take more than the work budget")

// errUnresolved stops the walk at a reference it cannot follow.
var errUnresolved = errors.New("reference the budget walk cannot follow")

// cost counts the steps of validating v against the schema, stopping with
// ErrOverBudget past max.
func (s *Schema) cost(v any, max int) (int, error) {
	w := &walker{root: s.doc, max: max, patterns: s.patterns}
	err := w.walk(s.doc, v, 0)
	if errors.Is(err, errUnresolved) {
		err = ErrOverBudget
	}
	return w.steps, err
}

type walker struct {
	root     any
	steps    int
	max      int
	patterns map[string]*compiledPattern
}

type compiledPattern struct {
	re    *regexp.Regexp
	insts int
}

func (w *walker) spend(n int) error {
	w.steps += n
	if w.steps > w.max {
		return ErrOverBudget
	}
	return nil
}

// walk visits v with the schema node sch. inPlace counts the references
// followed without moving into v, to stop a loop that consumes nothing.
func (w *walker) walk(sch any, v any, inPlace int) error {
	if err := w.spend(1); err != nil {
		return err
	}
	m, ok := sch.(map[string]any)
	if !ok {
		return nil // true, false, or not a schema
	}
	if inPlace > 64 {
		return ErrOverBudget
	}
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if ref, ok := m[k].(string); ok {
			target, err := w.resolve(ref)
			if err != nil {
				return err
			}
			if err := w.walk(target, v, inPlace+1); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if subs, ok := m[k].([]any); ok {
			for _, sub := range subs {
				if err := w.walk(sub, v, inPlace+1); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if sub, ok := m[k]; ok {
			if err := w.walk(sub, v, inPlace+1); err != nil {
				return err
			}
		}
	}
	if e, ok := m["enum"].([]any); ok {
		if err := w.spend(len(e)); err != nil {
			return err
		}
	}
	if p, ok := m["pattern"].(string); ok {
		if s, isString := v.(string); isString {
			if err := w.spend(w.patternCost(p, s)); err != nil {
				return err
			}
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return w.object(m, v, inPlace)
	case []any:
		return w.array(m, v, inPlace)
	}
	return nil
}

func (w *walker) object(m map[string]any, v map[string]any, inPlace int) error {
	props, _ := m["properties"].(map[string]any)
	patterns, _ := m["patternProperties"].(map[string]any)
	for _, k := range []string{"dependentSchemas", "dependencies"} {
		if deps, ok := m[k].(map[string]any); ok {
			for name, sub := range deps {
				if _, present := v[name]; present {
					if err := w.walk(sub, v, inPlace+1); err != nil {
						return err
					}
				}
			}
		}
	}
	names, hasNames := m["propertyNames"]
	for key, val := range v {
		if hasNames {
			if err := w.walk(names, key, 0); err != nil {
				return err
			}
		}
		matched := false
		if sub, ok := props[key]; ok {
			matched = true
			if err := w.walk(sub, val, 0); err != nil {
				return err
			}
		}
		for p, sub := range patterns {
			if err := w.spend(w.patternCost(p, key)); err != nil {
				return err
			}
			if cp := w.patterns[p]; cp != nil && cp.re.MatchString(key) {
				matched = true
				if err := w.walk(sub, val, 0); err != nil {
					return err
				}
			}
		}
		if !matched {
			for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
				if sub, ok := m[k]; ok {
					if err := w.walk(sub, val, 0); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (w *walker) array(m map[string]any, v []any, inPlace int) error {
	var prefix []any
	if p, ok := m["prefixItems"].([]any); ok {
		prefix = p
	} else if p, ok := m["items"].([]any); ok { // drafts before 2020-12
		prefix = p
	}
	for i, item := range v {
		if i < len(prefix) {
			if err := w.walk(prefix[i], item, 0); err != nil {
				return err
			}
		} else {
			for _, k := range []string{"items", "additionalItems", "unevaluatedItems"} {
				if sub, ok := m[k]; ok {
					if _, tuple := sub.([]any); !tuple {
						if err := w.walk(sub, item, 0); err != nil {
							return err
						}
					}
				}
			}
		}
		if sub, ok := m["contains"]; ok {
			if err := w.walk(sub, item, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve follows a reference inside the schema: "#" and "#/json/pointer".
// Anything else (anchors, other documents) is not followed, and the walk
// stops: a schema the walk cannot bound is not run.
func (w *walker) resolve(ref string) (any, error) {
	if ref == "#" {
		return w.root, nil
	}
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, errUnresolved
	}
	cur := w.root
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if strings.Contains(tok, "%") {
			return nil, errUnresolved
		}
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(c) {
				return nil, errUnresolved
			}
			cur = c[i]
		default:
			return nil, errUnresolved
		}
	}
	return cur, nil
}

// patternCost is what matching pattern p against s costs, in steps.
func (w *walker) patternCost(p, s string) int {
	insts := MaxPatternInsts
	if cp := w.patterns[p]; cp != nil {
		insts = cp.insts
	}
	return 1 + len(s)*insts/patternCostDivisor
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
	switch v := v.(type) {
	case json.Number:
		if why := badNumber(string(v)); why != "" {
			return &Error{Path: path, Keyword: "number", Message: why}
		}
	case map[string]any:
		for k, e := range v {
			if err := checkNumbers(e, PointerChild(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkNumbers(e, fmt.Sprintf("%s/%d", path, i)); err != nil {
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
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}
