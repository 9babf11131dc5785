package proxy

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

// errorDetail is one validation error as the client and the model see it:
// where (a JSON pointer into the arguments) and what was expected and found.
type errorDetail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// errorDetails renders a call's errors. A missing property is reported at
// its own path (/selector), not at the object that lacks it, and each error
// names the value found where there is one.
func errorDetails(c *call) []errorDetail {
	var out []errorDetail
	for _, e := range c.errs {
		switch {
		case e.Keyword == "required" && strings.HasPrefix(e.Message, "missing properties: "):
			for _, name := range quotedNames(strings.TrimPrefix(e.Message, "missing properties: ")) {
				out = append(out, errorDetail{Path: validate.PointerChild(e.Path, name), Message: "missing required property"})
			}
		case e.Keyword == "additionalProperties" && strings.HasPrefix(e.Message, "additionalProperties "):
			names := strings.TrimSuffix(strings.TrimPrefix(e.Message, "additionalProperties "), " not allowed")
			for _, name := range quotedNames(names) {
				out = append(out, errorDetail{Path: validate.PointerChild(e.Path, name), Message: "property not allowed by the schema (additionalProperties is false)"})
			}
		default:
			msg := e.Message
			if e.Keyword != "syntax" && e.Keyword != "tool" {
				if v := valueAt(c.args, e.Path); v != "" {
					msg += "; found " + wire.Clip(v, 120)
				}
			}
			out = append(out, errorDetail{Path: pointerOrRoot(e.Path), Message: msg})
		}
	}
	return out
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// quotedNames splits the library's "'a', 'b'" lists.
func quotedNames(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ", ") {
		out = append(out, strings.Trim(part, "'"))
	}
	return out
}

// valueAt returns the raw JSON at a JSON pointer inside args, "" if none.
func valueAt(args []byte, pointer string) string {
	if pointer == "" {
		if gjson.ValidBytes(args) {
			return string(args)
		}
		return ""
	}
	var path []string
	for _, tok := range validate.PointerTokens(pointer) {
		path = append(path, gjson.Escape(tok))
	}
	return gjson.GetBytes(args, strings.Join(path, ".")).Raw
}
