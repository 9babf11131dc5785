package repair

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/validate"
)

var (
	// intText is an integer written as a string, with at most a zero
	// fraction ("5", "-3", "5.0"). No sign "+", no leading zeros ("007" is
	// an identifier more often than a number), no exponent, no space.
	intText = regexp.MustCompile(`^-?(?:0|[1-9][0-9]{0,39})(?:\.0+)?$`)
	// numText is a JSON number written as a string.
	numText = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
)

// types lists the JSON types a schema declares; nil means any.
func types(sch map[string]any) []string {
	switch t := sch["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// isType reports whether v is of the JSON Schema type t.
func isType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		return t == "number" || t == "integer" && integral(v)
	}
	return false
}

func integral(n json.Number) bool {
	f, ok := new(big.Float).SetString(n.String())
	return ok && f.IsInt()
}

// convert changes the type of a scalar to t when nothing is lost: the new
// value writes exactly what the old one did.
func convert(v any, t string) (any, bool) {
	switch v := v.(type) {
	case string:
		switch t {
		case "integer":
			if intText.MatchString(v) {
				n, _, _ := strings.Cut(v, ".")
				return json.Number(n), true
			}
		case "number":
			if numText.MatchString(v) {
				// 1e400 is a number in JSON but not in any tool's language.
				if _, err := strconv.ParseFloat(v, 64); err == nil {
					return json.Number(v), true
				}
			}
		case "boolean":
			switch v {
			case "true", "True":
				return true, true
			case "false", "False":
				return false, true
			}
		case "array", "object":
			// A value the model encoded once more as JSON text.
			d, err := validate.Decode([]byte(strings.TrimSpace(v)))
			if err == nil && isType(d, t) {
				return d, true
			}
		}
	case json.Number:
		if t == "string" {
			return v.String(), true
		}
	case bool:
		if t == "string" {
			return strconv.FormatBool(v), true
		}
	}
	return nil, false
}

// fits reports whether v is of a type the schema declares, or converts to
// one without loss: whether v can be the value of a property with that
// schema once the later rounds have done their work.
func fits(v any, sch any) bool { return typeFits(v, sch, true) }

// declares reports whether v is of a type the schema declares as it is.
func declares(v any, sch any) bool { return typeFits(v, sch, false) }

func typeFits(v any, sch any, lossless bool) bool {
	m, ok := sch.(map[string]any)
	if !ok {
		return sch != false
	}
	ts := types(m)
	if ts == nil {
		// Without a type, anyOf and oneOf branches decide; a schema
		// without them accepts any type.
		found := false
		for _, kw := range [...]string{"anyOf", "oneOf"} {
			branches, ok := m[kw].([]any)
			found = found || ok
			for _, b := range branches {
				if typeFits(v, b, lossless) {
					return true
				}
			}
		}
		return !found
	}
	for _, t := range ts {
		if isType(v, t) {
			return true
		}
		if _, ok := convert(v, t); ok && lossless {
			return true
		}
	}
	return false
}

// enumFix returns the one member of an enum that v plainly means: the same
// string in another case, or the same number or string written as the
// other type. Several members matching is a guess, so none is returned.
func enumFix(v any, members []any) (candidate, bool) {
	var found []candidate
	for _, m := range members {
		switch m := m.(type) {
		case string:
			switch v := v.(type) {
			case string:
				if v != m && strings.EqualFold(v, m) {
					found = append(found, candidate{m, KindEnumCase})
				}
			case json.Number:
				if v.String() == m {
					found = append(found, candidate{m, KindCoerceType})
				}
			}
		case json.Number:
			if s, ok := v.(string); ok && numText.MatchString(s) && sameNumber(s, m.String()) {
				found = append(found, candidate{m, KindCoerceType})
			}
		}
	}
	if len(found) != 1 {
		return candidate{}, false
	}
	return found[0], true
}

func sameNumber(a, b string) bool {
	x, ok1 := new(big.Float).SetString(a)
	y, ok2 := new(big.Float).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}
