package wire

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Members is where the top-level members of a request body are, and the
// items of one of them (a conversation's messages or input items): the
// strict reading records them as it goes (StrictMembers), so the steps that
// follow (the declarations, the history, what the request asks for) look
// members up here, never walking the body again to find them.
type Members struct {
	body []byte
	// items names the member whose items are recorded, "" for none.
	items   string
	top     []member
	spans   []Span
	itemsOK bool
	object  bool // the body is an object
	// overflow is set when the body has more than MaxMembers top-level
	// members: none is recorded, and Get reads the body.
	overflow bool
	// skipped is the length of the prefix of the items the strict reading
	// skipped (see KnownPrefix): spans holds the items after it.
	skipped int

	// During a strict reading: what reports a known prefix and known
	// values, and the reading without them; and, for an EventReader,
	// where to record the strings and numbers read whole.
	known   KnownPrefix
	value   KnownValue
	skip    skipRead
	scalars *[]Span
	// rec is the room for the recording in scalars, reused.
	rec []Span

	// rep is the template the body repeated or became, when read through
	// Repeats (see Place).
	rep repeat

	// callIn names the members of an item that hold calls, whose places a
	// strict reading records in calls (see Calls); callsOK is set when it
	// recorded them all.
	callIn  []CallMember
	calls   []Call
	callsOK bool
}

// Items names the member of a request whose items a Members records (Name,
// "" for none) and, in each item, the members that hold calls (Calls: see
// Members.Calls).
type Items struct {
	Name  string
	Calls []CallMember
}

// A CallMember names a member of an item that holds calls: an array whose
// values are calls (each recorded; those that are not objects have no
// members) or, when One, an object that is a call. Name "" is the item
// itself, when an object, and must be the only CallMember. Args, if not
// empty, are the names of the members down from a call to its arguments,
// through objects, whose place is recorded too; Type, if not "", the name
// of a member of the call whose place is recorded (Call.Type).
type CallMember struct {
	Name string
	One  bool
	Args []string
	Type string
}

// A Call is where a call is in the body: a value of the item of index
// Item among Items, under the CallMember of index Member; where its
// arguments are (Args: at the end of its CallMember's Args, through
// objects) and where its Type member is, an empty Span for each that is
// not there.
type Call struct {
	Item, Member int
	Span
	Args, Type Span
}

// MaxCalls bounds the calls whose places a Members records; past it none
// is (Calls reports false), and the readers of the items walk them.
const MaxCalls = MaxItems

// maxPooledCalls bounds the room for calls a Members keeps for its next
// body, as maxPooledMembers does for its members.
const maxPooledCalls = 256

// recording returns m's room for a strict reading's record of its
// strings and numbers, emptied.
func (m *Members) recording() *[]Span {
	m.rec = m.rec[:0]
	return &m.rec
}

// A Span is where a value is in a body: body[Start:End].
type Span struct{ Start, End int }

// SpanOf is where v, read from body, is in it, and false when v is absent
// or its place is not known for certain: the bytes at v.Index are not v's.
func SpanOf(body []byte, v gjson.Result) (Span, bool) {
	if !v.Exists() || v.Index <= 0 || v.Index+len(v.Raw) > len(body) || string(body[v.Index:v.Index+len(v.Raw)]) != v.Raw {
		return Span{}, false
	}
	return Span{Start: v.Index, End: v.Index + len(v.Raw)}, true
}

type member struct {
	name string // as a server reads it: unquoted, escapes decoded
	v    Span
}

// MaxMembers bounds the top-level members a Members records; past it none
// is, and Get reads the body with gjson for each lookup, as it would read
// any body. An upstream's reply of millions of members does not hold a
// record of each (about 40 bytes a member) beside the strict reading's own.
const MaxMembers = 4096

// record records the top-level member name at v, up to MaxMembers.
func (m *Members) record(name string, v Span) {
	switch {
	case m.overflow:
	case len(m.top) == MaxMembers:
		m.top, m.overflow = m.top[:0], true
	default:
		m.top = append(m.top, member{name: name, v: v})
	}
}

// MaxItems bounds the items whose spans a Members records; a member with
// more has none recorded (Items reports false), and its readers walk it.
const MaxItems = 4096

// NewMembers returns an empty Members that will record the items of the
// top-level member named items ("" for none). Release gives it back for
// reuse when the request no longer needs it.
func NewMembers(items string) *Members {
	m := membersPool.Get().(*Members)
	m.items, m.callIn = items, nil
	return m
}

var membersPool = sync.Pool{New: func() any { return new(Members) }}

