package wire

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The events of a stream repeat one another. Each content event of a chat
// completion is the one before it with another text in it (and, from
// OpenAI, another "obfuscation" padding); a Responses stream's deltas differ
// in their text and sequence_number, a Messages stream's in their text.
// Tokenising each event again is most of what toolguard spends on it.
//
// An EventReader reads the events of one stream strictly, as StrictMembers
// does, and keeps the last event it read in full as a template: where its
// strings and numbers read whole (the values under a nil Shape) are, and
// its members. An event whose bytes are the template's with only some of
// those values changed, each for a value of the same kind that jsontext
// reads as valid on its own, is read as the template was, without being
// tokenised:
//
//   - JSON's tokens delimit themselves: a string ends at its first unescaped
//     quote, a number at the first byte that cannot continue it, and what
//     follows a value is read the same whatever the value was. The bytes
//     around the changed values are the template's, so they hold the same
//     tokens: the same names (no duplicate, none that folds to a name of the
//     Shape), the same structure, valid UTF-8, nothing after the end.
//   - A changed value is checked by jsontext on its own: one valid string
//     (its escapes, its UTF-8, no control character) or one valid number,
//     where the template had a string or a number.
//
// Such an event passes the strict reading, and its members are the
// template's, moved by the change in length of the values before them. Any
// other event is read in full, with the full reading's error, and becomes
// the template when it passes.
//
// The first events of a stream (startEvents of them) have no event before
// them to repeat, or one of another shape: a chat stream's role, then its
// first text; a Responses stream's created, in_progress, the item and part
// added, then its first text. Read with a client's Repeats of NewStreamStarts,
// each is compared instead with the same event of the client's last streams,
// and when it repeats neither it is read in full and kept for the next.
type EventReader struct {
	s Shape
	// cur is the template the next event is compared with: tp, the last
	// event read in full (remade in place), or one kept in starts that
	// the last event repeated or became; nil for none.
	cur *template
	tp  template

	starts Repeats // the client's stream starts (the zero Repeats: none)
	n      int     // the events read, up to startEvents

	// last is the template the last event repeated or became; repeated:
	// it repeated the template the event before it repeated or became.
	last     repeat
	repeated bool
}

// startEvents is how many of a stream's first events are compared with the
// client's last streams': up to a Responses stream's first text.
const startEvents = 5

// A template is a body read in full, for the bodies that repeat it (see
// EventReader): its bytes, where its strings and numbers read whole are, and
// its members. An EventReader remakes its own in place; one that Templates
// keeps does not change once made, and is read by any number of goroutines.
type template struct {
	shape   unsafe.Pointer // the Shape it was read under
	t       []byte
	vary    []Span // where t's strings and numbers read whole are, in order
	items   string // the name of the member whose items are recorded
	top     []member
	spans   []Span // the items of t's member items
	itemsOK bool
	// at says, for each span of top and then of spans, after how many
	// values of vary it starts and ends: by how much it moves.
	at []spanAt
	// plan is what a format attached to the template, once (see
	// Members.SetPlan); nil for nothing.
	plan atomic.Pointer[any]
}

type spanAt struct{ start, end int }

// The bounds of a template: a larger body, or one with more members or
// values, is read in full every time. Content events are a few hundred
// bytes with a dozen values, a reply with a few calls a few times that.
const (
	maxTemplateBytes   = 16 << 10
	maxTemplateMembers = 32
	maxTemplateValues  = 64
)

// NewEventReader returns a reader of events under the Shape s, whose first
// events are compared with those of the streams starts read before (see
// NewStreamStarts; the zero Repeats compares them with nothing).
func NewEventReader(s Shape, starts Repeats) *EventReader { return &EventReader{s: s, starts: starts} }

// Read is StrictMembers(data, s, m) for the next event of the stream: the
// same error, and the same members recorded in m.
func (e *EventReader) Read(data []byte, m *Members) error {
	e.repeated = false
	if e.starts.c != nil && e.n < startEvents {
		r := e.starts.At(e.n)
		e.n++
		var err error
		e.cur, err = r.read(data, e.s, m, nil, nil)
		e.last.tp = nil
		return err
	}
	// An event too large to be a template is not compared with one:
	// comparing it could cost as much as reading it.
	if e.cur != nil && len(data) <= maxTemplateBytes && e.cur.items == m.items {
		var ok bool
		if e.last.shift, ok = e.cur.repeat(data, m, e.last.shift[:0]); ok {
			e.repeated = e.last.tp == e.cur
			e.last.tp, e.last.full = e.cur, false
			return nil
		}
	}
	e.cur, e.last.tp = nil, nil
	rec := m.recording()
	if err := strictMembers(data, e.s, m, nil, nil, nil, rec); err != nil {
		return err
	}
	if e.tp.set(e.s, data, m, *rec) {
		e.cur = &e.tp
		e.last.tp, e.last.full = e.cur, true
	}
	return nil
}

