package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// maxHistoryFixes bounds the calls mended in one request's history; the
// calls past it go upstream as the client sent them.
const maxHistoryFixes = 256

// maxHistoryMendBytes bounds the arguments handed to the mender in one
// request's history, whether or not it mends them. The call count alone is
// no bound on the work: some shapes cost a few hundred nanoseconds a byte
// (a fenced array of half a million numbers, about 0.5 s a MiB), and a
// 32 MiB history holds thirty such calls. One call of the largest size that
// is mended (repair.MaxInput) fits.
const maxHistoryMendBytes = repair.MaxInput

// MendHistory applies the syntax step of the ladder to the tool calls of the
// assistant messages a client sends back: a conversation whose history holds
// malformed arguments (truncated, fenced, an object instead of a string) is
// rejected by some providers on every later turn. Only form is mended, never
// meaning; arguments that cannot be made a JSON object are left as they are.
// It returns the body unchanged, byte for byte, when nothing needed mending.
// The mended body is built in one pass (the work is linear in the body
// however many calls are mended), and at most maxHistoryFixes calls and
// maxHistoryMendBytes of arguments are mended, calls in order: history
// mending is a courtesy to the provider, and a call past either bound goes
// as the client sent it (a smaller call after one that did not fit the
// bytes left is still mended). A mended body that cannot be built is an
// error.
func MendHistory(body []byte) ([]byte, []repair.Edit, error) {
	var edits []repair.Edit
	var fixes []wire.Splice
	budget := maxHistoryMendBytes
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() != "assistant" {
			return true
		}
		check := func(args gjson.Result, at gjson.Result, field string) {
			if len(fixes) == maxHistoryFixes {
				return
			}
			if args.Type == gjson.String && gjson.Valid(args.Str) && gjson.Parse(args.Str).IsObject() {
				return
			}
			raw := args.Raw
			if !args.Exists() {
				raw = `""`
			}
			if len(raw) > budget {
				return
			}
			budget -= len(raw)
			mended, e, err := repair.Syntax([]byte(raw))
			if err != nil || len(e) == 0 {
				return
			}
			val := wire.Quote(string(mended))
			if args.Exists() {
				fixes = append(fixes, wire.Splice{Start: args.Index, End: args.Index + len(args.Raw), With: []byte(val)})
				edits = append(edits, e...)
				return
			}
			// No arguments member: add one at the start of the object
			// that lacks it (a call with no function object is left).
			obj := at
			if field != "" {
				obj = at.Get(field)
			}
			if obj.IsObject() {
				sep := ","
				if strings.TrimSpace(obj.Raw[1:len(obj.Raw)-1]) == "" {
					sep = ""
				}
				fixes = append(fixes, wire.Splice{Start: obj.Index + 1, End: obj.Index + 1, With: []byte(`"arguments":` + val + sep)})
				edits = append(edits, e...)
			}
		}
		if tcs := m.Get("tool_calls"); tcs.IsArray() {
			tcs.ForEach(func(_, c gjson.Result) bool {
				if c.IsObject() {
					check(c.Get("function.arguments"), c, "function")
				}
				return true
			})
		}
		if fc := m.Get("function_call"); fc.IsObject() {
			check(fc.Get("arguments"), fc, "")
		}
		return true
	})
	for _, f := range fixes {
		if f.Start <= 0 {
			return nil, nil, errors.New("mend history: the position of a call's arguments is unknown")
		}
	}
	// A message's function_call may come before its tool_calls.
	slices.SortFunc(fixes, func(a, b wire.Splice) int { return a.Start - b.Start })
	out, err := wire.ApplySplices(body, fixes)
	if err != nil {
		return nil, nil, fmt.Errorf("mend history: %w", err)
	}
	return out, edits, nil
}
