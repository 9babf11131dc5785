package repair

import (
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/validate"
)

// at returns the value at ptr inside v: the arguments, or the schema
// document, whose pointers the validator reports.
func at(v any, ptr string) (any, bool) {
	for _, tok := range validate.PointerTokens(ptr) {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// set replaces the value at ptr inside *root.
func set(root *any, ptr string, val any) bool {
	toks := validate.PointerTokens(ptr)
	if len(toks) == 0 {
		*root = val
		return true
	}
	parent, ok := at(*root, ptr[:strings.LastIndexByte(ptr, '/')])
	if !ok {
		return false
	}
	last := toks[len(toks)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[last]; !ok {
			return false
		}
		c[last] = val
		return true
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return false
		}
		c[i] = val
		return true
	}
	return false
}

// within reports whether ptr is base or inside it.
func within(ptr, base string) bool {
	return ptr == base || strings.HasPrefix(ptr, base+"/")
}

// schemaOf returns the schema object holding the keyword at a validation
// error's SchemaPath ("/properties/a/type" -> the schema of a). The root
// schema is returned for an error without a SchemaPath at the root of the
// arguments (the check that arguments are an object).
func schemaOf(doc any, schemaPath, path string) (map[string]any, bool) {
	if schemaPath == "" {
		if path != "" {
			return nil, false
		}
		m, ok := doc.(map[string]any)
		return m, ok
	}
	i := strings.LastIndexByte(schemaPath, '/')
	if i < 0 {
		return nil, false
	}
	v, ok := at(doc, schemaPath[:i])
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}