// Repeated reports whether the event last Read repeated the one Read
// before it: the same bytes, but for the values of some of the strings and
// numbers that may change (see EventReader), each still a string or a
// number. Whatever a reading of the event before found in those bytes is
// in this one, in the same place in its structure; only such a value may
// differ, and Value says where a value is.
func (e *EventReader) Repeated() bool { return e.repeated }

// ValueAt returns which of the strings and numbers that may change, in
// order, is at s in the event last Read; false when none is (the event
// was not read against a template, or was one of a stream's first events,
// or s is not such a value). An event that Repeated the last has its value
// of that number at Value(i).
func (e *EventReader) ValueAt(s Span) (int, bool) { return e.last.valueAt(s) }

// Value returns where value i of those ValueAt counts is in the event last
// Read.
func (e *EventReader) Value(i int) Span { return e.last.value(i) }

// A repeat is what a reading keeps of the template its body repeated or
// became, to say where the template's parts are in the body.
type repeat struct {
	tp *template // nil: neither
	// full: the body became tp, its bytes are tp's. Otherwise shift is,
	// per value of tp.vary, by how much the body is longer than tp after
	// it (tp.repeat's).
	full  bool
	shift []int
}

func (r *repeat) valueAt(s Span) (int, bool) {
	if r.tp == nil {
		return 0, false
	}
	n := len(r.tp.vary)
	i := sort.Search(n, func(i int) bool { return r.value(i).Start >= s.Start })
	if i == n || r.value(i) != s {
		return 0, false
	}
	return i, true
}

func (r *repeat) value(i int) Span {
	v := r.tp.vary[i]
	if r.full {
		return v
	}
	// What follows value i has moved by shift[i] (see template.repeat); its
	// start, by what the values before it moved it.
	if i > 0 {
		v.Start += r.shift[i-1]
	}
	v.End += r.shift[i]
	return v
}

// A Place is where a part of a template is (a value, an object, an array,
// bytes between them), to be found in the bodies that repeat it: see
// Members.Place.
type Place struct {
	tp   *template
	span Span
	at   spanAt
}

// place is the Place of s in the body that became the template; false when
// the body did not become one, or s begins or ends inside one of its
// values that may change.
func (r *repeat) place(s Span) (Place, bool) {
	tp := r.tp
	if tp == nil || !r.full || s.Start < 0 || s.Start > s.End || s.End > len(tp.t) {
		return Place{}, false
	}
	start := tp.after(0, s.Start)
	if start < len(tp.vary) && tp.vary[start].Start < s.Start {
		return Place{}, false
	}
	end := tp.after(start, s.End)
	if end < len(tp.vary) && tp.vary[end].Start < s.End {
		return Place{}, false
	}
	return Place{tp: tp, span: s, at: spanAt{start, end}}, true
}

// spanOf is where p, a Place of the template the body repeated or became,
// is in the body; false when p is another template's.
func (r *repeat) spanOf(p Place) (Span, bool) {
	if p.tp == nil || p.tp != r.tp {
		return Span{}, false
	}
	if r.full {
		return p.span, true
	}
	return move(p.span, p.at, r.shift), true
}

// shapeOf identifies a Shape, for a template read under it.
func shapeOf(s Shape) unsafe.Pointer { return reflect.ValueOf(s).UnsafePointer() }

