package chat

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

// turnsRead is what Usage and Turns find in reply, read through r as a
// reply to a request declaring click: the token counts, each turn's fields
// and calls, or the error; and whether the reply was read at a plan (its
// usage too, when the plan holds it).
func turnsRead(t *testing.T, reply string, r wire.Repeats) (string, bool) {
	t.Helper()
	req := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"click",` +
		`"parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]}`
	d := ladder.NewDeclarations()
	m, err := Read([]byte(req), nil, d, wire.Repeats{})
	if err != nil {
		t.Fatal(err)
	}
	q := NewRequest(m, d, false)
	body := []byte(reply)
	if err := q.ReadReply(body, r); err != nil {
		return "refused: " + err.Error(), false
	}
	p, planned := q.reply.Of(body).Plan().(*replyPlan)
	planned = planned && p.usage != nil
	in, out, ok := q.Usage(body)
	cfg := policy.Default()
	x := &ladder.Exchange{Tools: q.tools, Policy: &cfg, Schemas: validate.NewCache(16),
		Work: validate.NewBudget(ladder.RequestSteps), Log: slog.New(slog.DiscardHandler), Ctx: context.Background()}
	turns, err := q.Turns(context.Background(), x, body)
	var b strings.Builder
	fmt.Fprintf(&b, "usage %d %d %v; error %v, %d calls\n", in, out, ok, err, len(x.Calls))
	for _, tt := range turns {
		w := turnOf(tt)
		fmt.Fprintf(&b, "turn %d %q at %d:%d legacy %v output %v converted %v rest %q content %q\n",
			tt.Index, w.raw, w.start, w.end, w.legacy, w.output, w.converted, w.rest, w.lastContent)
		for _, c := range tt.Calls {
			fmt.Fprintf(&b, "  call %q %q args %q raw %q as sent %q edits %v errors %v\n", c.ID, c.Name, c.Args, c.RawArgs, c.Raw, c.Edits, c.Errs)
		}
		for _, md := range w.mended {
			fmt.Fprintf(&b, "  mended %q name at %v args at %v\n", md.Call.ID, md.Name, md.Args)
		}
	}
	return b.String(), planned
}

// chatReply is a chat completion of one choice whose message has the
// content and calls given, each call its id, name and arguments as JSON.
func chatReply(content, finish string, calls ...[3]string) string {
	var cs []string
	for _, c := range calls {
		cs = append(cs, `{"id":`+c[0]+`,"type":"function","function":{"name":`+c[1]+`,"arguments":`+c[2]+`}}`)
	}
	return `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` +
		content + `,"tool_calls":[` + strings.Join(cs, ",") + `]},"logprobs":null,"finish_reason":` + finish + `}],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`
}

