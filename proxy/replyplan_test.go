package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// replyOutcome is what toolguard makes of a chat completion read through
// r, failing by an error and by dropping calls: the refusal of its reading,
// or the tokens counted, the ladder's status, bytes, error and outcome,
// with each call as it was checked.
func replyOutcome(t testing.TB, reply []byte, r wire.Repeats) string {
	t.Helper()
	var b strings.Builder
	// Each reading reads the reply against the template the one before it
	// left, or made: the same outcome.
	for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
		ex := fuzzExchange(t, onFailure)
		if err := ex.req.ReadReply(reply, r); err != nil {
			return "refused: " + err.Error()
		}
		ex.noteUsage(reply, false)
		status, out, err := ex.run(reply)
		fmt.Fprintf(&b, "%s: tokens %v, status %d, error %v, outcome %s\n%s\n", onFailure, ex.tokens, status, err, ex.x.Outcome, out)
		for _, c := range ex.x.Calls {
			fmt.Fprintf(&b, "call %q %q tool %v args %q raw %q as sent %q edits %v errors %v unchecked %v\n",
				c.ID, c.Name, c.Tool != nil, c.Args, c.RawArgs, c.Raw, c.Edits, c.Errs, c.Unchecked)
		}
	}
	return b.String()
}

// scalarSpans are where body's strings and numbers that are values (not
// member names) are, in order.
func scalarSpans(body []byte) []wire.Span {
	var out []wire.Span
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String || v.Type == gjson.Number:
			if s, ok := wire.SpanOf(body, v); ok {
				out = append(out, s)
			}
		case v.IsObject() || v.IsArray():
			v.ForEach(func(_, c gjson.Result) bool { walk(c); return true })
		}
	}
	walk(gjson.ParseBytes(body))
	return out
}

// withValue is body with its string or number value i (of scalarSpans)
// replaced by v, as JSON text when raw and as a JSON string otherwise; body
// unchanged when it has no value i.
func withValue(body []byte, i int, v string, raw bool) []byte {
	spans := scalarSpans(body)
	if i >= len(spans) {
		return body
	}
	if !raw {
		v = wire.Quote(v)
	}
	s := spans[i]
	return []byte(string(body[:s.Start]) + v + string(body[s.End:]))
}

// TestReplyPlan: a reply that repeats the client's last with other values
// (read at the places the last one's walk found, see chat's replyPlan) is
// checked, refused, mended and written as the same reply walked in full.
func TestReplyPlan(t *testing.T) {
	valid := faulty.Completion(`{"selector":"#a"}`)
	two := strings.Replace(valid, `"tool_calls":[`, `"tool_calls":[{"id":"call_2","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#b\"}"}},`, 1)
	withContent := strings.Replace(valid, `"content":null`, `"content":"Clicking."`, 1)
	for _, first := range []string{valid, two, withContent, faulty.Completion(`{"Selector": "x"}`)} {
		spans := scalarSpans([]byte(first))
		if len(spans) < 8 {
			t.Fatalf("%d values in %s", len(spans), first)
		}
		for i := range len(spans) + 1 {
			for _, v := range []struct {
				v   string
				raw bool
			}{
				{"click", false}, {"clack", false}, {"length", false}, {"stop", false},
				{`{"selector":"#c"}`, false}, {`{"Selector":"#c"}`, false}, {`{"selector":1}`, false}, {`{"selector":"#c"`, false},
				{"", false}, {"line\nbreak", false}, {`"cl\u0069ck"`, true}, {`"leng\u0074h"`, true}, {`7`, true}, {`-0.5e3`, true},
				{`null`, true}, {`"\ud800"`, true}, {`"a`, true}, {`{"x":1}`, true}, {"\"\xff\"", true},
			} {
				next := withValue([]byte(first), i, v.v, v.raw)
				want := replyOutcome(t, next, wire.Repeats{})
				rep := wire.NewTemplates().For(1)
				replyOutcome(t, []byte(first), rep)
				if got := replyOutcome(t, next, rep); got != want {
					t.Fatalf("value %d of %s as %s:\nread against the one before:\n%s\nread in full:\n%s", i, first, v.v, got, want)
				}
			}
		}
	}
}

// FuzzReplyPlan: any reply, then one of its values changed, read as a
// client's replies are (the second against the first, and the plan made
// from it), is what the second reply is read in full.
func FuzzReplyPlan(f *testing.F) {
	seedRecordings(f, func(s string) { f.Add([]byte(s), uint8(0), "x", false) })
	for i := range 16 {
		f.Add([]byte(faulty.Completion(`{"selector":"#a"}`)), uint8(i), "length", false)
		f.Add([]byte(faulty.Completion(`{"Selector": "x"}`)), uint8(i), `"cl\u0069ck"`, true)
	}
	f.Fuzz(func(t *testing.T, first []byte, i uint8, v string, raw bool) {
		if len(first) > 8<<10 {
			return
		}
		next := withValue(first, int(i), v, raw)
		want := replyOutcome(t, next, wire.Repeats{})
		rep := wire.NewTemplates().For(1)
		replyOutcome(t, first, rep)
		if got := replyOutcome(t, next, rep); got != want {
			t.Fatalf("read against the one before:\n%s\nread in full:\n%s", got, want)
		}
	})
}
