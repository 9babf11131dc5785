package ladder

import (
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Mended is a call of a turn's first reply that Check mended, with where
// its name and arguments values are in that reply's body (a zero Span: the
// member is absent, or is not to be written over).
type Mended struct {
	Call       *Call
	Name, Args wire.Span
}

// MendedAt is m with the places of name and args, members of a call read
// from body, when c was mended; ok is false when it was not.
func MendedAt(c *Call, body []byte, name, args gjson.Result) (m Mended, ok bool) {
	if !c.Changed() {
		return Mended{}, false
	}
	m = Mended{Call: c}
	m.Name, _ = wire.SpanOf(body, name)
	m.Args, _ = wire.SpanOf(body, args)
	return m, true
}

// InPlace returns the edits that write the turn's calls back into its
// first reply over the values the ladder changed, every other byte kept:
// a mended call's arguments become the mended text (as a JSON string when
// asString, as the JSON object it is otherwise), and its name the declared
// tool's when they differ. It returns false when the calls cannot be
// written so, and must be written whole: when a call was dropped, is
// invalid or comes from a re-ask, or when a mended call has no member to
// write over. mended are the turn's mended calls (see MendedAt), in the
// order of its calls.
func (t *Turn) InPlace(mended []Mended, asString bool) ([]wire.Splice, bool) {
	if t.Touched {
		return nil, false
	}
	var out []wire.Splice
	for _, c := range t.Calls {
		switch {
		case !c.Valid() || c.Attempt != 0:
			return nil, false
		case !c.Changed():
			continue
		}
		// mended holds the mended calls in the order of the turn's calls:
		// each is the next one, found in constant time.
		if len(mended) == 0 || mended[0].Call != c || mended[0].Args == (wire.Span{}) {
			return nil, false
		}
		m := mended[0]
		mended = mended[1:]
		args := c.Args
		if asString {
			var err error
			if args, err = jsontext.AppendQuote(nil, c.Args); err != nil {
				return nil, false
			}
		}
		if c.Tool != nil && c.Tool.Name != c.Name {
			if m.Name == (wire.Span{}) {
				return nil, false
			}
			out = append(out, wire.Splice{Start: m.Name.Start, End: m.Name.End, With: []byte(wire.Quote(c.Tool.Name))})
		}
		out = append(out, wire.Splice{Start: m.Args.Start, End: m.Args.End, With: args})
	}
	// A call's name may come after its arguments.
	slices.SortFunc(out, func(a, b wire.Splice) int { return a.Start - b.Start })
	return out, true
}
