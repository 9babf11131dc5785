package wire

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// A body that toolguard inspects must be read by toolguard exactly as the
// party on the other side reads it. JSON leaves room for disagreement, and
// each gap lets a crafted body show toolguard one thing and the upstream (or
// the client) another:
//
//   - duplicate member names: gjson reads the first, Python's json, Go's
//     encoding/json and JavaScript's JSON.parse read the last;
//   - member names in another letter case: Go servers decoding into structs
//     match "Tools" to tools (encoding/json folds case, Kelvin sign and long s
//     included);
//   - what is not JSON at all but that some parsers accept: a byte order
//     mark, NaN and Infinity, data after the value, invalid UTF-8 (which Go
//     replaces and Python refuses), UTF-16.
//
// Strict refuses all of these. It tokenises the body once with jsontext,
// which rejects duplicate names, invalid UTF-8 and anything beyond RFC 8259,
// and checks the objects toolguard reads (described by a Shape) for names
// that differ from one it reads only in case. What passes is read the same
// way by gjson and by every common parser.

// Shape names the members of an object that toolguard reads, each with the
// Shape of its value. A Shape applies to an object, and to each element of
// an array. A nil Shape means toolguard reads the value but nothing inside.
// Names are lowercase ASCII, as every API toolguard reads spells them (see
// LowercaseNames): Strict relies on it.
type Shape map[string]Shape

// LowercaseNames reports the first name in s, or in a Shape within it, that
// is not lowercase ASCII. Strict needs none: a name of lowercase ASCII
// letters and other ASCII bytes that a Shape does not hold cannot fold to
// one it holds, so it is not compared with each.
func LowercaseNames(s Shape) error {
	return lowercaseNames(s, map[uintptr]bool{})
}

func lowercaseNames(s Shape, seen map[uintptr]bool) error {
	p := reflect.ValueOf(s).Pointer()
	if seen[p] {
		return nil // a Shape that holds itself
	}
	seen[p] = true
	for k, child := range s {
		for i := 0; i < len(k); i++ {
			if c := k[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
				return fmt.Errorf("shape name %q is not lowercase ASCII", k)
			}
		}
		if err := lowercaseNames(child, seen); err != nil {
			return err
		}
	}
	return nil
}

// A shape is a Shape ready to be read under: its names by length, each with
// the shape of its value. A name is compared only with those of its length:
// the objects of an API have a few names, most of lengths of their own, and
// the map's lookup hashed each name (a message's nine names are past the
// map's small form), a tenth of a long conversation's strict reading. A nil
// *shape is a nil Shape: the value is read whole.
type shape struct {
	names []string // shortest first, those of a length in order
	kids  []*shape
	// from[n] is the index of the first name of n bytes or more; from[32]
	// for names of 32 bytes or more.
	from [33]int32
}

// child returns the shape of the value of the member name, and whether s
// names it; a nil s names nothing.
func (s *shape) child(name []byte) (*shape, bool) {
	if s == nil {
		return nil, false
	}
	for i := int(s.from[min(len(name), len(s.from)-1)]); i < len(s.names); i++ {
		k := s.names[i]
		if len(k) > len(name) {
			break
		}
		if len(k) == len(name) && k == string(name) {
			return s.kids[i], true
		}
	}
	return nil, false
}

// shapes holds the shapes made of the Shapes read under, by the Shape's
// map (see shapeOf): a format's Shapes are made once. It keeps at most
// maxShapes; past them a Shape is made again each time it is read under.
var (
	shapes     sync.Map // unsafe.Pointer → *shape
	shapesMu   sync.Mutex
	shapeCount int // the shapes stored, under shapesMu
)

const maxShapes = 64

// compiled returns the shape of s; nil for a nil s. A Shape must not change
// once a body is read under it.
func compiled(s Shape) *shape {
	if s == nil {
		return nil
	}
	key := shapeOf(s)
	if c, ok := shapes.Load(key); ok {
		return c.(*shape)
	}
	c := compile(s, map[unsafe.Pointer]*shape{})
	shapesMu.Lock()
	defer shapesMu.Unlock()
	if old, ok := shapes.Load(key); ok {
		return old.(*shape)
	}
	if shapeCount < maxShapes {
		shapes.Store(key, c)
		shapeCount++
	}
	return c
}