// maxPooledMembers bounds the top-level members of a Members kept for reuse,
// in a pool or from one body to the next: a body of many members (an
// upstream's event of a million) does not leave its room held after it.
const maxPooledMembers = 64

// Release gives m back for reuse: nothing read from it may be used after.
// The values Get returned point into the body, not into m, and stay valid.
func (m *Members) Release() {
	if m == nil {
		return
	}
	m.reset(nil)
	membersPool.Put(m)
}

// Object reports whether the body is a JSON object.
func (m *Members) Object() bool { return m.object }

// Body is the body the members are in.
func (m *Members) Body() []byte { return m.body }

// Of reports whether m holds the members of body, this very slice (not
// only the same bytes): for a reading kept to serve the steps that read the
// same body next.
func (m *Members) Of(body []byte) bool {
	if m == nil || len(body) == 0 {
		return false
	}
	b := m.body
	return len(b) == len(body) && &b[0] == &body[0]
}

// Kept is the strict reading of a reply kept for the steps that read the
// same body next (a format's Usage, then Turns): where its members are.
type Kept struct{ m *Members }

// Read reads body strictly (StrictMembers, through r: see Repeats),
// recording its members and the items of the member items, and keeps them.
func (k *Kept) Read(body []byte, s Shape, items string, r Repeats) error {
	if k.m == nil {
		k.m = NewMembers(items)
	}
	if err := r.Read(body, s, k.m); err != nil {
		k.m = nil
		return err
	}
	return nil
}

// Of returns the members kept if they are those of body (this very slice),
// or nil.
func (k *Kept) Of(body []byte) *Members {
	if !k.m.Of(body) {
		return nil
	}
	return k.m
}

// Done gives m back once the last step that reads it is done (what that
// step keeps points into the body, not into m), and forgets it if it is
// the one kept.
func (k *Kept) Done(m *Members) {
	if m == k.m {
		k.m = nil
	}
	m.Release()
}

// Get returns the value of the top-level member name, as gjson reads it,
// with Index its position in Body; an empty Result if there is none.
func (m *Members) Get(name string) gjson.Result {
	if m.overflow {
		return Parse(m.body).Get(gjson.Escape(name))
	}
	for _, t := range m.top {
		if t.name == name {
			return m.result(t.v)
		}
	}
	return gjson.Result{}
}

// ItemsValue returns the value of the member whose items are recorded, as
// Get does.
func (m *Members) ItemsValue() gjson.Result { return m.Get(m.items) }

// Item returns the value at s, a span of Items, as Get does.
func (m *Members) Item(s Span) gjson.Result { return m.result(s) }

// Unparsed is the value at s as Item reads it but for its type and
// content: its text, in place, and where it starts. For a value whose text
// alone is used, it spares parsing it (a string's, unescaped into a copy).
func (m *Members) Unparsed(s Span) gjson.Result {
	raw := m.body[s.Start:s.End]
	return gjson.Result{Raw: unsafe.String(unsafe.SliceData(raw), len(raw)), Index: s.Start}
}

// result is the value at s as gjson reads it, in place. A string without
// escapes is its text between the quotes (the strict reading checked it,
// so the span is the string whole): gjson would scan it byte by byte for
// its end and its escapes.
func (m *Members) result(s Span) gjson.Result {
	raw := m.body[s.Start:s.End]
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		r := unsafe.String(unsafe.SliceData(raw), len(raw))
		return gjson.Result{Type: gjson.String, Raw: r, Str: r[1 : len(r)-1], Index: s.Start}
	}
	r := Parse(raw)
	r.Index = s.Start
	return r
}

// Items returns where each item of the recorded member is, in order, and
// whether they were recorded: false when the member is missing, not an
// array, or holds more than MaxItems items. When the strict reading
// skipped a known prefix of the items (see Known), they are the items
// after it.
func (m *Members) Items() ([]Span, bool) { return m.spans, m.itemsOK }

// Calls returns where the calls in the items are, in the body's order, and
// whether they were recorded: only by a strict reading asked for the
// members that hold calls (see Items), of items it recorded, holding at
// most MaxCalls calls; not for a body read as a template it repeats. Every
// value of a call array is recorded, objects or not; a member of another
// kind than its CallMember says holds none.
func (m *Members) Calls() ([]Call, bool) { return m.calls, m.callsOK && m.itemsOK }

// TypeOf is the value of c's Type member (see CallMember), as Get reads a
// value; none when c has no such member.
func (m *Members) TypeOf(c Call) gjson.Result {
	if c.Type.End == 0 {
		return gjson.Result{}
	}
	return m.result(c.Type)
}

