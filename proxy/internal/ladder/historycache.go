package ladder

import (
	"hash/maphash"
	"math"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// HistoryCacheEntries bounds the prefixes a HistoryCache remembers. An
// entry is a 16-byte key (no content), so the cache holds at most about
// HistoryCacheEntries × 60 bytes with the map's overhead, and 64 KiB of
// counters (see bloom): under 1 MiB.
const HistoryCacheEntries = 8192

// HistoryCache remembers conversation prefixes whose calls need no
// mending: agents send the whole conversation back every turn, and a
// prefix seen before, byte for byte, is not walked and mended again.
//
// It remembers only that verdict, under a key that is a seeded 64-bit hash
// of the scope (the format and the client's credential, so one client
// cannot learn from the cache what another sent) and of the prefix's exact
// bytes, with the prefix's length: never content, never a credential. A
// prefix is remembered only when every call in it was examined in full
// and needed nothing; one that was mended, or that a bound cut short, is
// walked again next time. It holds at most HistoryCacheEntries keys and
// forgets the oldest first. A collision (two prefixes of the same length
// and seeded hash, which a client cannot aim for without the process's
// random seed) would skip mending a prefix's calls: history mending is a
// courtesy to the provider, and those calls still go upstream as sent.
//
// For each scope it also remembers the last RecentPrefixes prefixes it
// learned, for the strict reading of the next request (see Known): such
// a prefix was read strictly, and needs no mending. To skip the strict
// reading, which fails closed, a prefix must match a second hash of 64
// bits as well, under another seed: 128 bits in all.
type HistoryCache struct {
	seed  maphash.Seed
	check maphash.Seed // the second hash of a prefix the strict reading skips
	mu    sync.Mutex
	set   map[prefixKey]struct{}
	order ring[prefixKey] // the set's keys in the order they were added
	// seen counts the set's keys in a counting Bloom filter: a key of
	// which a counter is 0 is not in the set, known without looking it
	// up there. A new conversation looks up a key for each of its items
	// and finds none; in a set of thousands of keys each lookup missed
	// the processor's caches.
	seen bloom
	// recent holds the prefixes learned last, by scope; scopes is the
	// order its scopes came in, the oldest forgotten first past
	// RecentScopes.
	recent map[uint64]*recentPrefixes
	scopes ring[uint64]
}

// ring is the order in which the keys of a bounded set came, so that the
// oldest is forgotten first.
type ring[K any] struct {
	keys []K
	next int // the oldest key, once the ring is full
}

// push adds k to a ring of at most max keys, and returns the key it
// replaces once it is full.
func (r *ring[K]) push(k K, max int) (old K, full bool) {
	if len(r.keys) < max {
		r.keys = append(r.keys, k)
		return old, false
	}
	old = r.keys[r.next]
	r.keys[r.next] = k
	r.next = (r.next + 1) % max
	return old, true
}

// RecentPrefixes is how many prefixes the cache keeps for the strict
// reading in each scope, and RecentScopes the scopes it keeps them for:
// a scope's conversations, interleaved, each find their last prefix among
// the scope's RecentPrefixes. They hold at most RecentScopes ×
// RecentPrefixes × 32 bytes: 256 KiB.
const (
	RecentPrefixes = 32
	RecentScopes   = 256
)

// recentPrefixes is a ring of a scope's last prefixes.
type recentPrefixes struct {
	p    [RecentPrefixes]knownPrefix
	next int
}

// A knownPrefix is a prefix of a conversation's items, from the '[' of
// their array: its length, its key's hash, its hash under the check seed,
// and the hash of its first and last bytes, which rules out most
// candidates without hashing them whole.
type knownPrefix struct {
	n                int
	sum, check, ends uint64
}

// endBytes is how much of each end of a prefix its ends hash covers.
const endBytes = 64

// minKnown is the shortest prefix remembered for the strict reading: to
// skip fewer bytes costs about what reading them does.
const minKnown = 1024

type prefixKey struct {
	sum uint64
	n   int
}

// NewHistoryCache returns an empty cache.
func NewHistoryCache() *HistoryCache {
	return &HistoryCache{seed: maphash.MakeSeed(), check: maphash.MakeSeed(),
		set: make(map[prefixKey]struct{}), recent: make(map[uint64]*recentPrefixes)}
}

// A HistoryUse is one request's use of a HistoryCache, for a scope: the strict
// reading asks it which prefix of the items it knows (Known), and
// MendHistory goes on from the hashes of that prefix, not hashing it again.
type HistoryUse struct {
	c     *HistoryCache
	scope uint64
	// n is the length of the prefix Known found, 0 for none; h holds the
	// hashes of the scope and of that prefix under each seed (nil until
	// Known hashes a prefix: most requests have none to hash, and the two
	// hashes are 300 bytes).
	n int
	h *prefixHashes
	// m mends the request's history (see MendHistory): one allocation,
	// the use's, for both.
	m HistoryMender
}

// prefixHashes are the hashes of a scope and a prefix under the key's seed
// and under the check's.
type prefixHashes struct{ sum, check maphash.Hash }

// Use returns a request's use of the cache for scope (see Scope); nil for
// a nil cache.
func (c *HistoryCache) Use(scope uint64) *HistoryUse {
	if c == nil {
		return nil
	}
	return &HistoryUse{c: c, scope: scope}
}

// KnownPrefix returns t.Known as the strict reading takes it; nil for a
// nil t.
func (t *HistoryUse) KnownPrefix() wire.KnownPrefix {
	if t == nil {
		return nil
	}
	return t.Known
}

// Known tells the strict reading which prefix of its items it need not
// read again (see wire.KnownPrefix): the last one remembered for the
// scope that body starts its items with, at at, byte for byte, under both
// hashes. At most one candidate is hashed whole; the others are ruled out
// by their length and their first and last bytes.
func (t *HistoryUse) Known(body []byte, at int) int {
	c := t.c
	var cands [RecentPrefixes]knownPrefix
	c.mu.Lock()
	r := c.recent[t.scope]
	next := 0
	if r != nil {
		cands, next = r.p, r.next
	}
	c.mu.Unlock()
	if r == nil {
		return 0
	}
	// The newest first.
	for i := range RecentPrefixes {
		k := cands[(next-1-i+RecentPrefixes)%RecentPrefixes]
		if k.n == 0 || at+k.n > len(body) || c.ends(body[at:at+k.n]) != k.ends {
			continue
		}
		p := body[at : at+k.n]
		h := new(prefixHashes)
		c.start(&h.sum, c.seed, t.scope)
		if h.sum.Write(p); h.sum.Sum64() != k.sum {
			return 0
		}
		c.start(&h.check, c.check, t.scope)
		if h.check.Write(p); h.check.Sum64() != k.check {
			return 0
		}
		t.h = h
		t.n = k.n
		return k.n
	}
	return 0
}

// learn remembers the prefix p, from the '[' of a conversation's items,
// for the strict reading of the scope's next request; sum is its key's
// hash. p extends the prefix Known found, if any (MendHistory learns only
// past it): the hash under the check seed goes on from that prefix's.
func (t *HistoryUse) learn(p []byte, sum uint64) {
	if len(p) < minKnown {
		return
	}
	c, scope := t.c, t.scope
	var h maphash.Hash
	if t.n == 0 {
		c.start(&h, c.check, scope)
	} else {
		h = t.h.check
	}
	h.Write(p[t.n:])
	k := knownPrefix{n: len(p), sum: sum, check: h.Sum64(), ends: c.ends(p)}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.recent[scope]
	if r == nil {
		if old, full := c.scopes.push(scope, RecentScopes); full {
			delete(c.recent, old)
		}
		r = new(recentPrefixes)
		c.recent[scope] = r
	}
	r.p[r.next] = k
	r.next = (r.next + 1) % RecentPrefixes
}

// ends is the hash of p's first and last bytes: conversations that share a
// length differ there, most often (a client's first message, or its last).
func (c *HistoryCache) ends(p []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.Write(p[:min(len(p), endBytes)])
	h.Write(p[max(len(p)-endBytes, 0):])
	return h.Sum64()
}

// start makes h the hash under seed of scope, to which a prefix's bytes
// are written.
func (c *HistoryCache) start(h *maphash.Hash, seed maphash.Seed, scope uint64) {
	h.SetSeed(seed)
	var b [8]byte
	for i := range b {
		b[i] = byte(scope >> (8 * i))
	}
	h.Write(b[:])
}

// Len is the number of prefixes remembered.
func (c *HistoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.set)
}

