package proxy

import (
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/repair"
)

// mendHistory applies the syntax step of the ladder to the tool calls of the
// assistant messages a client sends back: a conversation whose history holds
// malformed arguments (truncated, fenced, an object instead of a string) is
// rejected by some providers on every later turn. Only form is mended, never
// meaning; arguments that cannot be made a JSON object are left as they are.
// It returns the body unchanged, byte for byte, when nothing needed mending.
func mendHistory(body []byte) ([]byte, []repair.Edit) {
	var edits []repair.Edit
	type fix struct{ path, args string }
	var fixes []fix
	gjson.GetBytes(body, "messages").ForEach(func(mi, m gjson.Result) bool {
		if m.Get("role").String() != "assistant" {
			return true
		}
		prefix := "messages." + mi.String() + "."
		check := func(path string, args gjson.Result) {
			if args.Type == gjson.String && gjson.Valid(args.Str) && gjson.Parse(args.Str).IsObject() {
				return
			}
			raw := args.Raw
			if !args.Exists() {
				raw = `""`
			}
			mended, e, err := repair.Syntax([]byte(raw))
			if err != nil || len(e) == 0 {
				return
			}
			edits = append(edits, e...)
			fixes = append(fixes, fix{path, jsonString(string(mended))})
		}
		if tcs := m.Get("tool_calls"); tcs.IsArray() {
			tcs.ForEach(func(ci, c gjson.Result) bool {
				if c.IsObject() {
					check(prefix+"tool_calls."+strconv.Itoa(int(ci.Int()))+".function.arguments", c.Get("function.arguments"))
				}
				return true
			})
		}
		if fc := m.Get("function_call"); fc.IsObject() {
			check(prefix+"function_call.arguments", fc.Get("arguments"))
		}
		return true
	})
	for _, f := range fixes {
		body = patch(body, f.path, f.args)
	}
	return body, edits
}

// editSummary names each edit by kind and path, without the values (they are
// argument values, which the log may not hold).
func editSummary(edits []repair.Edit) []string {
	out := make([]string, len(edits))
	for i, e := range edits {
		out[i] = string(e.Kind) + " " + e.Path
	}
	return out
}
