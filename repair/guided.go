package repair

import (
	"slices"
	"strings"

	"github.com/toolguard/toolguard/validate"
)

// maxRounds bounds the schema-guided step. Each round fixes what the
// validation errors of the previous one point at; a value nested in a
// stringified object in a wrapper envelope needs three.
const maxRounds = 8

// candidate is one way to mend a value.
type candidate struct {
	val  any
	kind Kind
}

// guider runs the schema-guided step on a copy of the arguments.
type guider struct {
	doc   any
	root  any
	edits []Edit
	// done holds the paths whose value was replaced in this round: the
	// errors inside them describe a value that is gone.
	done []string
}

// guide runs rounds of schema-guided edits on v until it validates, no edit
// applies, or maxRounds is reached. errs are v's errors against s (not nil),
// so the first round does not validate v again. It reports whether the
// result validates. The edits are made on a copy of v when keep is set, and
// on v itself otherwise: a caller that keeps nothing of v saves the copy.
func guide(v any, errs []validate.Error, s *validate.Schema, b *validate.Budget, keep bool) (any, []Edit, bool) {
	if keep {
		v = clone(v)
	}
	g := &guider{doc: s.Doc(), root: v}
	for i := range maxRounds {
		if i > 0 {
			errs = s.ValidateWithin(g.root, b)
		}
		if errs == nil {
			return g.root, g.edits, true
		}
		if !g.round(errs) {
			return nil, nil, false
		}
	}
	if s.ValidateWithin(g.root, b) != nil {
		return nil, nil, false
	}
	return g.root, g.edits, true
}

// round applies the edits that the errors call for, the deepest first, and
// reports whether it made any.
func (g *guider) round(errs []validate.Error) bool {
	g.done = g.done[:0]
	root, isObject := g.root.(map[string]any)
	if !isObject {
		return g.wrapRoot()
	}
	if g.unwrapEnvelope(root) {
		return true
	}
	// The errors by path, in the order the paths first appear, then the
	// deepest first (a stable sort keeps that order among equals). errs
	// are a validation's, at most validate.MaxErrors: a search for each
	// path costs less than a map.
	var room [4]pathErrors
	byPath := room[:0]
	for _, e := range errs {
		if !slices.ContainsFunc(byPath, func(pe pathErrors) bool { return pe.path == e.Path }) {
			byPath = append(byPath, pathErrors{path: e.Path})
		}
	}
	// Each path's errors, in their order, in one array: errs itself when
	// they are at one path.
	if len(byPath) == 1 {
		byPath[0].errs = errs
	} else {
		all := make([]validate.Error, 0, len(errs))
		for i := range byPath {
			start := len(all)
			for _, e := range errs {
				if e.Path == byPath[i].path {
					all = append(all, e)
				}
			}
			byPath[i].errs = all[start:len(all):len(all)]
		}
	}
	slices.SortStableFunc(byPath, func(a, b pathErrors) int {
		return strings.Count(b.path, "/") - strings.Count(a.path, "/")
	})
	changed := false
	for _, pe := range byPath {
		if slices.ContainsFunc(g.done, func(d string) bool { return within(pe.path, d) }) {
			continue
		}
		if g.fixObject(pe.path, pe.errs) || g.fixValue(pe.path, pe.errs) {
			changed = true
		}
	}
	return changed
}

// pathErrors are the errors of one round at one path.
type pathErrors struct {
	path string
	errs []validate.Error
}

func (g *guider) record(kind Kind, path string, before, after any) {
	g.edits = append(g.edits, Edit{Kind: kind, Path: path, Before: render(before), After: render(after)})
}

// fixValue replaces the value at p when the type, enum and const errors
// there agree on exactly one lossless replacement. With anyOf and oneOf,
// each branch reports its own errors: acting only on a single distinct
// candidate is acting only when exactly one branch fits.
func (g *guider) fixValue(p string, errs []validate.Error) bool {
	cur, ok := at(g.root, p)
	if !ok {
		return false
	}
	var cands []candidate
	for _, e := range errs {
		sch, ok := schemaOf(g.doc, e.SchemaPath, e.Path)
		if !ok {
			continue
		}
		switch e.Keyword {
		case "type":
			cands = append(cands, retype(cur, sch)...)
		case "enum", "const":
			members, _ := sch["enum"].([]any)
			if e.Keyword == "const" {
				members = []any{sch["const"]}
			}
			if c, ok := enumFix(cur, members); ok {
				cands = append(cands, c)
			}
		}
	}
	c, ok := only(cands)
	if !ok || !set(&g.root, p, c.val) {
		return false
	}
	g.record(c.kind, p, cur, c.val)
	g.done = append(g.done, p)
	return true
}

// retype lists the lossless ways to give cur a type that sch declares.
func retype(cur any, sch map[string]any) []candidate {
	var out []candidate
	for _, t := range types(sch) {
		if v, ok := convert(cur, t); ok {
			out = append(out, candidate{v, KindCoerceType})
			continue
		}
		switch t {
		case "array":
			if items, ok := sch["items"]; (!ok || isSchema(items)) && fits(cur, items) {
				out = append(out, candidate{[]any{cur}, KindWrapArray})
			}
		case "object":
			if obj, ok := wrapValue(cur, sch); ok {
				out = append(out, candidate{obj, KindWrapValue})
			}
		}
	}
	return out
}

// isSchema tells a single items schema from draft 4-7's list of them.
func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// only returns the single distinct candidate.
func only(cands []candidate) (candidate, bool) {
	if len(cands) == 0 {
		return candidate{}, false
	}
	first, err := encode(cands[0].val)
	if err != nil {
		return candidate{}, false
	}
	for _, c := range cands[1:] {
		b, err := encode(c.val)
		if err != nil || string(b) != string(first) {
			return candidate{}, false
		}
	}
	return cands[0], true
}

// wrapValue puts a bare value into the one property of sch it can belong
// to: the only required property, or else the only property, provided the
// value fits it.
func wrapValue(v any, sch map[string]any) (map[string]any, bool) {
	if _, isObject := v.(map[string]any); isObject {
		return nil, false
	}
	props, _ := sch["properties"].(map[string]any)
	target, ok := wrapTarget(sch)
	if !ok || !fits(v, props[target]) {
		return nil, false
	}
	return map[string]any{target: v}, true
}

// wrapTarget returns the one property of sch that a bare value can belong
// to: the only required property, or else the only property.
func wrapTarget(sch map[string]any) (string, bool) {
	props, _ := sch["properties"].(map[string]any)
	req := stringList(sch["required"])
	switch {
	case len(req) == 1:
		return req[0], true
	case len(req) == 0 && len(props) == 1:
		for k := range props {
			return k, true
		}
	}
	return "", false
}

// wrapRoot handles arguments that are a bare value, not an object.
func (g *guider) wrapRoot() bool {
	sch, ok := g.doc.(map[string]any)
	if !ok {
		return false
	}
	obj, ok := wrapValue(g.root, sch)
	if !ok {
		return false
	}
	g.record(KindWrapValue, "", g.root, obj)
	g.root = obj
	return true
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// clone deep-copies decoded JSON, so that a failed attempt leaves the
// caller's value as it was.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = clone(e)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = clone(e)
		}
		return a
	}
	return v
}
