package repair

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validate"
)

// variants breaks a ground truth in each way that applies to its schema.
func variants(t testing.TB, c corpusCall, closed *validate.Cache) []variant {
	text := string(c.text)
	var out []variant
	add := func(kind string, raw []byte) { out = append(out, variant{kind: kind, raw: raw}) }
	addText := func(kind, s string) { add(kind, quoteJSON(t, s)) }
	addArgs := func(kind string, args map[string]any) { addText(kind, string(mustEncode(t, args))) }

	// Syntax.
	addText("fence", "```json\n"+text+"\n```")
	addText("prose", "Here are the arguments: "+text+"\nLet me know if you need anything else.")
	addText("tokens", "<|python_tag|>"+text+"<|eom_id|>")
	addText("concatenated", text+text)
	add("double-encoded", quoteJSON(t, string(quoteJSON(t, text))))
	add("object-arguments", c.text)
	if len(c.args) > 0 {
		addText("trailing-comma", text[:len(text)-1]+",}")
	}
	if tr, closers, ok := truncate(text); ok {
		// Closing the outermost object is a repair only when every
		// declared property is there (closable); otherwise more members
		// may have followed, and with finish_reason "length" nothing is
		// known to be complete.
		switch {
		case closers > 1:
			addText("truncated-nested", tr)
		case allDeclared(c):
			addText("truncated", tr)
		default:
			addText("truncated-members-missing", tr)
		}
		out = append(out, variant{kind: "truncated-at-length", raw: quoteJSON(t, tr), cutOff: true})
	}
	if has(c.args, func(v any) bool { _, ok := v.(string); return ok }) {
		addText("single-quotes", python(c.args, true))
	}
	if has(c.args, func(v any) bool { _, ok := v.(bool); return ok }) {
		addText("python-literals", python(c.args, false))
	}

	// One property changed, the first in key order to which the kind applies.
	props, _ := c.doc["properties"].(map[string]any)
	keys := slices.Sorted(maps.Keys(c.args))
	change := func(kind string, f func(v any, sch map[string]any) (any, bool)) {
		for _, k := range keys {
			sch, _ := props[k].(map[string]any)
			if nv, ok := f(c.args[k], sch); ok {
				args := maps.Clone(c.args)
				args[k] = nv
				addArgs(kind, args)
				return
			}
		}
	}
	change("stringified-number", func(v any, sch map[string]any) (any, bool) {
		n, ok := v.(json.Number)
		return n.String(), ok && (only1(sch, "integer") || only1(sch, "number"))
	})
	change("stringified-boolean", func(v any, sch map[string]any) (any, bool) {
		b, ok := v.(bool)
		return strconv.FormatBool(b), ok && only1(sch, "boolean")
	})
	change("number-for-string", func(v any, sch map[string]any) (any, bool) {
		s, ok := v.(string)
		if !ok || !only1(sch, "string") || !numText.MatchString(s) {
			return nil, false
		}
		_, err := strconv.ParseFloat(s, 64)
		return json.Number(s), err == nil
	})
	change("stringified-array", func(v any, sch map[string]any) (any, bool) {
		a, ok := v.([]any)
		return string(mustEncode(t, a)), ok && only1(sch, "array")
	})
	change("stringified-object", func(v any, sch map[string]any) (any, bool) {
		m, ok := v.(map[string]any)
		return string(mustEncode(t, m)), ok && only1(sch, "object")
	})
	change("scalar-for-array", func(v any, sch map[string]any) (any, bool) {
		a, ok := v.([]any)
		if !ok || len(a) != 1 || !only1(sch, "array") {
			return nil, false
		}
		_, nested := a[0].([]any)
		return a[0], !nested
	})
	change("enum-case", func(v any, sch map[string]any) (any, bool) {
		s, ok := v.(string)
		members, _ := sch["enum"].([]any)
		if !ok || members == nil {
			return nil, false
		}
		ns := strings.ToUpper(s)
		if ns == s {
			ns = strings.ToLower(s)
		}
		folds := 0
		for _, m := range members {
			if ms, ok := m.(string); ok && strings.EqualFold(ms, s) {
				folds++
			}
			if m == ns {
				return nil, false
			}
		}
		return ns, ns != s && folds == 1
	})
	change("non-numeric-for-number", func(v any, sch map[string]any) (any, bool) {
		_, ok := v.(json.Number)
		return "about that much", ok && (only1(sch, "integer") || only1(sch, "number"))
	})

	// Keys: the first key, in key order, that f changes into a name that
	// fits accepts is renamed.
	names := slices.Collect(maps.Keys(props))
	req := stringList(c.doc["required"])
	sameName := func(_, nk string) bool { _, n := sameWords(nk, names); return n == 1 }
	// A required key written as another word, however close in spelling (a
	// typo, its opposite, its negation), is not mendable: only the model can
	// say which word it meant.
	otherWord := func(k, nk string) bool {
		_, n := sameWords(nk, names)
		return c.doc["patternProperties"] == nil && slices.Contains(req, k) && n == 0
	}
	renameKey := func(kind string, f func(k string) string, fits func(k, nk string) bool) {
		for _, k := range keys {
			nk := f(k)
			if nk == k || props[nk] != nil || !fits(k, nk) {
				continue
			}
			args := maps.Clone(c.args)
			args[nk] = args[k]
			delete(args, k)
			addArgs(kind, args)
			return
		}
	}
	renameKey("camel-case-key", func(k string) string {
		parts := strings.Split(k, "_")
		for i := 1; i < len(parts); i++ {
			if parts[i] != "" {
				parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
			}
		}
		return strings.Join(parts, "")
	}, sameName)
	renameKey("other-case-key", func(k string) string {
		if strings.Contains(k, "_") {
			return k
		}
		if u := strings.ToUpper(k[:1]) + k[1:]; u != k {
			return u
		}
		return strings.ToLower(k)
	}, sameName)
	// Structure.
	if target, ok := wrapTarget(c.doc); ok && len(c.args) == 1 && c.args[target] != nil {
		v := c.args[target]
		addText("bare-value", string(mustEncode(t, v)))
		if s, ok := v.(string); ok && bareToken([]byte(s)) && !json.Valid([]byte(s)) && !literal([]byte(s)) {
			addText("bare-unquoted", s)
		}
	}
	if props["arguments"] == nil {
		addArgs("envelope", map[string]any{"arguments": c.args})
		if props["name"] == nil {
			addArgs("named-envelope", map[string]any{"name": c.tool, "arguments": c.args})
		}
	}
	if s := closedSchema(t, c, closed); s != nil {
		args := maps.Clone(c.args)
		args["debug_trace_id"] = "x"
		out = append(out, variant{kind: "unknown-key", raw: quoteJSON(t, string(mustEncode(t, args))), schema: s})
	}

	renameKey("typo-key", func(k string) string {
		if len(k) < 8 || k[3] == k[4] {
			return k
		}
		b := []byte(k)
		b[3], b[4] = b[4], b[3]
		return string(b)
	}, otherWord)
	renameKey("antonym-key", func(k string) string { return nearMiss(k, swapWord) }, otherWord)
	renameKey("negated-key", func(k string) string { return nearMiss(k, negate) }, otherWord)

	// Not mendable: information is missing or ambiguous.
	var present []string
	for _, r := range req {
		if _, ok := c.args[r]; ok && !slices.Contains(present, r) {
			present = append(present, r)
		}
	}
	if len(present) > 0 {
		args := maps.Clone(c.args)
		delete(args, present[0])
		addArgs("missing-required", args)
	}
	if len(present) > 1 {
		args := maps.Clone(c.args)
		v := args[present[0]]
		delete(args, present[0])
		delete(args, present[1])
		args["value"] = v
		addArgs("key-for-two-properties", args)
	}
	if last := keys; len(last) > 0 {
		if s, ok := c.args[last[len(last)-1]].(string); ok && len(s) >= 4 && strings.HasSuffix(text, `"}`) {
			addText("truncated-in-string", text[:len(text)-4])
		}
	}
	addText("concatenated-different", text+`{"note":"another call"}`)
	return out
}

