package ladder

import (
	"hash/maphash"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// HistoryCacheEntries bounds the prefixes a HistoryCache remembers. An
// entry is a 16-byte key (no content), so the cache holds at most about
// HistoryCacheEntries × 60 bytes with the map's overhead: under 1 MiB.
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
type HistoryCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	set  map[prefixKey]struct{}
	ring []prefixKey // keys in the order they were added
	next int         // the ring's oldest key, once it is full
}

type prefixKey struct {
	sum uint64
	n   int
}

// NewHistoryCache returns an empty cache.
func NewHistoryCache() *HistoryCache {
	return &HistoryCache{seed: maphash.MakeSeed(), set: make(map[prefixKey]struct{})}
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
	if len(c.ring) < HistoryCacheEntries {
		c.ring = append(c.ring, k)
	} else {
		delete(c.set, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % HistoryCacheEntries
	}
	c.set[k] = struct{}{}
}

// Scope is the hash of parts (the format, the client's credentials) that
// keeps apart the verdicts of different clients: seeded, so it tells
// nothing of the parts outside this process. 0 for a nil cache.
func (c *HistoryCache) Scope(parts ...string) uint64 {
	if c == nil {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(c.seed)
	for _, p := range parts {
		h.WriteString(p)
		h.WriteByte(0) // header values hold no NUL: the parts cannot run together
	}
	return h.Sum64()
}

// scratch is the per-request room for the prefixes' keys, reused: at most
// wire.MaxItems of them.
type scratch struct{ keys []prefixKey }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// MendHistory mends the calls of the conversation items (the array whose
// items mb records) with a HistoryMender, handing each item to each, which
// hands its calls to the mender. With a cache, the items of the longest
// prefix the cache holds for scope (see Scope) are skipped, and the longest
// prefix found to need nothing is remembered. The body comes back
// unchanged, byte for byte, when nothing needed mending.
func MendHistory(mb *wire.Members, c *HistoryCache, scope uint64, each func(m *HistoryMender, item gjson.Result)) ([]byte, []repair.Edit, error) {
	body, items := mb.Body(), mb.ItemsValue()
	m := NewHistoryMender()
	spans, ok := mb.Items()
	if c == nil || !ok || items.Index <= 0 {
		items.ForEach(func(_, item gjson.Result) bool {
			each(m, item)
			return true
		})
		return m.Body(body)
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	// The key of each prefix: the hash of the scope and of the bytes from
	// the array's start to the end of the item.
	keys := sc.keys[:0]
	var h maphash.Hash
	h.SetSeed(c.seed)
	var sb [8]byte
	for i := range sb {
		sb[i] = byte(scope >> (8 * i))
	}
	h.Write(sb[:])
	from := items.Index
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
	for i := known + 1; i < len(spans); i++ {
		each(m, mb.Item(spans[i]))
		if !m.unsure {
			clean = i
		}
	}
	if clean > known {
		c.add(keys[clean])
	}
	return m.Body(body)
}
