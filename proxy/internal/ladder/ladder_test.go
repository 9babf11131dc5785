package ladder

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

const clickSchema = `{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"],"additionalProperties":false}`

// newExchange is an exchange for a request declaring click and scroll,
// under cfg.
func newExchange(cfg policy.Config) *Exchange {
	c := &cfg
	ts := &Tools{}
	ts.Add("click", []byte(clickSchema))
	ts.Add("scroll", []byte(`{"type":"object","properties":{"by":{"type":"integer"}},"required":["by"]}`))
	return &Exchange{
		Tools:   ts,
		Policy:  c,
		Schemas: validate.NewCache(16),
		Work:    validate.NewBudget(RequestSteps),
		Log:     slog.New(slog.DiscardHandler),
		Ctx:     context.Background(),
	}
}

// turn checks the sent calls as a first reply and makes them a turn.
func turn(t *testing.T, x *Exchange, sent ...Sent) *Turn {
	t.Helper()
	calls, err := x.CheckAll(context.Background(), sent, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	x.Calls = append(x.Calls, calls...)
	return &Turn{Calls: calls, Last: calls}
}

func click(id, args string) Sent { return Sent{ID: id, Name: "click", Args: quote(args)} }

func quote(s string) string { return wire.Quote(s) }

// asker answers each re-ask with the next answer of its script (the last
// repeats), or fails with err; it records what it was asked.
type asker struct {
	script   [][]Sent
	err      error
	asked    []int // the attempt of each re-ask
	fallback []bool
	force    []string
	x        *Exchange
}

func (a *asker) Ask(ctx context.Context, t *Turn, attempt int) (Answer, error) {
	a.asked = append(a.asked, attempt)
	_, fb := a.x.FallbackModel(t)
	a.fallback = append(a.fallback, fb)
	name, _ := a.x.ForceTool(t)
	a.force = append(a.force, name)
	if a.err != nil {
		return Answer{}, a.err
	}
	return Answer{Sent: a.script[min(len(a.asked)-1, len(a.script)-1)]}, nil
}

func TestCheck(t *testing.T) {
	x := newExchange(policy.Default())
	tests := []struct {
		name      string
		give      Sent
		wantValid bool
		wantEdits int
		wantArgs  string
	}{
		{name: "valid", give: click("a", `{"selector":"#a"}`), wantValid: true, wantArgs: `{"selector":"#a"}`},
		{name: "key in another case", give: click("a", `{"Selector":"#a"}`), wantValid: true, wantEdits: 1, wantArgs: `{"selector":"#a"}`},
		{name: "key as another word", give: click("a", `{"element":"#a"}`), wantValid: false, wantArgs: `{"element":"#a"}`},
		{name: "name as another word", give: Sent{ID: "a", Name: "unclick", Args: quote(`{"selector":"#a"}`)}, wantValid: false},
		{name: "bare string", give: click("a", `"#a"`), wantValid: true, wantEdits: 1, wantArgs: `{"selector":"#a"}`},
		{name: "object not string", give: Sent{ID: "a", Name: "click", Args: `{"selector":"#a"}`}, wantValid: true, wantEdits: 1, wantArgs: `{"selector":"#a"}`},
		{name: "no arguments", give: Sent{ID: "a", Name: "click"}, wantValid: false},
		{name: "missing required", give: click("a", `{}`), wantValid: false, wantArgs: `{}`},
		{name: "undeclared", give: Sent{ID: "a", Name: "type", Args: quote(`{}`)}, wantValid: false, wantArgs: `{}`},
		{name: "near-miss name", give: Sent{ID: "a", Name: "functions.click", Args: quote(`{"selector":"#a"}`)}, wantValid: true, wantEdits: 1, wantArgs: `{"selector":"#a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := x.Check(tt.give, 0, true, false)
			if c.Valid() != tt.wantValid || len(c.Edits) != tt.wantEdits {
				t.Fatalf("valid %v with %d edits (%v, errors %v), want %v with %d", c.Valid(), len(c.Edits), c.Edits, c.Errs, tt.wantValid, tt.wantEdits)
			}
			if tt.wantArgs != "" && string(c.Args) != tt.wantArgs {
				t.Errorf("args %s, want %s", c.Args, tt.wantArgs)
			}
			if want := cmp.Or(tt.give.Args, `""`); c.RawArgs != want {
				t.Errorf("RawArgs %s, want what the model sent: %s", c.RawArgs, want)
			}
		})
	}
	if c := x.Check(click("a", `{"Selector":"#a"}`), 0, false, false); c.Valid() {
		t.Errorf("without mend, a near miss is invalid")
	}
}

func TestSettle(t *testing.T) {
	good := []Sent{click("b", `{"selector":"#b"}`)}
	bad := []Sent{click("b", `{}`)}
	tests := []struct {
		name        string
		maxReasks   int
		first       []Sent
		script      [][]Sent
		err         error
		wantAsked   int
		wantValid   bool
		wantCalls   int // calls of the turn at the end
		wantOutcome Outcome
		wantGaveUp  bool
	}{
		{name: "valid needs no re-ask", maxReasks: 2, first: good, wantValid: true, wantCalls: 1, wantOutcome: OutcomeValid},
		{name: "repaired needs no re-ask", maxReasks: 2, first: []Sent{click("a", `{"Selector":"#a"}`)}, wantValid: true, wantCalls: 1, wantOutcome: OutcomeRepaired},
		{name: "corrected on the first re-ask", maxReasks: 2, first: bad, script: [][]Sent{good}, wantAsked: 1, wantValid: true, wantCalls: 1, wantOutcome: OutcomeReasked},
		{name: "never corrects: the budget bounds it", maxReasks: 3, first: bad, script: [][]Sent{bad}, wantAsked: 3, wantCalls: 1, wantOutcome: OutcomeFailed},
		{name: "no budget", maxReasks: 0, first: bad, wantCalls: 1, wantOutcome: OutcomeFailed},
		{name: "answers without calls", maxReasks: 2, first: bad, script: [][]Sent{nil}, wantAsked: 2, wantCalls: 1, wantOutcome: OutcomeFailed},
		{name: "a failing re-ask stops the asking", maxReasks: 3, first: bad, err: errors.New("status 500"), wantAsked: 1, wantCalls: 1, wantOutcome: OutcomeFailed, wantGaveUp: true},
		{
			name: "valid calls are kept, and not doubled when sent again", maxReasks: 2,
			first:     []Sent{click("a", `{"selector":"#a"}`), click("b", `{}`)},
			script:    [][]Sent{{click("a2", `{"selector":"#a"}`), click("b2", `{"selector":"#b"}`)}},
			wantAsked: 1, wantValid: true, wantCalls: 2, wantOutcome: OutcomeReasked,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := policy.Default()
			cfg.MaxReasks = tt.maxReasks
			x := newExchange(cfg)
			tn := turn(t, x, tt.first...)
			a := &asker{script: tt.script, err: tt.err, x: x}
			if err := x.Settle(context.Background(), []*Turn{tn}, a); err != nil {
				t.Fatal(err)
			}
			if len(a.asked) != tt.wantAsked || x.Reasks != tt.wantAsked {
				t.Errorf("asked %d times (Reasks %d), want %d", len(a.asked), x.Reasks, tt.wantAsked)
			}
			if tn.Invalid() == tt.wantValid {
				t.Errorf("invalid %v, want %v", tn.Invalid(), !tt.wantValid)
			}
			if len(tn.Calls) != tt.wantCalls {
				t.Errorf("%d calls, want %d", len(tn.Calls), tt.wantCalls)
			}
			if got := x.Decide(tn.Invalid()); got != tt.wantOutcome {
				t.Errorf("outcome %s, want %s", got, tt.wantOutcome)
			}
			if (x.GaveUp != nil) != tt.wantGaveUp {
				t.Errorf("GaveUp %v, want set %v", x.GaveUp, tt.wantGaveUp)
			}
		})
	}
}

// TestSettleLastReask: the fallback and the forced tool choice apply to the
// last re-ask only.
func TestSettleLastReask(t *testing.T) {
	cfg := policy.Default()
	cfg.MaxReasks = 3
	cfg.FallbackModel = "strong"
	if err := cfg.ToolPolicies.UnmarshalText([]byte("click:force_tool_choice=true,fallback=true")); err != nil {
		t.Fatal(err)
	}
	x := newExchange(cfg)
	tn := turn(t, x, click("a", `{}`))
	a := &asker{script: [][]Sent{{click("a", `{}`)}}, x: x}
	if err := x.Settle(context.Background(), []*Turn{tn}, a); err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, false, true}; !slices.Equal(a.fallback, want) {
		t.Errorf("fallback per re-ask %v, want %v", a.fallback, want)
	}
	if want := []string{"", "", "click"}; !slices.Equal(a.force, want) {
		t.Errorf("forced tool per re-ask %q, want %q", a.force, want)
	}
}

// TestSettleStopsWhenTheClientLeaves: no re-ask is made for a client that
// is gone.
func TestSettleStopsWhenTheClientLeaves(t *testing.T) {
	x := newExchange(policy.Default())
	tn := turn(t, x, click("a", `{}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := &asker{x: x}
	if err := x.Settle(ctx, []*Turn{tn}, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(a.asked) != 0 {
		t.Errorf("asked %d times", len(a.asked))
	}
}

// TestWorkBudget: past the request's validation budget, spent by the calls
// before it, a call is not passed unchecked: it is invalid, and no re-ask is
// made, since its calls could not be checked either.
func TestWorkBudget(t *testing.T) {
	x := newExchange(policy.Default())
	x.Work = validate.NewBudget(0)
	tn := turn(t, x, click("a", `{"selector":"#a"}`))
	if !tn.Invalid() || tn.Calls[0].Unchecked || !x.Spent {
		t.Fatalf("call %+v: want invalid, the budget spent", tn.Calls[0])
	}
	a := &asker{x: x}
	if err := x.Settle(context.Background(), []*Turn{tn}, a); err != nil {
		t.Fatal(err)
	}
	if len(a.asked) != 0 || x.GaveUp == nil {
		t.Errorf("asked %d times (gave up: %v), want none and why", len(a.asked), x.GaveUp)
	}
	if got := x.Decide(true); got != OutcomeFailed {
		t.Errorf("outcome %s, want failed", got)
	}
}

// TestMendBound: the calls of a request are mended up to MaxMendBytes of
// arguments in all; the calls past it are checked, not mended.
func TestMendBound(t *testing.T) {
	x := newExchange(policy.Default())
	fenced := "```json\n{\"selector\": \"" + strings.Repeat("a", MaxMendBytes/3) + "\"}\n```"
	var mended []bool
	for range 4 {
		c := x.Check(click("a", fenced), 0, true, false)
		mended = append(mended, c.Valid())
	}
	if want := []bool{true, true, false, false}; !slices.Equal(mended, want) {
		t.Errorf("mended %v, want %v", mended, want)
	}
}
