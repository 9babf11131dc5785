package ladder

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// The bounds of a Declarations cache: the declarations it remembers, and
// the bytes they hold (their own bytes, and their tools' names and
// parameter schemas), in all and for one. Agents declare tens of KB;
// declarations larger than MaxDeclarationBytes are read every time.
const (
	DeclarationsEntries = 1024
	DeclarationsBytes   = 32 << 20
	MaxDeclarationBytes = 1 << 20
)

// Declarations remembers what the tool declarations of requests read to,
// by their exact bytes: agents send the same tools with every turn, and
// declarations read before, byte for byte, are not walked again (twice
// per request: once for their checks, once for the tools).
//
// An entry holds the bytes of the members that declared the tools, copied,
// under a seeded hash of them and of the format, and the tools read from
// them (names and parameter schemas, copied out of the request). A request
// gets an entry only when its members are the same bytes, compared in
// full: never on a hash alone. So a client learns nothing from the cache
// that it did not send, beyond whether those declarations were sent
// before (which the compiled-schema cache tells as well). Only
// declarations that read without error are remembered; a refused one is
// read again every time, and gets the same error. At most
// DeclarationsEntries entries and about DeclarationsBytes are held, the
// least recently used forgotten first. Declarations is safe for
// concurrent use.
type Declarations struct {
	seed  maphash.Seed
	lru   *lru.Cache[uint64, *declEntry]
	bytes atomic.Int64
	// recent holds, by format, the last entries read strictly whose tools
	// KnownValue offers the strict reading; entries leave it as they leave
	// the cache.
	mu     sync.Mutex
	recent map[string]*recentDecls
	values map[string]wire.KnownValue // KnownValue's, made once a format
}

// RecentTools is how many declarations of a format the strict reading of
// a request compares its tools with (see KnownValue), and MinKnownTools the
// shortest tools it skips: to skip fewer bytes costs about what reading
// them does.
const (
	RecentTools   = 8
	MinKnownTools = 1024
)

type recentDecls struct {
	e    [RecentTools]*declEntry
	next int
}

type declEntry struct {
	key     uint64 // its key in the cache
	format  string
	members []string // the declaring members' bytes
	d       Declared
	weight  int64
}

// same reports whether format and members are e's, byte for byte.
func (e *declEntry) same(format string, members []string) bool {
	return e.format == format && slices.Equal(e.members, members)
}

// Declared is what a request's tool declarations read to. Its Tools may be
// shared by every request that sent the same declarations: they must not
// be changed.
type Declared struct {
	Tools *Tools
	// Legacy says the functions are declared in the legacy "functions"
	// member of a chat request.
	Legacy bool
}

// NewDeclarations returns an empty cache.
func NewDeclarations() *Declarations {
	d := &Declarations{seed: maphash.MakeSeed(), recent: make(map[string]*recentDecls), values: make(map[string]wire.KnownValue)}
	l, err := lru.NewWithEvict(DeclarationsEntries, func(_ uint64, e *declEntry) {
		d.bytes.Add(-e.weight)
		d.forget(e)
	})
	if err != nil {
		panic("ladder: NewDeclarations: " + err.Error())
	}
	d.lru = l
	return d
}

// Read checks the declarations of a request of format that was read
// strictly: the members that declare its tools, as their exact bytes
// (gjson's Raw, "" for a member that is missing). read checks them (its
// error is the request's) and, if tools is set, reads their tools too.
// What it returns without error is remembered, with its names copied out
// of the request, and returned for the same bytes later, unchecked: they
// were checked then. Their first member, the tools, is offered to the
// strict reading of the next requests (see KnownValue). With a nil d,
// members too large to remember, or every member missing (nothing to
// remember: a request without tools), read is called without tools: they
// are read when the request is opened (see Lookup).
func (d *Declarations) Read(format string, members []string, read func(tools bool) (Declared, error)) (Declared, error) {
	size := membersSize(members)
	if d == nil || size > MaxDeclarationBytes || missing(members) {
		return read(false)
	}
	if e := d.lookup(format, members); e != nil {
		d.noteStrict(e)
		return e.d, nil
	}
	v, err := read(true)
	if err != nil {
		return v, err
	}
	w := size + v.Tools.weight()
	if w > MaxDeclarationBytes {
		return v, nil
	}
	v.Tools = v.Tools.detach()
	e := &declEntry{key: d.hash(format, members), format: format, members: make([]string, len(members)), d: v, weight: w}
	for i, m := range members {
		e.members[i] = strings.Clone(m)
	}
	// An entry of another format or other members under the same hash
	// (which no client can aim for without the seed) is replaced.
	d.lru.Remove(e.key)
	d.bytes.Add(e.weight)
	d.lru.Add(e.key, e)
	for d.bytes.Load() > DeclarationsBytes && d.lru.Len() > 1 {
		d.lru.RemoveOldest()
	}
	d.noteStrict(e)
	return v, nil
}

// Lookup returns what the declarations of a request of format, checked by
// Read, read to if it remembers them; ok is false if it does not (the
// caller reads their tools, which Read checked). A nil d remembers nothing.
func (d *Declarations) Lookup(format string, members []string) (_ Declared, ok bool) {
	if d == nil || membersSize(members) > MaxDeclarationBytes || missing(members) {
		return Declared{}, false
	}
	if e := d.lookup(format, members); e != nil {
		return e.d, true
	}
	return Declared{}, false
}