// antonyms are words a key or a tool name may hold whose opposite is a
// near-miss that means the reverse.
var antonyms = func() map[string]string {
	pairs := [][2]string{
		{"min", "max"}, {"minimum", "maximum"}, {"from", "to"}, {"get", "set"}, {"include", "exclude"},
		{"enable", "disable"}, {"enabled", "disabled"}, {"start", "end"}, {"begin", "end"}, {"before", "after"},
		{"lock", "unlock"}, {"open", "close"}, {"add", "remove"}, {"show", "hide"}, {"input", "output"},
		{"first", "last"}, {"upper", "lower"}, {"allow", "deny"}, {"in", "out"}, {"on", "off"}, {"read", "write"},
		{"old", "new"}, {"src", "dst"}, {"source", "target"}, {"left", "right"}, {"top", "bottom"},
		{"increase", "decrease"}, {"accept", "reject"}, {"ascending", "descending"}, {"asc", "desc"},
		{"sender", "receiver"}, {"buy", "sell"}, {"credit", "debit"}, {"import", "export"}, {"upload", "download"},
		{"encrypt", "decrypt"}, {"push", "pull"}, {"start_date", "end_date"}, {"lat", "lon"}, {"width", "height"},
	}
	m := map[string]string{}
	for _, p := range pairs {
		m[p[0]], m[p[1]] = p[1], p[0]
	}
	return m
}()