// set makes tp the template of data, just read in full under s into m, with
// vary the values recorded, reusing tp's room; it reports false, leaving
// tp unusable, when data is beyond a template's bounds.
func (tp *template) set(s Shape, data []byte, m *Members, vary []Span) bool {
	if len(data) > maxTemplateBytes || !m.object || m.overflow || m.skipped != 0 ||
		len(m.top) > maxTemplateMembers || len(m.spans) > maxTemplateMembers || len(vary) > maxTemplateValues {
		return false
	}
	tp.shape = shapeOf(s)
	tp.plan.Store(nil)
	tp.t = append(slices.Grow(tp.t[:0], len(data)), data...)
	tp.vary = append(slices.Grow(tp.vary[:0], len(vary)), vary...)
	// The names are slices of data (or unescaped copies): copied, in one
	// string, since data is the caller's and changes.
	n := 0
	for _, tm := range m.top {
		n += len(tm.name)
	}
	var b strings.Builder
	b.Grow(n)
	for _, tm := range m.top {
		b.WriteString(tm.name)
	}
	names := b.String()
	tp.top = slices.Grow(tp.top[:0], len(m.top))
	for _, tm := range m.top {
		tp.top = append(tp.top, member{name: names[:len(tm.name)], v: tm.v})
		names = names[len(tm.name):]
	}
	tp.spans = append(slices.Grow(tp.spans[:0], len(m.spans)), m.spans...)
	// The members' spans are in order, and so are the items': each
	// boundary is after at least as many values as the one before.
	tp.at = slices.Grow(tp.at[:0], len(tp.top)+len(tp.spans))
	i := 0
	for _, tm := range tp.top {
		start := tp.after(i, tm.v.Start)
		i = tp.after(start, tm.v.End)
		tp.at = append(tp.at, spanAt{start, i})
	}
	i = 0
	for _, s := range tp.spans {
		start := tp.after(i, s.Start)
		i = tp.after(start, s.End)
		tp.at = append(tp.at, spanAt{start, i})
	}
	tp.items, tp.itemsOK = m.items, m.itemsOK
	return true
}

// after is how many values of vary end at or before offset x of t, counted
// on from i, a count for an offset before x. No span begins or ends inside
// a value.
func (tp *template) after(i, x int) int {
	for i < len(tp.vary) && tp.vary[i].End <= x {
		i++
	}
	return i
}

// repeat reports whether data is the template with only values of vary
// changed, each for a valid one of its kind, and if so records data's
// members in m. shift is room for, per value of vary, by how much data is
// longer than t after it; repeat returns it, grown.
func (tp *template) repeat(data []byte, m *Members, shift []int) ([]int, bool) {
	t := tp.t
	shift = slices.Grow(shift, len(tp.vary)) // one allocation, not one per doubling
	// The values that end before the first byte where data and t differ
	// are as they were, found without a comparison each: their bytes and
	// the byte after each (which ended a number in t) are t's.
	same := commonPrefix(data, t)
	i := 0
	for i < len(tp.vary) && tp.vary[i].End < same {
		shift = append(shift, 0)
		i++
	}
	pos, q := 0, 0 // where the next bytes to compare are, in t and in data
	if i > 0 {
		pos = tp.vary[i-1].End
		q = pos
	}
	for _, v := range tp.vary[i:] {
		// Most values are as they were: the bytes up to the end of the
		// value, the same, hold the same token (the byte after a number,
		// compared next, is t's, which ended it; a number that goes on,
		// 20 become 2000, is another value, read below).
		if bytes.HasPrefix(data[q:], t[pos:v.End]) && !numberGoesOn(t[v.Start], data, q+v.End-pos) {
			q += v.End - pos
			shift = append(shift, q-v.End)
			pos = v.End
			continue
		}
		fixed := t[pos:v.Start]
		if !bytes.HasPrefix(data[q:], fixed) {
			return shift, false
		}
		q += len(fixed)
		// Another value (the same would have been found above): jsontext
		// reads it, and says where it ends.
		end := scalarEnd(data, q)
		if end < 0 || (data[q] == '"') != (t[v.Start] == '"') {
			return shift, false
		}
		shift = append(shift, end-v.End)
		pos, q = v.End, end
	}
	if !bytes.Equal(data[q:], t[pos:]) {
		return shift, false
	}
	m.reset(data)
	m.object = true
	m.top, m.spans = slices.Grow(m.top, len(tp.top)), slices.Grow(m.spans, len(tp.spans))
	for i, tm := range tp.top {
		m.top = append(m.top, member{name: tm.name, v: move(tm.v, tp.at[i], shift)})
	}
	for i, s := range tp.spans {
		m.spans = append(m.spans, move(s, tp.at[len(tp.top)+i], shift))
	}
	m.itemsOK = tp.itemsOK
	return shift, true
}