// longest returns the index of the last of keys the cache holds, or -1.
func (c *HistoryCache) longest(keys []prefixKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(keys) - 1; i >= 0; i-- {
		if !c.seen.may(keys[i]) {
			continue
		}
		if _, ok := c.set[keys[i]]; ok {
			return i
		}
	}
	return -1
}

func (c *HistoryCache) add(k prefixKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.set[k]; ok {
		return
	}
	if old, full := c.order.push(k, HistoryCacheEntries); full {
		delete(c.set, old)
		c.seen.remove(old)
	}
	c.set[k] = struct{}{}
	c.seen.add(k)
}

// bloomSize is the counters of a bloom: 64 KiB, eight for each key the
// set holds at most. Two counters a key: about one key in twenty not in a
// full set is looked up there.
const bloomSize = 8 * HistoryCacheEntries

// A bloom is a counting Bloom filter of prefix keys: each key counted in
// two counters. A counter that reaches its most stays there, never taken
// down again: a key it counts may then be looked up in vain, but no key
// the filter holds is ever said to be missing.
type bloom [bloomSize]uint8

// at is where k's two counters are: from its sum, a seeded hash already,
// and its length.
func (*bloom) at(k prefixKey) (uint64, uint64) {
	x := k.sum ^ uint64(k.n)*0x9e3779b97f4a7c15
	return x % bloomSize, (x >> 32) % bloomSize
}

