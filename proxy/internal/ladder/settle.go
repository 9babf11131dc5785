package ladder

import (
	"bytes"
	"context"
	"errors"
	"log/slog"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Turn is one answer of the model that holds tool calls: a choice of a chat
// completion, the output of a response. Its calls are settled together: a
// re-ask is made for a turn, and its answer replaces the turn's invalid
// calls.
type Turn struct {
	Index int // the format's number for it (a choice's index)
	Calls []*Call
	// Touched is set once the turn's calls must be written back: a re-ask
	// replaced some.
	Touched bool
	// Last is the calls of the model's last answer in this turn, which the
	// next re-ask shows it.
	Last []*Call
	// Wire is the format's own state for the turn (where it is in the
	// body, the history its re-asks have built).
	Wire any
}

// Invalid reports whether some of the turn's calls are invalid.
func (t *Turn) Invalid() bool {
	for _, c := range t.Calls {
		if !c.Valid() {
			return true
		}
	}
	return false
}

// Answer is what the model answered a re-ask.
type Answer struct {
	Sent   []Sent // its calls, unchecked
	CutOff bool   // it ended at the model's length limit
}

// An Asker asks the model again for the turn's invalid calls: it writes the
// re-ask in its format (told by Exchange.Last whether this is the turn's
// last, with Exchange.FallbackModel and Exchange.ForceTool), sends it and
// reads the answer. attempt counts the re-asks of the request from 1.
type Asker interface {
	Ask(ctx context.Context, t *Turn, attempt int) (Answer, error)
}

// ErrNotAsked, wrapped in an Asker's error, says that the re-ask was not
// sent: it does not count as one.
var ErrNotAsked = errors.New("re-ask not sent")

var errSpent = errors.New("the request's validation work budget is spent: a re-ask's calls could not be checked")

// Settle takes the turns of a reply up the ladder's last rung: while a turn
// has invalid calls and their rules allow more, the model is asked again,
// and the calls of its answer replace the invalid ones. The turns' calls
// must have been checked (CheckAll) and recorded in x.Calls. A re-ask that
// fails stops the asking (x.GaveUp says why); Settle returns an error only
// when ctx ends. Whether calls are still invalid is then for the caller to
// read (Turn.Invalid) and act on (Failure).
func (x *Exchange) Settle(ctx context.Context, turns []*Turn, ask Asker) error {
	for {
		t := firstInvalid(turns)
		if t == nil || x.Reasks >= x.Budget(t) {
			return nil
		}
		if x.Spent {
			x.GaveUp = errSpent
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		x.Reasks++
		ans, err := ask.Ask(ctx, t, x.Reasks)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			if errors.Is(err, ErrNotAsked) {
				x.Reasks--
			}
			x.GaveUp = err
			return nil
		}
		calls, err := x.CheckAll(ctx, ans.Sent, x.Reasks, ans.CutOff)
		if err != nil {
			return err
		}
		x.Calls = append(x.Calls, calls...)
		t.merge(calls)
	}
}

// merge puts the calls of a re-ask's answer in place of the turn's invalid
// calls. An answer without calls leaves them invalid.
func (t *Turn) merge(calls []*Call) {
	t.Last = calls
	if len(calls) == 0 {
		return
	}
	var kept []*Call
	for _, c := range t.Calls {
		if c.Valid() {
			kept = append(kept, c)
		}
	}
	merged := kept
	for _, c := range calls {
		if !duplicate(kept, c) {
			merged = append(merged, c)
		}
	}
	t.Calls, t.Touched = merged, true
}

// duplicate reports whether c repeats a call already kept (models often send
// the valid calls again despite being told not to).
func duplicate(kept []*Call, c *Call) bool {
	for _, k := range kept {
		if k.Tool == c.Tool && bytes.Equal(k.Args, c.Args) {
			return true
		}
	}
	return false
}

func firstInvalid(turns []*Turn) *Turn {
	for _, t := range turns {
		if t.Invalid() {
			return t
		}
	}
	return nil
}

// AnyInvalid reports whether some turn still has invalid calls.
func AnyInvalid(turns []*Turn) bool { return firstInvalid(turns) != nil }

// failingRules are the rules of the turns' invalid calls, one per call, for
// the decisions of policy.
func (x *Exchange) failingRules(turns ...*Turn) []policy.Rules {
	var out []policy.Rules
	for _, t := range turns {
		for _, c := range t.Calls {
			if !c.Valid() {
				out = append(out, x.rulesOf(c))
			}
		}
	}
	return out
}

// Budget is how many re-asks the turn's invalid calls allow in all
// (policy.ReaskBudget).
func (x *Exchange) Budget(t *Turn) int { return policy.ReaskBudget(x.failingRules(t)) }

// Last reports whether the re-ask being made (x.Reasks) is the turn's last.
func (x *Exchange) Last(t *Turn) bool { return x.Reasks == x.Budget(t) }

// Failure is what happens when the turns' calls stay invalid
// (policy.FailureBehaviour).
func (x *Exchange) Failure(turns ...*Turn) policy.OnFailure {
	return policy.FailureBehaviour(x.failingRules(turns...))
}

// FallbackModel says whether the turn's re-ask being made goes to the
// fallback, and with which model ("" keeps the request's): only its last
// one, when every failing tool allows it (policy.FallbackModel).
func (x *Exchange) FallbackModel(t *Turn) (string, bool) {
	if !x.Last(t) {
		return "", false
	}
	return policy.FallbackModel(x.failingRules(t))
}

// ForceTool says whether the turn's re-ask being made names the failing
// tool as the tool to call, and which: only its last one, when every
// invalid call names that one declared tool and its rules ask for it
// (policy.ForceToolChoice).
func (x *Exchange) ForceTool(t *Turn) (string, bool) {
	var tools []string
	for _, c := range t.Calls {
		if c.Valid() {
			continue
		}
		name := ""
		if c.Tool != nil {
			name = c.Tool.Name
		}
		tools = append(tools, name)
	}
	var rules policy.Rules
	if len(tools) > 0 && tools[0] != "" {
		rules = x.Policy.Rules(tools[0])
	}
	if !x.Last(t) {
		return "", false
	}
	return policy.ForceToolChoice(tools, rules)
}

// Session is what a stream's handling needs of the exchange it belongs to.
type Session struct {
	Ctx context.Context // the client's request
	X   *Exchange
	Ask Asker
	// Replies returns the bodies of the re-asks made so far, whose usage
	// is added to the stream's.
	Replies func() [][]byte
	Log     *slog.Logger
	// Usage is told of each usage the stream reports.
	Usage func(data []byte)
	// ModelOf names the model that wrote a call when it is not the
	// stream's (a fallback's re-ask); "" otherwise.
	ModelOf func(*Call) string
	// Redact cleans what the client is told of why re-asking stopped.
	Redact func(string) string
	// Starts reads the stream's first events, compared with those of the
	// client's last streams (see wire.EventReader).
	Starts wire.Repeats
}

// SettleTurn settles one turn of a stream (Exchange.Settle) and says what
// becomes of it: err ends the stream silently (the client left); failure,
// when the turn stays invalid and the configured failure is an error, is
// the error that ends the stream; otherwise passthrough says whether its
// invalid calls go out as sent (FailPassthrough) or are dropped. invalid
// says the turn stayed invalid.
func (s *Session) SettleTurn(t *Turn) (invalid, passthrough bool, failure *wire.Error, err error) {
	if err := s.X.Settle(s.Ctx, []*Turn{t}, s.Ask); err != nil {
		return false, false, nil, err
	}
	if !t.Invalid() {
		return false, false, nil, nil
	}
	switch s.X.Failure(t) {
	case policy.FailPassthrough:
		return true, true, nil, nil
	case policy.FailDrop:
		return true, false, nil, nil
	}
	return true, false, s.X.FailureError([]*Turn{t}, s.Redact), nil
}

// Kept says which of the calls first, those of the turn's first reply, the
// turn keeps, and whether what the client gets differs from that reply: a
// call dropped, invalid or mended, or calls of re-asks added.
func (t *Turn) Kept(first []*Call) (keep map[*Call]bool, dirty bool) {
	dirty = t.Touched
	keep = make(map[*Call]bool, len(t.Calls))
	for _, c := range t.Calls {
		keep[c] = true
	}
	for _, c := range first {
		if !keep[c] || !c.Valid() || c.Changed() {
			dirty = true
		}
	}
	return keep, dirty
}

// Added are the valid calls the re-asks added to the turn, in order.
func (t *Turn) Added() []*Call {
	var out []*Call
	for _, c := range t.Calls {
		if c.Attempt > 0 && c.Valid() {
			out = append(out, c)
		}
	}
	return out
}