// nearMiss applies f to the first word of a snake_case key that it
// changes, returning the key unchanged when it changes none.
func nearMiss(k string, f func(w string) string) string {
	words := strings.Split(k, "_")
	for i, w := range words {
		if nw := f(w); nw != w {
			words[i] = nw
			return strings.Join(words, "_")
		}
	}
	return k
}

// swapWord returns the opposite of a word, keeping its case.
func swapWord(w string) string {
	o, ok := antonyms[strings.ToLower(w)]
	switch {
	case !ok:
		return w
	case w == strings.ToUpper(w):
		return strings.ToUpper(o)
	case w[:1] == strings.ToUpper(w[:1]):
		return strings.ToUpper(o[:1]) + o[1:]
	}
	return o
}

// negate adds or strips a negating prefix (un-, dis-, non-) on a word of
// three letters or more.
func negate(w string) string {
	if len(w) < 3 || strings.ToLower(w) != w {
		return w
	}
	for _, p := range []string{"un", "dis", "non"} {
		if rest, ok := strings.CutPrefix(w, p); ok && len(rest) >= 3 {
			return rest
		}
	}
	return "un" + w
}

func quoteJSON(t testing.TB, s string) []byte { return mustEncode(t, s) }

func mustEncode(t testing.TB, v any) []byte {
	b, err := encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// only1 reports whether a schema declares exactly the type typ.
func only1(sch map[string]any, typ string) bool {
	ts := types(sch)
	return len(ts) == 1 && ts[0] == typ
}

func has(v any, pred func(any) bool) bool {
	if pred(v) {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if has(e, pred) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if has(e, pred) {
				return true
			}
		}
	}
	return false
}

// truncate drops the closing brackets at the end of a JSON text, when what
// remains ends with a complete value: a number there could have had more
// digits, so it is not a mendable truncation.
func truncate(text string) (string, int, bool) {
	tr := strings.TrimRight(text, "}]")
	if tr == text || tr == "" {
		return "", 0, false
	}
	last := tr[len(tr)-1]
	return tr, len(text) - len(tr), last == '"' || last == 'e' || last == 'l' || last == '[' || last == '{'
}

// allDeclared reports whether the ground truth has every property its
// schema declares, and the schema admits no others worth reading: then
// nothing can be missing after its last member.
func allDeclared(c corpusCall) bool {
	props, _ := c.doc["properties"].(map[string]any)
	_, patterns := c.doc["patternProperties"]
	_, extra := c.doc["additionalProperties"].(map[string]any)
	if props == nil || patterns || extra {
		return false
	}
	for k := range props {
		if _, ok := c.args[k]; !ok {
			return false
		}
	}
	return true
}

// python writes v the way Python's repr writes a dict: True, False, None,
// and with quotes, single-quoted strings.
func python(v any, quotes bool) string {
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			b.WriteByte('{')
			for i, k := range slices.Sorted(maps.Keys(v)) {
				if i > 0 {
					b.WriteString(", ")
				}
				write(k)
				b.WriteString(": ")
				write(v[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range v {
				if i > 0 {
					b.WriteString(", ")
				}
				write(e)
			}
			b.WriteByte(']')
		case bool:
			b.WriteString(map[bool]string{true: "True", false: "False"}[v])
		case nil:
			b.WriteString("None")
		case string:
			q, _ := encode(v)
			if !quotes {
				b.Write(q)
				return
			}
			inner := strings.ReplaceAll(string(q[1:len(q)-1]), `\"`, `"`)
			inner = strings.ReplaceAll(inner, `'`, `\'`)
			b.WriteString("'" + inner + "'")
		default:
			q, _ := encode(v)
			b.Write(q)
		}
	}
	write(v)
	return b.String()
}

// closedSchema is the call's schema with additionalProperties false at the
// root, when the ground truth still validates against it.
func closedSchema(t testing.TB, c corpusCall, cache *validate.Cache) *validate.Schema {
	doc := maps.Clone(c.doc)
	doc["additionalProperties"] = false
	s, err := cache.Get(mustEncode(t, doc))
	if err != nil || s.Validate(c.args) != nil {
		return nil
	}
	return s
}