// TestTurnsPlanned: a reply that repeats the one before it with other
// values is read at the places the walk of the one before found (a
// replyPlan), and its turns are those the walk finds in it.
func TestTurnsPlanned(t *testing.T) {
	call := func(id, name, args string) [3]string { return [3]string{id, name, args} }
	valid := call(`"call_1"`, `"click"`, `"{\"selector\":\"#a\"}"`)
	twoChoices := strings.Replace(chatReply(`null`, `"tool_calls"`, valid), `}],"usage"`,
		`},{"index":1,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage"`, 1)
	firsts := []struct {
		reply string
		plans bool // a plan is made of it
	}{
		{chatReply(`null`, `"tool_calls"`, valid), true},
		{chatReply(`"Clicking."`, `"tool_calls"`, valid), true},
		{chatReply(`null`, `"length"`, valid), true},
		{chatReply(`[{"type":"text","text":"a"}]`, `null`, valid), true},
		{chatReply(`null`, `"tool_calls"`, valid, call(`"call_2"`, `"click"`, `"{\"Selector\": \"#b\"}"`)), true},
		{twoChoices, false},
		{strings.Replace(twoChoices, `"content":"Done."`, `"content":"Done.","tool_calls":[]`, 1), false},
		// Token counts absent, escaped, of another kind, in another shape
		// (usage read in full: the plan holds counts that are numbers or
		// strings).
		{strings.Replace(chatReply(`null`, `"tool_calls"`, valid), `"prompt_tokens":20,`, ``, 1), true},
		{strings.Replace(chatReply(`null`, `"tool_calls"`, valid), `"completion_tokens"`, `"completion_t\u006fkens"`, 1), true},
		{strings.Replace(chatReply(`null`, `"tool_calls"`, valid), `"completion_tokens":5`, `"completion_tokens":"5"`, 1), true},
		{strings.Replace(chatReply(`null`, `"tool_calls"`, valid), `"prompt_tokens":20`, `"prompt_tokens":{"n":20}`, 1), false},
		{strings.Replace(chatReply(`null`, `"tool_calls"`, valid), `"completion_tokens":5`, `"completion_tokens":5.5e1`, 1), true},
		{chatReply(`null`, `"tool_calls"`, valid)[:strings.Index(chatReply(`null`, `"tool_calls"`, valid), `,"usage"`)] + `,"usage":null}`, true},
		{chatReply(`null`, `"tool_calls"`, valid)[:strings.Index(chatReply(`null`, `"tool_calls"`, valid), `,"usage"`)] + `}`, true},
	}
	// Each reply after the first: a value replaced, and whether the
	// reply still repeats the first's template (values of the same kinds
	// at the same places) and is read at its plan.
	type next struct {
		from, to string
		planned  bool
	}
	nexts := []next{
		{`"call_1"`, `"call_9"`, true}, {`"call_1"`, `"c\u0061ll_1"`, true},
		{`"click"`, `"clack"`, true}, {`"click"`, `"Click"`, true}, {`"click"`, `"cl\u0069ck"`, true}, {`"click"`, `""`, true},
		{`"{\"selector\":\"#a\"}"`, `"{\"Selector\":\"#a\"}"`, true}, {`"{\"selector\":\"#a\"}"`, `"{\"selector\":\"#a\""`, true},
		{`"{\"selector\":\"#a\"}"`, `"{}"`, true}, {`"{\"selector\":\"#a\"}"`, `"\"#a\""`, true},
		{`"{\"selector\":\"#a\"}"`, `"{\"selector\":\"\\u0023a\"}"`, true},
		{`"finish_reason":"tool_calls"`, `"finish_reason":"length"`, true}, {`"finish_reason":"tool_calls"`, `"finish_reason":"leng\u0074h"`, true},
		{`"length"`, `"stop"`, true},
		{`"Clicking."`, `"Other text, longer than the first."`, true}, {`"Clicking."`, `""`, true}, {`"Clicking."`, `"a\nb"`, true},
		{`"prompt_tokens":20`, `"prompt_tokens":2000`, true}, {`"completion_tokens":5`, `"completion_tokens":7`, true},
		{`"completion_tokens":"5"`, `"completion_tokens":"70"`, true}, {`"n":20`, `"n":21`, true}, {`5.5e1`, `-1e3`, true},
		// Bytes a template holds as they were: read in full.
		{`"text":"a"`, `"text":"b"`, false}, {`"click"`, `7`, false}, {`"call_1"`, `null`, false},
	}
	n := 0
	for _, f := range firsts {
		first := f.reply
		for _, nx := range append([]next{{"", "", true}}, nexts...) {
			reply := strings.Replace(first, nx.from, nx.to, 1)
			if nx.from != "" && reply == first {
				continue
			}
			want, _ := turnsRead(t, reply, wire.Repeats{})
			rep := wire.NewTemplates().For(1)
			turnsRead(t, first, rep)
			got, planned := turnsRead(t, reply, rep)
			if got != want {
				t.Fatalf("%s after %s:\nread against the one before:\n%s\nwalked:\n%s", reply, first, got, want)
			}
			if planned != (nx.planned && f.plans) {
				t.Fatalf("%s after %s: read at a plan %v, want %v", reply, first, planned, !planned)
			}
			n++
		}
	}
	if n < 60 {
		t.Fatalf("%d replies read", n)
	}
}
