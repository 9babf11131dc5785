package repair

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolguard/toolguard/validate"
)

// KeywordUnknown is the keyword of the errors that name a key the schema
// does not declare, next to what it declares ("unknown property
// "min_price"; tool "search" declares "max_price""). They are hints for the
// model, added to the validation errors of an object that lacks a required
// property or holds one it may not: a key that is not a declared name in
// another style is never renamed, and the model, told what exists, can
// correct itself in one round.
const KeywordUnknown = "unknown-property"

// Bounds of a hint: the unknown keys and declared names it quotes, and the
// bytes of each.
const (
	maxHintKeys  = 8
	maxHintNames = 20
	maxHintName  = 64
)

// unknownKeys returns a hint for each object of args whose required or
// additionalProperties errors come with keys its schema does not declare.
// tool names the tool for the hint, "" for none.
func unknownKeys(args any, errs []validate.Error, s *validate.Schema, tool string) []validate.Error {
	if s == nil {
		return nil
	}
	var out []validate.Error
	seen := map[string]bool{}
	for _, e := range errs {
		if e.Keyword != "required" && e.Keyword != "additionalProperties" {
			continue
		}
		sp, ok := strings.CutSuffix(e.SchemaPath, "/"+e.Keyword)
		if !ok || seen[e.Path] {
			continue
		}
		seen[e.Path] = true
		obj, ok := at(args, e.Path)
		m, isObject := obj.(map[string]any)
		sch, found := at(s.Doc(), sp)
		schMap, isMap := sch.(map[string]any)
		if !ok || !isObject || !found || !isMap {
			continue
		}
		o := newObjectSchema(schMap)
		var unknown []string
		for k := range m {
			if !o.known(k) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) == 0 || len(o.names) == 0 {
			continue
		}
		sort.Strings(unknown)
		noun := "property"
		if len(unknown) > 1 {
			noun = "properties"
		}
		out = append(out, validate.Error{
			Path:    e.Path,
			Keyword: KeywordUnknown,
			Message: fmt.Sprintf("unknown %s %s; %s declares %s", noun, quoteList(unknown, maxHintKeys),
				declarer(e.Path, tool), quoteList(o.names, maxHintNames)),
		})
	}
	return out
}

// declarer says whose property list a hint gives.
func declarer(path, tool string) string {
	switch {
	case path != "":
		return "the object at " + clipName(path)
	case tool != "":
		return "tool " + quoteList([]string{tool}, 1)
	}
	return "the schema"
}

// clipName bounds a name quoted in a message, cutting at a character
// boundary.
func clipName(s string) string {
	if len(s) <= maxHintName {
		return s
	}
	return strings.ToValidUTF8(s[:maxHintName], "") + "..."
}