// commonPrefix is the length of the longest common prefix of a and b,
// compared by bytes.Equal over spans that double (most of a repeat is the
// same), then a word at a time from the span that differs.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for step := 16; i+step <= n && bytes.Equal(a[i:i+step], b[i:i+step]); step = min(2*step, 4<<10) {
		i += step
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// numberGoesOn reports whether a value that starts with first, a number's
// first byte, goes on at data[i]: a byte that may continue a number.
func numberGoesOn(first byte, data []byte, i int) bool {
	if first == '"' || i >= len(data) {
		return false
	}
	switch c := data[i]; {
	case '0' <= c && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		return true
	}
	return false
}

// move is where span s of a template, after the values of its vary that at
// says, is in the body just matched, longer by shift after each value.
func move(s Span, at spanAt, shift []int) Span {
	if at.start > 0 {
		s.Start += shift[at.start-1]
	}
	if at.end > 0 {
		s.End += shift[at.end-1]
	}
	return s
}

// scalarEnd is where the string or number that starts at q in b ends, read
// by jsontext as the strict reading reads it (its escapes, its UTF-8, its
// grammar), or -1 when no valid one starts there.
func scalarEnd(b []byte, q int) int {
	if q >= len(b) || !scalarKind(b[q:q+1]) {
		return -1
	}
	if b[q] == '"' {
		// Most changed values are texts of printable ASCII without an
		// escape (a word of a stream's content, an id): valid as they
		// stand, and ended by their first quote, as jsontext reads them
		// too. Any other byte (an escape, a control character, UTF-8) is
		// left to jsontext.
		for i := q + 1; i < len(b); i++ {
			c := b[i]
			if c == '"' {
				return i + 1
			}
			if c < ' ' || c > '~' || c == '\\' {
				break
			}
		}
	}
	st := strictPool.Get().(*strictState)
	defer strictPool.Put(st)
	st.b = *bytes.NewBuffer(b[q:])
	st.d.Reset(&st.b)
	raw, err := st.d.ReadValue()
	n := int(st.d.InputOffset())
	// Keep no reference to b in the pool.
	st.b = bytes.Buffer{}
	st.d.Reset(&st.empty)
	if err != nil || n != len(raw) {
		return -1
	}
	return q + n
}

// scalarKind reports whether a value read whole is a string or a number,
// the values an EventReader lets change.
func scalarKind(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9')
}

// Replies repeat one another too: an agent's model, asked again and again
// to call the same tools, answers with completions of the same shape whose
// ids, texts, arguments and token counts differ; or with two shapes in
// turn (a call, then text; calls of two tools). Templates keeps, for each
// scope (a client's credentials and the format: see Scope), the last two
// replies of different shapes read in full as templates, and reads a reply
// that repeats one of them as an EventReader reads an event that repeats
// the last. A scope's replies are compared with that scope's only: no
// client's reply is compared with another's.
//
// At most maxTemplateScopes scopes are kept, the oldest forgotten first,
// each with two templates of at most maxTemplateBytes and their records:
// about 10 MB in all.
type Templates struct {
	seed maphash.Seed
	mu   sync.Mutex
	// by holds each scope's templates, the one that last served first.
	by map[uint64][2]*template
	// order holds the scopes in the order they were first kept, as a
	// ring from next.
	order []uint64
	n     int
	next  int
}

// maxTemplateScopes is how many scopes Templates keeps;
// maxStartScopes how many NewStreamStarts keeps: startEvents a client and
// format.
const (
	maxTemplateScopes = 256
	maxStartScopes    = 2 * maxTemplateScopes
)

// NewTemplates returns an empty Templates.
func NewTemplates() *Templates { return newTemplates(maxTemplateScopes) }

// NewStreamStarts returns an empty Templates for the first events of
// streams (see EventReader): Repeats.At is a scope's reading of its
// streams' event i. At most maxStartScopes scopes are kept, each event
// of each stream start one, with two templates: about 20 MB at most, a few
// hundred kilobytes for streams whose first events are of usual size.
func NewStreamStarts() *Templates { return newTemplates(maxStartScopes) }

func newTemplates(scopes int) *Templates {
	return &Templates{seed: maphash.MakeSeed(), by: map[uint64][2]*template{}, order: make([]uint64, scopes)}
}

// Scope is the hash of parts (the format, the client's credentials) that
// keeps apart the templates of different clients: seeded, so it tells
// nothing of the parts outside this process.
func (c *Templates) Scope(parts ...string) uint64 { return Scope(c.seed, parts...) }