// callMember is the index of name among the members that hold calls, or -1.
func (m *Members) callMember(name []byte) int {
	for i, c := range m.callIn {
		if c.Name == string(name) {
			return i
		}
	}
	return -1
}

// recordCall records a call of the member of index c, from start to end
// of the input, with its arguments at args and its Type member at typ (of
// the input; empty for none), in the item about to be recorded.
func (m *Members) recordCall(c, start, end int, args, typ Span) {
	switch {
	case !m.callsOK:
	case len(m.calls) == MaxCalls:
		m.calls, m.callsOK = m.calls[:0], false
	default:
		m.calls = append(m.calls, Call{Item: len(m.spans), Member: c, Span: m.span(start, end),
			Args: m.spanOf(args), Type: m.spanOf(typ)})
	}
}

// spanOf is m.span of s, of the input, and the empty Span for an empty s.
func (m *Members) spanOf(s Span) Span {
	if s.End == 0 {
		return Span{}
	}
	return m.span(s.Start, s.End)
}

// Known is the length of the prefix of the items, from their array's '[',
// that the strict reading skipped as read before (see KnownPrefix); 0 when
// it read every item.
func (m *Members) Known() int { return m.skipped }

func (m *Members) reset(body []byte) {
	m.body = body
	m.top = m.top[:0]
	if cap(m.top) > maxPooledMembers {
		m.top = nil
	}
	m.spans = m.spans[:0]
	m.calls, m.callsOK = m.calls[:0], false
	if cap(m.calls) > maxPooledCalls {
		m.calls = nil
	}
	m.itemsOK = false
	m.object = false
	m.overflow = false
	m.skipped = 0
	m.known, m.value, m.skip, m.scalars = nil, nil, skipRead{items: -1}, nil
	m.rep.tp = nil
	if cap(m.rep.shift) > maxTemplateValues {
		m.rep.shift = nil
	}
}

// input is what the strict reading reads: the body, or the body without
// its known items.
func (m *Members) input() []byte {
	if m.skip.in != nil {
		return m.skip.in
	}
	return m.body
}

// span is the span of the body at start:end of the input.
func (m *Members) span(start, end int) Span {
	return Span{m.skip.pos(start), m.skip.pos(end)}
}

// pos is where offset off of the reading without the known parts is in
// the body.
func (k *skipRead) pos(off int) int {
	p := off
	for _, c := range k.cuts[:k.ncuts] {
		if off > c.in {
			p += c.delta
		}
	}
	return p
}

// ReadRequest reads a request body strictly (see StrictMembers), recording
// its members, the items of the member items names and the calls in them,
// and requires an object.
// Its error is the client's (RequestUnreadable).
//
// known and value, if not nil, report a prefix of the items and values
// read before, which are not read again (see StrictMembersKnown). r, if it
// keeps templates, holds the client's last requests: a body that repeats
// one is read as it was (see Templates).
func ReadRequest(body []byte, s Shape, items Items, known KnownPrefix, value KnownValue, r Repeats) (*Members, error) {
	m := NewMembers(items.Name)
	m.callIn = items.Calls
	var err error
	if r.c != nil {
		_, err = r.read(body, s, m, known, value)
	} else {
		err = StrictMembersKnown(body, s, m, known, value)
	}
	if err == nil && !m.Object() {
		err = errors.New("the body is not a JSON object")
	}
	if err != nil {
		m.Release()
		return nil, RequestUnreadable(err)
	}
	return m, nil
}

// ReadMembers records the members of body, an object (none if it is not
// one), with gjson: for a body already read strictly and then patched, such
// as a mended history, which needs no second strict reading.
func ReadMembers(body []byte, items string) *Members {
	m := NewMembers(items)
	m.reset(body)
	top := Parse(body)
	if !top.IsObject() {
		return m
	}
	m.object = true
	top.ForEach(func(k, v gjson.Result) bool {
		m.record(k.Str, Span{v.Index, v.Index + len(v.Raw)})
		if k.Str == items && items != "" && v.IsArray() {
			m.itemsOK = true
			v.ForEach(func(_, item gjson.Result) bool {
				if len(m.spans) == MaxItems {
					m.spans, m.itemsOK = m.spans[:0], false
					return false
				}
				m.spans = append(m.spans, Span{item.Index, item.Index + len(item.Raw)})
				return true
			})
		}
		return true
	})
	return m
}

// Parse reads body with gjson in place, where gjson.ParseBytes and
// GetBytes copy it or what they return: the results alias body, which must
// not change while they are in use. Bodies toolguard reads are never
// changed in place (patches build new ones).
func Parse(body []byte) gjson.Result {
	return gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
}