// may reports whether k may have been added and not removed.
func (b *bloom) may(k prefixKey) bool {
	i, j := b.at(k)
	return b[i] > 0 && b[j] > 0
}

func (b *bloom) add(k prefixKey) {
	i, j := b.at(k)
	for _, x := range [2]uint64{i, j} {
		if b[x] < math.MaxUint8 {
			b[x]++
		}
	}
}

// remove takes back an add of k.
func (b *bloom) remove(k prefixKey) {
	i, j := b.at(k)
	for _, x := range [2]uint64{i, j} {
		if b[x] < math.MaxUint8 {
			b[x]--
		}
	}
}

// Scope is the hash of parts (the format, the client's credentials) that
// keeps apart the verdicts of different clients: seeded, so it tells
// nothing of the parts outside this process. 0 for a nil cache.
func (c *HistoryCache) Scope(parts ...string) uint64 {
	if c == nil {
		return 0
	}
	return wire.Scope(c.seed, parts...)
}

// scratch is the per-request room for the prefixes' keys, reused: at most
// wire.MaxItems of them.
type scratch struct{ keys []prefixKey }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// MendHistory mends the calls of the conversation items (the array whose
// items mb records) with a HistoryMender, handing each item to each, which
// hands its calls to the mender; where the strict reading recorded the
// items' calls (wire.Members.Calls), calls, not each, is handed each item
// that holds one (its text, in place: see wire.Members.Unparsed) with
// those calls, in the body's order, and an item without one is not handed
// over; calls must do what each does with the item, and may be nil. With a
// cache (t, a request's use of one, not nil), the items of the longest
// prefix the cache holds for the scope are skipped, and the longest prefix
// found to need nothing is remembered. Items the strict reading skipped
// (mb.Known: a prefix t.Known found) are not walked. The body comes back
// unchanged, byte for byte, when nothing needed mending.
func MendHistory(mb *wire.Members, t *HistoryUse, each func(m *HistoryMender, item gjson.Result), calls func(m *HistoryMender, mb *wire.Members, item gjson.Result, calls []wire.Call)) ([]byte, []repair.Edit, error) {
	body, items := mb.Body(), mb.ItemsValue()
	var m *HistoryMender
	if t != nil {
		m = &t.m
		*m = HistoryMender{budget: maxHistoryMendBytes}
	} else {
		m = NewHistoryMender()
	}
	spans, ok := mb.Items()
	if t == nil || !ok || items.Index <= 0 || (mb.Known() > 0 && mb.Known() != t.n) {
		// Every item, those the strict reading skipped (mb.Known) too.
		items.ForEach(func(_, item gjson.Result) bool {
			each(m, item)
			return true
		})
		return m.Body(body)
	}
	c := t.c
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	// The key of each prefix: the hash of the scope and of the bytes from
	// the array's start to the end of the item. The prefix the strict
	// reading skipped is known to need nothing, and its hash is t's.
	keys := sc.keys[:0]
	var h maphash.Hash
	from := items.Index
	if n := mb.Known(); n > 0 {
		h = t.h.sum // Known found the prefix: n is t.n
		from += n
	} else {
		c.start(&h, c.seed, t.scope)
	}
	for _, s := range spans {
		h.Write(body[from:s.End])
		from = s.End
		keys = append(keys, prefixKey{sum: h.Sum64(), n: s.End - items.Index})
	}
	sc.keys = keys
	// The items after the longest prefix known to need nothing; the
	// longest prefix found to need nothing is remembered.
	known := c.longest(keys)
	clean := known
	cs, byCalls := mb.Calls()
	byCalls = byCalls && calls != nil
	j := 0 // the first call of an item at or after the next
	for i := known + 1; i < len(spans); i++ {
		if byCalls {
			for j < len(cs) && cs[j].Item < i {
				j++
			}
			k := j
			for k < len(cs) && cs[k].Item == i {
				k++
			}
			if k > j {
				calls(m, mb, mb.Unparsed(spans[i]), cs[j:k])
			}
			j = k
		} else {
			each(m, mb.Item(spans[i]))
		}
		if !m.unsure {
			clean = i
		}
	}
	if clean > known {
		c.add(keys[clean])
		t.learn(body[items.Index:items.Index+keys[clean].n], keys[clean].sum)
	}
	return m.Body(body)
}