// ReadTools is Read for a format whose declarations are its member tools,
// checked and read in one walk (read's, which refuses them with its
// error).
func (d *Declarations) ReadTools(format string, tools gjson.Result, read func(gjson.Result) (*Tools, error)) (*Tools, error) {
	decl, err := d.Read(format, []string{tools.Raw}, func(bool) (Declared, error) {
		ts, err := read(tools)
		return Declared{Tools: ts}, err
	})
	return decl.Tools, err
}

// OpenTools is Lookup for such a format: the tools of declarations that
// ReadTools checked, remembered or read again.
func (d *Declarations) OpenTools(format string, tools gjson.Result, read func(gjson.Result) (*Tools, error)) (*Tools, error) {
	if decl, ok := d.Lookup(format, []string{tools.Raw}); ok {
		return decl.Tools, nil
	}
	return read(tools)
}

// lookup returns the entry of format and members, nil if there is none.
// The long tools an agent sends every turn are found among those offered
// to the strict reading, compared in full rather than hashed.
func (d *Declarations) lookup(format string, members []string) *declEntry {
	if e := d.recentlyRead(format, members); e != nil {
		d.lru.Get(e.key) // still used, as a hit is
		return e
	}
	if e, ok := d.lru.Get(d.hash(format, members)); ok && e.same(format, members) {
		return e
	}
	return nil
}

// missing reports whether every member is missing ("").
func missing(members []string) bool {
	for _, m := range members {
		if m != "" {
			return false
		}
	}
	return true
}

// membersSize is what copies of members hold.
func membersSize(members []string) int64 {
	var n int64
	for _, m := range members {
		n += int64(len(m)) + 16
	}
	return n
}

// noteStrict offers e's tools to the strict reading of the next requests
// of its format, if they are long enough to be worth skipping.
func (d *Declarations) noteStrict(e *declEntry) {
	if len(e.members) == 0 || len(e.members[0]) < MinKnownTools {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.recent[e.format]
	if r == nil {
		r = new(recentDecls)
		d.recent[e.format] = r
	}
	if slices.Contains(r.e[:], e) {
		return
	}
	r.e[r.next] = e
	r.next = (r.next + 1) % RecentTools
}

// recentlyRead returns the entry of format and members among those offered
// to the strict reading, nil if there is none.
func (d *Declarations) recentlyRead(format string, members []string) *declEntry {
	if len(members) == 0 || len(members[0]) < MinKnownTools {
		return nil
	}
	for _, e := range d.recentOf(format) {
		if e != nil && e.same(format, members) {
			return e
		}
	}
	return nil
}

// recentOf returns the entries of format offered to the strict reading,
// compared by the caller outside the lock.
func (d *Declarations) recentOf(format string) (cands [RecentTools]*declEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.recent[format]; r != nil {
		cands = r.e
	}
	return cands
}

// forget takes e out of the entries offered to the strict reading.
func (d *Declarations) forget(e *declEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.recent[e.format]; r != nil {
		for i := range r.e {
			if r.e[i] == e {
				r.e[i] = nil
			}
		}
	}
}

// KnownValue is what the strict reading of a request of format asks for
// the values it need not read again (see wire.KnownValue): tools that are,
// byte for byte, those of one of the last RecentTools declarations of
// format that Read checked, compared in full. Bytes read
// strictly once read the same again, as the same member of the same
// format. nil for a nil d.
func (d *Declarations) KnownValue(format string) wire.KnownValue {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.values[format]; v != nil {
		return v
	}
	v := func(name string, body []byte, at int) int {
		if name != "tools" {
			return 0
		}
		for _, e := range d.recentOf(format) {
			if e == nil {
				continue
			}
			v := e.members[0]
			if n := len(v); at+n <= len(body) && body[at+n-1] == ']' && string(body[at:at+n]) == v {
				return n
			}
		}
		return 0
	}
	d.values[format] = v
	return v
}

// Len is the number of declarations remembered.
func (d *Declarations) Len() int { return d.lru.Len() }

// hash is the hash of format and members, each with its length first so
// that no two lists of members run together.
func (d *Declarations) hash(format string, members []string) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteString(format)
	h.WriteByte(0) // a format's name holds no NUL
	for _, m := range members {
		var n [8]byte
		for i := range n {
			n[i] = byte(len(m) >> (8 * i))
		}
		h.Write(n[:])
		h.WriteString(m)
	}
	return h.Sum64()
}

// detach returns ts with its names copied: they are read from the request
// in place (wire.Parse), and a remembered Tools outlives the request.
func (ts *Tools) detach() *Tools {
	if ts == nil {
		return nil
	}
	out := &Tools{Names: make([]string, 0, len(ts.Names))}
	for _, name := range ts.Names {
		t := ts.byName[name]
		out.Add(strings.Clone(name), t.Params)
	}
	return out
}

// weight is about the memory ts holds.
func (ts *Tools) weight() int64 {
	var n int64 = 64
	if ts == nil {
		return n
	}
	for _, name := range ts.Names {
		n += int64(2*len(name)+len(ts.byName[name].Params)) + 96
	}
	return n
}