// compile makes the shape of a non-nil s; made holds those made so far, for
// a Shape that holds itself.
func compile(s Shape, made map[unsafe.Pointer]*shape) *shape {
	key := shapeOf(s)
	if c := made[key]; c != nil {
		return c
	}
	c := &shape{names: slices.SortedFunc(maps.Keys(s), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	})}
	made[key] = c
	c.kids = make([]*shape, len(c.names))
	for i, k := range c.names {
		if child := s[k]; child != nil {
			c.kids[i] = compile(child, made)
		}
	}
	for n := range c.from {
		c.from[n] = int32(sort.Search(len(c.names), func(i int) bool { return len(c.names[i]) >= n }))
	}
	return c
}

// mayFold reports whether name could fold to a lowercase ASCII name other
// than itself: it holds an uppercase ASCII letter, or a byte beyond ASCII
// (the Kelvin sign folds to k, the long s to s, the dotless ı to i).
func mayFold(name []byte) bool {
	for _, c := range name {
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// StrictError says why a body cannot be read unambiguously.
type StrictError struct {
	Pointer string // where, as a JSON pointer ("" for the whole body)
	Reason  string
	// Ambiguous is set when the body is JSON that parsers read
	// differently (a duplicate name, a name in another letter case), not
	// when it is no JSON at all.
	Ambiguous bool
}

func (e *StrictError) Error() string {
	if e.Pointer == "" {
		return e.Reason
	}
	return e.Reason + " at " + Clip(e.Pointer, 120)
}

// Strict reports whether body is exactly one JSON value that every
// common parser reads as toolguard does; s describes the objects whose member
// names toolguard reads.
func Strict(body []byte, s Shape) error { return StrictMembers(body, s, nil) }

// StrictMembers is Strict, recording in m (if not nil) where the body's
// top-level members are and the items of the one m names, in the same pass.
func StrictMembers(body []byte, s Shape, m *Members) error {
	return StrictMembersKnown(body, s, m, nil, nil)
}

// KnownPrefix reports a prefix of a body's items that a strict reading has
// read before, in a body read under the same Shape: at is where the items'
// array begins (its '['), and the prefix is body[at:at+n], from the '[' to
// the end of an item, byte for byte the same as then. It returns 0 for none.
//
// Bytes read strictly once read the same again: an item's checks (its
// syntax, UTF-8, its objects' names) depend on its bytes and the Shape
// alone, never on what is around it.
type KnownPrefix func(body []byte, at int) (n int)

// KnownValue reports an array that a strict reading has read before as the
// value of the top-level member name, in a body read under the same Shape:
// at is where the value begins (its '['), and the value is body[at:at+n],
// byte for byte the same as then. It returns 0 for none. A value's checks
// depend on its bytes and on the Shape of its member alone, as an item's
// do (see KnownPrefix).
type KnownValue func(name string, body []byte, at int) (n int)

// StrictMembersKnown is StrictMembers, skipping the items of the prefix
// that known reports and the values of top-level members that value
// reports (either may be nil): only the bytes around them are read. m.Known
// is the length of the prefix skipped, and m.Items the spans of the items
// after it; the members skipped are recorded where they are. A body that
// is not read strictly in this way is read again in full, whose error,
// counting every item, is the one returned.
func StrictMembersKnown(body []byte, s Shape, m *Members, known KnownPrefix, value KnownValue) error {
	_, err := strictMembersKnown(body, s, m, known, value, nil)
	return err
}

// strictMembersKnown is StrictMembersKnown, recording in rec (if not nil)
// where the strings and numbers read whole are (see walkStrict); whole
// reports that the reading returned is one of every byte of the body,
// nothing skipped, which alone records them.
func strictMembersKnown(body []byte, s Shape, m *Members, known KnownPrefix, value KnownValue, rec *[]Span) (whole bool, _ error) {
	if m == nil || (known == nil && value == nil) {
		err := strictMembers(body, s, m, nil, nil, nil, rec)
		return rec != nil && m != nil, err
	}
	sk := skipRead{items: -1}
	var buf *[]byte // sk.in's, from skipPool, once a part is skipped
	defer func() {
		if buf != nil && cap(sk.in) <= maxPooledSkip {
			*buf = sk.in[:0]
			skipPool.Put(buf)
		}
	}()
	// Each reading that finds a part to skip starts again without it: at
	// most one prefix and one value, so at most three readings, the bytes
	// before the parts read again each time.
	for {
		var without *skipRead
		r := rec
		if buf != nil {
			without, r = &sk, nil
		}
		err := strictMembers(body, s, m, known, value, without, r)
		found, skipping := err.(*skipFound)
		if !skipping {
			if err != nil && buf != nil {
				return false, strictMembers(body, s, m, nil, nil, nil, nil)
			}
			return r != nil, err
		}
		if buf == nil {
			buf = skipPool.Get().(*[]byte)
			sk.in = (*buf)[:0]
		}
		if !sk.add(body, *found) {
			return false, strictMembers(body, s, m, nil, nil, nil, nil)
		}
	}
}

// skipFound is what strictMembers returns on finding a part of the body
// to skip: body[at+1:cut], the known prefix's items (n is its length) or
// the inside of a known value. The reading starts again without it.
type skipFound struct {
	at, cut, n int
	value      bool
	// asked is what known answered, if it was asked, in the reading that
	// found a value: the next one does not ask again.
	asked answer
}

// answer is what known answered, n, once it was asked (ok).
type answer struct {
	n  int
	ok bool
}

func (*skipFound) Error() string { return "wire: a known part of the body is skipped" }

// skipRead is a reading of a body without the parts known (a prefix of the
// items, a value): in is the body with each cut's bytes taken out.
type skipRead struct {
	in    []byte
	cuts  [2]skipCut // in the order of the body
	ncuts int
	// items is where the items' '[' is in the body when their known prefix
	// (of length n) is taken out, -1 when it is not.
	items, n int
	value    bool   // a value is taken out
	asked    answer // what known answered, once asked
}

// A skipCut takes body[at+1:at+1+delta] out: after the '[' at at (an
// offset of the body; in is the offset of the '[' in the reading).
type skipCut struct{ at, in, delta int }

// add takes the part found out of the reading as well, and reports whether
// it is one of a kind not taken out yet.
func (k *skipRead) add(body []byte, f skipFound) bool {
	if (f.value && k.value) || (!f.value && k.items >= 0) {
		return false
	}
	if f.value {
		k.value, k.asked = true, f.asked
	} else {
		k.items, k.n = f.at, f.n
	}
	k.cuts[k.ncuts] = skipCut{at: f.at, delta: f.cut - f.at - 1}
	k.ncuts++
	if k.ncuts == 2 && k.cuts[0].at > k.cuts[1].at {
		// Found second but first in the body: a value the cache learned
		// while the body was being read.
		k.cuts[0], k.cuts[1] = k.cuts[1], k.cuts[0]
	}
	k.in = k.in[:0]
	from, taken := 0, 0
	for i, c := range k.cuts[:k.ncuts] {
		k.in = append(k.in, body[from:c.at+1]...)
		k.cuts[i].in = c.at - taken
		from, taken = c.at+1+c.delta, taken+c.delta
	}
	k.in = append(k.in, body[from:]...)
	return true
}

// maxPooledSkip bounds the buffers kept for the readings without a prefix.
const maxPooledSkip = 1 << 20

var skipPool = sync.Pool{New: func() any { return new([]byte) }}

// cutAfter is where the reading without the known prefix body[at:at+n]
// resumes: past the comma after it, or at the ']' that closes the items.
// ok is false when neither follows the prefix (its last item does not end
// there in this body), or when the prefix does not start at '['.
func cutAfter(body []byte, at, n int) (cut int, ok bool) {
	if n <= 1 || at+n > len(body) || body[at] != '[' {
		return 0, false
	}
	j := skipSpace(body, at+n)
	switch {
	case j == len(body):
		return 0, false
	case body[j] == ',':
		// "[a,]" is not JSON, but "[" and "]" are: an item must follow.
		if k := skipSpace(body, j+1); k < len(body) && body[k] != ']' {
			return j + 1, true
		}
	case body[j] == ']':
		return at + n, true
	}
	return 0, false
}

// skipSpace returns the offset of the first byte from i on that is not JSON
// white space.
func skipSpace(body []byte, i int) int {
	return len(body) - len(bytes.TrimLeft(body[i:], " \t\n\r"))
}

// strictMembers is StrictMembersKnown's one reading: without the parts in
// sk, if not nil; recording in rec, if not nil, where the strings and
// numbers read whole are (see walkStrict), which needs m and no sk.
func strictMembers(body []byte, s Shape, m *Members, known KnownPrefix, value KnownValue, sk *skipRead, rec *[]Span) error {
	in := body
	if m != nil {
		m.reset(body)
		m.known, m.value, m.scalars = known, value, rec
		if sk != nil {
			in, m.skip = sk.in, *sk
		}
	}
	if bytes.HasPrefix(in, []byte("\xef\xbb\xbf")) {
		return &StrictError{Reason: "the body starts with a byte order mark"}
	}
	st := strictPool.Get().(*strictState)
	defer strictPool.Put(st)
	// From a bytes.Buffer, jsontext reads the body in place, without
	// copying it: the values it returns are slices of body.
	st.b = *bytes.NewBuffer(in)
	st.d.Reset(&st.b)
	defer func() {
		// Keep no reference to body in the pool.
		st.b = bytes.Buffer{}
		st.d.Reset(&st.empty)
		if m != nil {
			m.known, m.value, m.skip, m.scalars = nil, nil, skipRead{items: -1}, nil
		}
	}()
	var err error
	if m != nil && st.d.PeekKind() == '{' {
		err = walkTop(st.d, compiled(s), m)
	} else {
		err = walkStrict(st.d, compiled(s), nil)
	}
	if err != nil {
		return err
	}
	if _, err := st.d.ReadToken(); err != io.EOF {
		return &StrictError{Reason: "the body holds more than one JSON value"}
	}
	return nil
}

// strictState is a decoder and its reader, reused: making a decoder costs
// a few dozen allocations, and a stream checks every event.
type strictState struct {
	b     bytes.Buffer
	empty bytes.Reader
	d     *jsontext.Decoder
}

var strictPool = sync.Pool{New: func() any {
	st := &strictState{}
	st.d = jsontext.NewDecoder(&st.empty)
	return st
}}

// walkStrict reads one value from d, checking the member names of objects
// that s describes. If rec is not nil, the span of each string and number
// read whole (under a nil Shape) is appended to it, in the order of the
// input.
func walkStrict(d *jsontext.Decoder, s *shape, rec *[]Span) error {
	if s == nil {
		// Read whole, in one call, and still checked: jsontext checks
		// duplicate names, UTF-8 and syntax in values toolguard does not
		// read (SkipValue would check the same a token at a time).
		raw, err := d.ReadValue()
		if err != nil {
			return syntaxError(d, err)
		}
		// One past the bound is enough to tell it was passed.
		if rec != nil && len(*rec) <= maxTemplateValues && scalarKind(raw) {
			end := int(d.InputOffset())
			*rec = append(*rec, Span{end - len(raw), end})
		}
		return nil
	}
	tok, err := d.ReadToken()
	if err != nil {
		return syntaxError(d, err)
	}
	switch tok.Kind() {
	case '{':
		for d.PeekKind() == '"' {
			_, child, err := memberName(d, s)
			if err != nil {
				return err
			}
			if err := walkStrict(d, child, rec); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil { // '}'
			return syntaxError(d, err)
		}
	case '[':
		for k := d.PeekKind(); k != ']' && k != 0; k = d.PeekKind() {
			if err := walkStrict(d, s, rec); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil { // ']'
			return syntaxError(d, err)
		}
	}
	return nil
}

// memberName reads the name of an object's member, checks that it does not
// differ from a name of s only in letter case, and returns it as servers
// read it (unquoted, escapes decoded; in place, a slice of the body, when it
// holds no escape) with the Shape of its value.
func memberName(d *jsontext.Decoder, s *shape) ([]byte, *shape, error) {
	raw, err := d.ReadValue()
	if err != nil {
		return nil, nil, syntaxError(d, err)
	}
	var n []byte
	if bytes.IndexByte(raw, '\\') < 0 {
		n = raw[1 : len(raw)-1]
	} else if n, err = jsontext.AppendUnquote(nil, raw); err != nil {
		return nil, nil, syntaxError(d, err)
	}
	child, known := s.child(n)
	if !known && s != nil && mayFold(n) {
		// Read in place, not kept: no copy of the name is made.
		ns := unsafe.String(unsafe.SliceData(n), len(n))
		for _, k := range s.names {
			if foldsTo(k, ns) {
				return nil, nil, &StrictError{Pointer: string(d.StackPointer()), Ambiguous: true,
					Reason: fmt.Sprintf("member %q differs from %q only in letter case", Clip(string(n), 64), k)}
			}
		}
	}
	return n, child, nil
}

// walkTop is walkStrict for the body's top-level object, recording where
// each member's value is in m, and each item of the member m names.
func walkTop(d *jsontext.Decoder, s *shape, m *Members) error {
	if _, err := d.ReadToken(); err != nil { // '{'
		return syntaxError(d, err)
	}
	m.object = true
	in := m.input()
	for d.PeekKind() == '"' {
		n, child, err := memberName(d, s)
		if err != nil {
			return err
		}
		// n is a slice of the input unless the name held an escape; the
		// input outlives the reading only when it is the body.
		name := unsafe.String(unsafe.SliceData(n), len(n))
		if m.skip.in != nil {
			name = strings.Clone(name)
		}
		start := valueStart(in, int(d.InputOffset()))
		at := m.skip.pos(start) // in the body
		switch {
		case m.items != "" && name == m.items && d.PeekKind() == '[':
			switch {
			case m.skip.items >= 0 && at != m.skip.items:
				return errors.New("wire: the items moved")
			case m.skip.items >= 0:
				m.skipped = m.skip.n
			case m.known != nil:
				if !m.skip.asked.ok {
					m.skip.asked = answer{n: m.known(m.body, at), ok: true}
				}
				n := m.skip.asked.n
				if cut, ok := cutAfter(m.body, at, n); ok {
					return &skipFound{at: at, cut: cut, n: n}
				}
			}
			err = walkItems(d, child, m)
		case m.value != nil && !m.skip.value && d.PeekKind() == '[':
			if n := m.value(name, m.body, at); n > 2 && at+n <= len(m.body) && m.body[at] == '[' && m.body[at+n-1] == ']' {
				return &skipFound{at: at, cut: at + n - 1, n: n, value: true, asked: m.skip.asked}
			}
			err = walkStrict(d, child, nil)
		default:
			err = walkStrict(d, child, m.scalars)
		}
		if err != nil {
			return err
		}
		m.record(name, m.span(start, int(d.InputOffset())))
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return syntaxError(d, err)
	}
	return nil
}

// walkItems is walkStrict for the array m names, recording where each of
// its items is, up to MaxItems.
func walkItems(d *jsontext.Decoder, s *shape, m *Members) error {
	if _, err := d.ReadToken(); err != nil { // '['
		return syntaxError(d, err)
	}
	m.itemsOK = true
	m.callsOK = m.callIn != nil
	in := m.input()
	for k := d.PeekKind(); k != ']' && k != 0; k = d.PeekKind() {
		start := valueStart(in, int(d.InputOffset()))
		var err error
		switch {
		case k == '{' && m.callIn != nil && m.callIn[0].Name == "":
			err = walkCall(d, s, m, 0) // the item is a call
		case k == '{' && m.callIn != nil:
			err = walkItem(d, s, m)
		default:
			err = walkStrict(d, s, m.scalars)
		}
		if err != nil {
			return err
		}
		if len(m.spans) == MaxItems {
			m.spans, m.itemsOK = m.spans[:0], false
		}
		if m.itemsOK {
			m.spans = append(m.spans, m.span(start, int(d.InputOffset())))
		}
	}
	if _, err := d.ReadToken(); err != nil { // ']'
		return syntaxError(d, err)
	}
	return nil
}

// walkItem is walkStrict for an object among the items, recording where
// the calls are under the members that hold them (see Members.Calls).
func walkItem(d *jsontext.Decoder, s *shape, m *Members) error {
	return walkMembers(d, s, func(n []byte, child *shape) error {
		switch c := m.callMember(n); {
		case c < 0:
			return walkStrict(d, child, m.scalars)
		case m.callIn[c].One && d.PeekKind() == '{':
			return walkCall(d, child, m, c)
		case !m.callIn[c].One && d.PeekKind() == '[':
			return walkCalls(d, child, m, c)
		default:
			return walkStrict(d, child, m.scalars)
		}
	})
}

// walkMembers reads an object from d, handing the name of each of its
// members, and the Shape s gives its value, to value, which reads the
// value.
func walkMembers(d *jsontext.Decoder, s *shape, value func(name []byte, child *shape) error) error {
	if _, err := d.ReadToken(); err != nil { // '{'
		return syntaxError(d, err)
	}
	for d.PeekKind() == '"' {
		n, child, err := memberName(d, s)
		if err != nil {
			return err
		}
		if err := value(n, child); err != nil {
			return err
		}
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return syntaxError(d, err)
	}
	return nil
}

// walkCalls is walkStrict for an array of calls, of the call member of
// index c, recording where each of its values is.
func walkCalls(d *jsontext.Decoder, s *shape, m *Members, c int) error {
	if _, err := d.ReadToken(); err != nil { // '['
		return syntaxError(d, err)
	}
	for k := d.PeekKind(); k != ']' && k != 0; k = d.PeekKind() {
		if k == '{' {
			if err := walkCall(d, s, m, c); err != nil {
				return err
			}
			continue
		}
		var at Span
		if err := walkAt(d, s, m, &at); err != nil {
			return err
		}
		m.recordCall(c, at.Start, at.End, Span{}, Span{})
	}
	if _, err := d.ReadToken(); err != nil { // ']'
		return syntaxError(d, err)
	}
	return nil
}

// walkCall is walkStrict for a call, an object, of the call member of
// index c, recording where it is, where its arguments are and where its
// Type member is.
func walkCall(d *jsontext.Decoder, s *shape, m *Members, c int) error {
	start := valueStart(m.input(), int(d.InputOffset()))
	cm := &m.callIn[c]
	var args, typ Span
	err := walkMembers(d, s, func(n []byte, child *shape) error {
		switch {
		case cm.Type != "" && string(n) == cm.Type:
			return walkAt(d, child, m, &typ)
		case len(cm.Args) > 0 && string(n) == cm.Args[0]:
			return walkTo(d, child, m, cm.Args[1:], &args)
		default:
			return walkStrict(d, child, m.scalars)
		}
	})
	if err != nil {
		return err
	}
	m.recordCall(c, start, int(d.InputOffset()), args, typ)
	return nil
}

// walkTo is walkStrict for a value, recording in at where the value at the
// end of path, down from it, is, when every value on the way to it is an
// object: the value itself for an empty path.
func walkTo(d *jsontext.Decoder, s *shape, m *Members, path []string, at *Span) error {
	switch {
	case len(path) == 0:
		return walkAt(d, s, m, at)
	case d.PeekKind() != '{':
		return walkStrict(d, s, m.scalars)
	}
	return walkMembers(d, s, func(n []byte, child *shape) error {
		if string(n) != path[0] {
			return walkStrict(d, child, m.scalars)
		}
		return walkTo(d, child, m, path[1:], at)
	})
}

// walkAt is walkStrict for a value, recording in at where it is.
func walkAt(d *jsontext.Decoder, s *shape, m *Members, at *Span) error {
	start := valueStart(m.input(), int(d.InputOffset()))
	if err := walkStrict(d, s, m.scalars); err != nil {
		return err
	}
	*at = Span{start, int(d.InputOffset())}
	return nil
}

// foldsTo reports whether a server matching member names without regard to
// letter case could read name as known. Go's encoding/json folds by Unicode
// simple folding (strings.EqualFold: the Kelvin sign is k, the long s is s);
// .NET's case-insensitive binding, ASP.NET Core's default, compares upper
// cases, in which the dotless ı is I; others compare lower cases, in which
// İ is i. A name any of them matches is a match.
func foldsTo(known, name string) bool {
	if strings.EqualFold(known, name) {
		return true
	}
	for _, k := range known {
		if name == "" {
			return false
		}
		n, size := utf8.DecodeRuneInString(name)
		name = name[size:]
		if unicode.ToUpper(k) != unicode.ToUpper(n) && unicode.ToLower(k) != unicode.ToLower(n) {
			return false
		}
	}
	return name == ""
}

// syntaxError turns a jsontext error into a StrictError that says what is
// wrong in words a client can act on.
func syntaxError(d *jsontext.Decoder, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &StrictError{Reason: "the body ends before its JSON value does"}
	}
	reason := "the body is not valid JSON"
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		switch {
		case errors.Is(se.Err, jsontext.ErrDuplicateName):
			return &StrictError{Pointer: string(se.JSONPointer), Reason: "duplicate member name", Ambiguous: true}
		case errors.Is(se.Err, jsontext.ErrNonStringName):
			reason = "an object member name is not a string"
		case strings.Contains(se.Err.Error(), "UTF-8"):
			reason = "the body is not valid UTF-8"
		default:
			reason = "the body is not valid JSON (" + se.Err.Error() + ")"
		}
		return &StrictError{Pointer: string(se.JSONPointer), Reason: reason}
	}
	return &StrictError{Pointer: string(d.StackPointer()), Reason: reason}
}