// Copy returns v read from a copy of its text, for a value kept past the
// use of the body it was read from in place (Parse).
func Copy(v gjson.Result) gjson.Result { return gjson.Parse(strings.Clone(v.Raw)) }

// valueStart is where the value after offset off (past a member's name, or
// an array's '[' or ',') begins: after white space, ':' and ','.
func valueStart(body []byte, off int) int {
	for off < len(body) {
		switch body[off] {
		case ' ', '\t', '\n', '\r', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// Value is a body as gjson reads it and, when M is not nil, the members of
// the body that its strict reading recorded (StrictMembers): Get finds a
// top-level member there instead of reading the body from its start, as
// gjson does for every lookup. M must be of this body, and is read only
// while it is (a Members is reused for the next body).
type Value struct {
	gjson.Result
	M *Members
}

// Get is gjson's Get. For a plain path (names of lowercase ASCII letters and
// '_', as the APIs toolguard reads spell theirs, and array indexes, joined
// by dots), the path's first member comes from M, when there is M, and the
// rest is read from its value with gjson; any other path (wildcards,
// queries, modifiers) is read by gjson from the body's start.
func (v Value) Get(path string) gjson.Result {
	if v.M == nil {
		return v.Result.Get(path)
	}
	dot := plainPath(path)
	if dot < 0 {
		return v.Result.Get(path)
	}
	r := v.M.Get(path[:dot])
	if dot < len(path) {
		return r.Get(path[dot+1:])
	}
	return r
}

// plainPath returns where the first dot of path is (len(path) if none) when
// path is names and indexes joined by dots, its first a name:
// [a-z_]+ then ([.][a-z_0-9]+)*; -1 when it is not.
func plainPath(path string) int {
	dot := -1
	n := 0 // bytes of the current part
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case 'a' <= c && c <= 'z' || c == '_':
		case c == '.':
			if n == 0 {
				return -1
			}
			if dot < 0 {
				dot = i
			}
			n = 0
			continue
		case '0' <= c && c <= '9' && dot >= 0:
		default:
			return -1
		}
		n++
	}
	if n == 0 {
		return -1
	}
	if dot < 0 {
		return len(path)
	}
	return dot
}

// Fields reads the members of the object obj named in names, in one pass
// over it: out[i] becomes what obj.Get(names[i]) is, an empty Result when
// obj has no such member or is not an object. gjson reads an object from
// its start for each lookup, past every member before the one it looks
// for; Fields reads it once, stopping when it has found every name. obj
// must be valid JSON, as what a strict reading accepted is. The names must
// be distinct plain member names (see plainPath), and out at least as long;
// each is matched as gjson matches it: against the member's name unescaped,
// the first of two members of one name.
func Fields(obj gjson.Result, names []string, out []gjson.Result) {
	out = out[:len(names)]
	clear(out)
	if !obj.IsObject() {
		return
	}
	left := len(names)
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, n := range names {
			if k.Str == n && !out[i].Exists() {
				out[i] = v
				left--
				break
			}
		}
		return left > 0
	})
}

// Place returns where s, a span of the body read into m, is in the
// template that body became (read in full through Repeats, and kept), for
// the bodies that repeat the template: Span finds it in each. False when
// the body became no template, or s begins or ends inside one of its
// strings or numbers that may change.
//
// A body that repeats a template is its bytes with only such values
// changed, each for one of its kind (see EventReader): what a reading of
// the template found in its structure is in the body, at the Place's Span.
// A value at a Place, or inside one, must be read again.
func (m *Members) Place(s Span) (Place, bool) { return m.rep.place(s) }

// Span returns where p, a Place of the template the body read into m
// repeated or became, is in the body; false for another template's.
func (m *Members) Span(p Place) (Span, bool) { return m.rep.spanOf(p) }

// Plan returns what SetPlan attached to the template the body read into m
// repeated or became; nil for none.
func (m *Members) Plan() any {
	if m.rep.tp == nil {
		return nil
	}
	if p := m.rep.tp.plan.Load(); p != nil {
		return *p
	}
	return nil
}

// SetPlan attaches p to the template the body read into m became (see
// Place), for the bodies that repeat it: what a format learnt of the
// template's structure, in Places. It does nothing when the body became no
// template. A template is shared by the requests that read it: the first
// plan attached stays.
func (m *Members) SetPlan(p any) {
	if m.rep.tp != nil && m.rep.full {
		m.rep.tp.plan.CompareAndSwap(nil, &p)
	}
}

// CanPlan reports whether SetPlan would attach a plan: the body read into m
// became a template, which has none yet.
func (m *Members) CanPlan() bool {
	return m.rep.tp != nil && m.rep.full && m.rep.tp.plan.Load() == nil
}
