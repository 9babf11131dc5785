package repair

import (
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/toolguard/toolguard/validate"
)

// envelopeKeys are the keys models wrap arguments in; companionKeys are
// the ones that come with them and name the tool ({"name": "click",
// "arguments": {...}}).
var (
	envelopeKeys  = map[string]bool{"input": true, "parameters": true, "arguments": true, "args": true, "params": true, "kwargs": true, "tool_input": true}
	companionKeys = map[string]bool{"name": true, "tool": true, "tool_name": true, "function": true, "type": true}
)

// objectSchema is what key edits need to know of the schema of an object.
type objectSchema struct {
	sch   map[string]any
	props map[string]any
	names []string // declared property names, sorted
}

func newObjectSchema(sch map[string]any) objectSchema {
	props, _ := sch["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return objectSchema{sch: sch, props: props, names: names}
}

// known reports whether the schema names key, in properties or through a
// patternProperties pattern. A pattern Go cannot compile counts as
// matching: not knowing must not make a key look undeclared.
func (o objectSchema) known(key string) bool {
	if _, ok := o.props[key]; ok {
		return true
	}
	patterns, _ := o.sch["patternProperties"].(map[string]any)
	for p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil || re.MatchString(key) {
			return true
		}
	}
	return false
}

// fixObject renames and drops keys of the object at p, for its required
// and additionalProperties errors. It acts only when those errors come
// from one schema (not from several allOf branches, whose property lists
// differ).
func (g *guider) fixObject(p string, errs []validate.Error) bool {
	obj, ok := at(g.root, p)
	m, isObject := obj.(map[string]any)
	if !ok || !isObject {
		return false
	}
	var schemaPath string
	closed, missing := false, false
	for _, e := range errs {
		if e.Keyword != "required" && e.Keyword != "additionalProperties" {
			continue
		}
		sp, ok := strings.CutSuffix(e.SchemaPath, "/"+e.Keyword)
		if !ok || (closed || missing) && sp != schemaPath {
			return false
		}
		schemaPath = sp
		closed = closed || e.Keyword == "additionalProperties"
		missing = missing || e.Keyword == "required"
	}
	if !closed && !missing {
		return false
	}
	sch, ok := at(g.doc, schemaPath)
	schMap, isMap := sch.(map[string]any)
	if !ok || !isMap {
		return false
	}
	o := newObjectSchema(schMap)
	var unknown []string
	for k := range m {
		if !o.known(k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	changed := g.renameKeys(p, m, o, unknown)
	if !changed && missing {
		changed = g.placeUnknown(p, m, o, unknown)
	}
	if closed && schMap["additionalProperties"] == false {
		for _, u := range unknown {
			// A key that is like a declared name may mean that property:
			// dropping it would lose what the model meant to say.
			if _, still := m[u]; still && !resembles(u, o.names) {
				g.record(KindDropProperty, validate.PointerChild(p, u), m[u], nil)
				delete(m, u)
				changed = true
			}
		}
	}
	return changed
}

// renameKeys renames each unknown key that is one absent declared property
// written in another style (see sameWords), when no other key is that
// property in another style and the value fits it.
func (g *guider) renameKeys(p string, m map[string]any, o objectSchema, unknown []string) bool {
	changed := false
	for _, u := range unknown {
		target, n := sameWords(u, o.names)
		if n != 1 {
			continue
		}
		if _, present := m[target]; present {
			continue
		}
		if back, n := sameWords(target, unknown); n != 1 || back != u || !fits(m[u], o.props[target]) {
			continue
		}
		g.rename(p, m, u, target)
		changed = true
	}
	return changed
}

// placeUnknown handles an object whose keys are unlike any declared name
// while a required property is missing. It wraps the object into the one
// property it can belong to ({"history": 82, "math": 90} for a schema
// requiring only an object "grades"), as a bare value like "myCoolButton"
// is wrapped for "selector". It never renames: {"element": "x"} for a
// schema requiring only "selector" may mean the selector or something the
// tool does not take, and only the model can say. When that reading is
// possible (one unknown key, one missing property, a value of its type),
// the wrap is not the only reading either, and nothing is done.
func (g *guider) placeUnknown(p string, m map[string]any, o objectSchema, unknown []string) bool {
	if len(m) == 0 || len(unknown) != len(m) {
		return false
	}
	for _, u := range unknown {
		if resembles(u, o.names) {
			return false
		}
	}
	var missing []string
	for _, r := range stringList(o.sch["required"]) {
		if _, ok := m[r]; !ok && !slices.Contains(missing, r) {
			missing = append(missing, r)
		}
	}
	renamable := len(missing) == 1 && len(unknown) == 1 &&
		(len(m) == 1 || o.sch["additionalProperties"] == false) &&
		declares(m[unknown[0]], o.props[missing[0]])
	target, wrap := wrapTarget(o.sch)
	if !wrap || renamable || !declares(m, o.props[target]) || !wrapsKeys(m, o.props[target]) {
		return false
	}
	obj := map[string]any{target: m}
	if !set(&g.root, p, obj) {
		return false
	}
	g.record(KindWrapValue, p, m, obj)
	g.done = append(g.done, p)
	return true
}

// wrapsKeys reports whether the keys of m are what the schema of the
// property it would be wrapped into declares, when it declares any.
func wrapsKeys(m map[string]any, sch any) bool {
	s, ok := sch.(map[string]any)
	if !ok {
		return true
	}
	o := newObjectSchema(s)
	if o.props == nil {
		return true
	}
	for k := range m {
		if !o.known(k) {
			return false
		}
	}
	return true
}

func (g *guider) rename(p string, m map[string]any, from, to string) {
	g.edits = append(g.edits, Edit{Kind: KindRenameKey, Path: validate.PointerChild(p, to), Before: quote(from), After: quote(to)})
	m[to] = m[from]
	delete(m, from)
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: a JSON string of it is s in quotes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quote is s as a JSON string, clipped, as render writes one: a short
// plain name in quotes without encoding it.
func quote(s string) string {
	if len(s)+2 <= maxClip && plainASCII(s) {
		return `"` + s + `"`
	}
	return render(s)
}

// unwrapEnvelope replaces arguments such as {"arguments": {...}} or
// {"name": "click", "arguments": {...}} by their content, when neither key
// is a declared property and the content is what the schema wants: its
// required properties are there or, for a schema that requires none, each
// of its keys is declared or a declared one in another style.
func (g *guider) unwrapEnvelope(m map[string]any) bool {
	var key string
	for k, v := range m {
		switch {
		case envelopeKeys[k] && key == "":
			key = k
		case companionKeys[k]:
			if _, ok := v.(string); !ok {
				return false
			}
		default:
			return false
		}
	}
	if key == "" {
		return false
	}
	sch, ok := g.doc.(map[string]any)
	if !ok {
		return false
	}
	// The schema's names are gathered only for an object that looks like
	// an envelope.
	o := newObjectSchema(sch)
	for k := range m {
		if o.known(k) {
			return false
		}
	}
	content := m[key]
	if s, ok := content.(string); ok {
		// {"name": "click", "arguments": "{\"selector\": ...}"}: the OpenAI
		// tool-call shape, arguments encoded as a string.
		var err error
		if content, err = validate.Decode([]byte(s)); err != nil {
			return false
		}
	}
	c, ok := content.(map[string]any)
	if !ok {
		return false
	}
	req := stringList(sch["required"])
	for _, r := range req {
		if _, ok := c[r]; !ok {
			return false
		}
	}
	if len(req) == 0 && o.props != nil {
		for k := range c {
			if o.known(k) {
				continue
			}
			if _, n := sameWords(k, o.names); n != 1 {
				return false
			}
		}
	}
	g.record(KindUnwrapEnvelope, "", m, c)
	g.root = c
	return true
}