// Scope is a seeded hash of parts (header values, which hold no NUL), each
// told apart from the next: a cache's key for a client that says nothing of
// the parts outside this process.
func Scope(seed maphash.Seed, parts ...string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, p := range parts {
		h.WriteString(p)
		h.WriteByte(0) // header values hold no NUL: the parts cannot run together
	}
	return h.Sum64()
}

// For returns the reading of a scope's replies.
func (c *Templates) For(scope uint64) Repeats { return Repeats{c: c, scope: scope} }

// Repeats reads the replies of one scope (see Templates). The zero Repeats
// keeps no template: it reads each reply in full.
type Repeats struct {
	c     *Templates
	scope uint64
}

// At is the reading of the scope's event i (of a stream's first events,
// see EventReader): a scope of its own, told apart from the others by i.
func (r Repeats) At(i int) Repeats {
	// Each place a key of its own: the client's, a seeded hash, with a
	// different odd multiple mixed in; two keys meet only by chance, as
	// any two of the hashes do.
	r.scope ^= uint64(i+1) * 0x9e3779b97f4a7c15
	return r
}

// Read is StrictMembers(body, s, m): the same error, and the same members
// recorded in m (which may be nil).
func (r Repeats) Read(body []byte, s Shape, m *Members) error {
	if r.c == nil {
		return StrictMembers(body, s, m)
	}
	if m == nil {
		m = NewMembers("")
		defer m.Release()
	}
	_, err := r.read(body, s, m, nil, nil)
	return err
}

// read is StrictMembersKnown(body, s, m, known, value) into m, not nil,
// for a Repeats that keeps templates: body is compared with the scope's
// templates first, and one read in full, no part of it skipped as known,
// becomes one. It returns the template that body repeated or became; nil
// if it is neither (beyond a template's bounds, or read without a part).
func (r Repeats) read(body []byte, s Shape, m *Members, known KnownPrefix, value KnownValue) (*template, error) {
	if len(body) > maxTemplateBytes {
		// Never a template, nor compared with one.
		return nil, StrictMembersKnown(body, s, m, known, value)
	}
	if tp := r.repeated(body, s, m); tp != nil {
		return tp, nil
	}
	rec := m.recording()
	whole, err := strictMembersKnown(body, s, m, known, value, rec)
	if err != nil || !whole {
		return nil, err
	}
	tp := r.made(s, body, m, *rec)
	if tp != nil {
		m.rep = repeat{tp: tp, full: true, shift: m.rep.shift}
	}
	return tp, nil
}

// repeated returns the scope's template that body repeats, with body's
// members recorded in m, or nil when it repeats neither.
func (r Repeats) repeated(body []byte, s Shape, m *Members) *template {
	c := r.c
	c.mu.Lock()
	tps := c.by[r.scope]
	c.mu.Unlock()
	shape := shapeOf(s)
	for i, tp := range tps {
		if tp == nil || tp.shape != shape || tp.items != m.items {
			continue
		}
		shift, ok := tp.repeat(body, m, m.rep.shift[:0])
		m.rep.shift = shift
		if ok {
			if i == 1 {
				c.served(r.scope, tp)
			}
			m.rep.tp, m.rep.full = tp, false
			return tp
		}
	}
	return nil
}

// made makes body, just read in full under s into m with vary the values
// recorded, the scope's newest template, and returns it; nil when body is
// beyond a template's bounds.
func (r Repeats) made(s Shape, body []byte, m *Members, vary []Span) *template {
	// A new template, not an old one changed: other requests may be
	// reading it.
	tp := new(template)
	if !tp.set(s, body, m, vary) {
		return nil
	}
	r.c.keep(r.scope, tp)
	return tp
}

// keep makes tp the scope's first template, and its first the second.
func (c *Templates) keep(scope uint64, tp *template) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tps, ok := c.by[scope]
	if !ok {
		if c.n == len(c.order) {
			delete(c.by, c.order[c.next])
		} else {
			c.n++
		}
		c.order[c.next] = scope
		c.next = (c.next + 1) % len(c.order)
	}
	c.by[scope] = [2]*template{tp, tps[0]}
}

// served puts tp, the scope's second template, which read the last reply,
// first: the template that went longest without serving is replaced next.
func (c *Templates) served(scope uint64, tp *template) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Another request may have changed them since: only a pair that still
	// holds tp second is turned.
	if tps, ok := c.by[scope]; ok && tps[1] == tp {
		c.by[scope] = [2]*template{tp, tps[0]}
	}
}
