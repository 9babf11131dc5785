package ladder

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
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

// HistoryMender applies the syntax step of the ladder to the calls of the
// conversation a client sends back: a conversation whose history holds
// malformed arguments (truncated, fenced, an object instead of a string) is
// rejected by some providers on every later turn. Only form is mended,
// never meaning; arguments that cannot be made a JSON object are left as
// they are. A format hands it each call of the history (Call), then builds
// the mended body (Body): in one pass, so the work is linear in the body
// however many calls are mended. At most maxHistoryFixes calls and
// maxHistoryMendBytes of arguments are mended, calls in order: history
// mending is a courtesy to the provider, and a call past either bound goes
// as the client sent it (a smaller call after one that did not fit the
// bytes left is still mended).
type HistoryMender struct {
	edits  []repair.Edit
	fixes  []wire.Splice
	budget int
	quota  repair.Quota // the history's JSON repair work
	// unsure: a call handed over was mended, or left unexamined by a
	// bound, so the conversation up to it is not known to need nothing.
	unsure bool
	// text is the room a call's arguments are decoded into, reused.
	text []byte
}

// maxHistoryText bounds the room for a call's text a HistoryMender keeps
// for the next call.
const maxHistoryText = 64 << 10

// NewHistoryMender starts mending one request's history.
func NewHistoryMender() *HistoryMender {
	return &HistoryMender{budget: maxHistoryMendBytes}
}

// objectText reports whether args is a JSON string whose text is a JSON
// object. Its text is decoded into m's room for it, kept for the next
// call's, not into a string of its own; args may be unparsed (its text
// and place alone: see wire.Members.Unparsed).
func (m *HistoryMender) objectText(args gjson.Result) bool {
	if len(args.Raw) < 2 || args.Raw[0] != '"' {
		return false
	}
	text, err := jsontext.AppendUnquote(m.text[:0], args.Raw)
	if err != nil {
		// Not one jsontext reads: as gjson reads it.
		s := gjson.Parse(args.Raw)
		return s.Type == gjson.String && gjson.Valid(s.Str) && gjson.Parse(s.Str).IsObject()
	}
	if cap(text) <= maxHistoryText {
		m.text = text
	}
	return gjson.ValidBytes(text) && wire.Parse(text).IsObject()
}

// repairs is the history's repair quota.
func (m *HistoryMender) repairs() *repair.Quota { return &m.quota }

// Call mends the arguments args of one call (read from the body being
// mended), if they need it. When the call has no arguments member, one is
// added at the start of obj, the object that should hold it.
func (m *HistoryMender) Call(args, obj gjson.Result) {
	if len(m.fixes) == maxHistoryFixes {
		m.unsure = true
		return
	}
	if m.objectText(args) {
		return
	}
	raw := args.Raw
	if !args.Exists() {
		raw = `""`
	}
	if len(raw) > m.budget {
		m.unsure = true
		return
	}
	m.budget -= len(raw)
	mended, e, err := repair.SyntaxWithin([]byte(raw), m.repairs())
	if err != nil || len(e) == 0 {
		m.unsure = m.unsure || err != nil
		return
	}
	m.unsure = true
	val := wire.Quote(string(mended))
	if args.Exists() {
		m.fixes = append(m.fixes, wire.Splice{Start: args.Index, End: args.Index + len(args.Raw), With: []byte(val)})
		m.edits = append(m.edits, e...)
		return
	}
	// No arguments member: add one at the start of the object that lacks
	// it (a call with no such object is left).
	if obj.IsObject() {
		sep := ","
		if strings.TrimSpace(obj.Raw[1:len(obj.Raw)-1]) == "" {
			sep = ""
		}
		m.fixes = append(m.fixes, wire.Splice{Start: obj.Index + 1, End: obj.Index + 1, With: []byte(`"arguments":` + val + sep)})
		m.edits = append(m.edits, e...)
	}
}

// CallAt is Call for a call whose place the strict reading recorded (see
// wire.Members.Calls): its arguments where the reading found them, with no
// lookup; when they are missing, the object that would hold them (the
// call's member in, or the call itself for "") for Call to add them.
func (m *HistoryMender) CallAt(mb *wire.Members, c wire.Call, in string) {
	if c.Args.End > 0 {
		m.Call(mb.Unparsed(c.Args), gjson.Result{})
		return
	}
	obj := mb.Item(c.Span)
	if in != "" {
		obj = obj.Get(in)
	}
	m.Call(gjson.Result{}, obj)
}

// Body returns the mended body and the edits made: body itself, byte for
// byte, when nothing needed mending. A mended body that cannot be built is
// an error.
func (m *HistoryMender) Body(body []byte) ([]byte, []repair.Edit, error) {
	for _, f := range m.fixes {
		if f.Start <= 0 {
			return nil, nil, errors.New("mend history: the position of a call's arguments is unknown")
		}
	}
	// The calls may not have been handed over in the body's order.
	slices.SortFunc(m.fixes, func(a, b wire.Splice) int { return a.Start - b.Start })
	out, err := wire.ApplySplices(body, m.fixes)
	if err != nil {
		return nil, nil, fmt.Errorf("mend history: %w", err)
	}
	return out, m.edits, nil
}

// Input mends a call of a format whose arguments are a JSON object, not a
// string holding one (a Messages tool_use block's input): an input sent
// back as a string, as servers that cannot parse a call write it, becomes
// the object its text is, mended in form. An object, or a string that
// cannot be made one, is left as it is.
func (m *HistoryMender) Input(in gjson.Result) {
	if in.Type != gjson.String {
		return
	}
	// A string is mended, or left by a bound or as one that cannot be
	// made an object: either way not known to need nothing.
	m.unsure = true
	if len(m.fixes) == maxHistoryFixes || len(in.Raw) > m.budget {
		return
	}
	m.budget -= len(in.Raw)
	obj, e, err := repair.SyntaxWithin([]byte(in.Raw), m.repairs())
	if err != nil {
		return
	}
	m.fixes = append(m.fixes, wire.Splice{Start: in.Index, End: in.Index + len(in.Raw), With: obj})
	m.edits = append(m.edits, append([]repair.Edit{{Kind: repair.KindDoubleEncoded, Before: wire.Clip(in.Raw, 200)}}, e...)...)
}

// Role is a conversation item's role, for an item read strictly: from its
// first bytes when they are {"role":" and a word of lowercase letters and
// its closing quote, as clients write it (the strict reading refused a name
// given twice, so that is the item's only member of that name, and its
// value whole); any other item by a lookup. Most items of a history are not
// the assistant's, and their role comes first.
func Role(msg gjson.Result) string {
	const lead = `{"role":"`
	if r := msg.Raw; strings.HasPrefix(r, lead) {
		for i := len(lead); i < min(len(r), len(lead)+maxRole); i++ {
			if c := r[i]; c == '"' {
				return r[len(lead):i]
			} else if c < 'a' || c > 'z' {
				break
			}
		}
	}
	return msg.Get("role").Str
}

// maxRole bounds the role read from an item's first bytes: the longest
// role, "assistant", and more.
const maxRole = 16
