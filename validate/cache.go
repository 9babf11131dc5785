package validate

import (
	"bytes"
	"crypto/sha256"
	"hash/maphash"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Cache holds compiled schemas keyed by their bytes: found by a seeded hash
// of them, and compared in full before an entry is used. A client sends the
// same tool declarations with every turn of a conversation, so the compile
// cost (about 30 times that of a validation) is paid once per schema.
// Compile failures are cached too, so a broken schema is reported once, not
// once per request. Cache is safe for concurrent use.
type Cache struct {
	lru   *lru.Cache[uint64, entry]
	seed  maphash.Seed
	group singleflight.Group

	// OnCompileError, if not nil, is called once for each schema that fails
	// to compile (again only if it was evicted and comes back). It must not
	// block.
	OnCompileError func(raw []byte, err error)

	hits, misses, failures atomic.Uint64

	maxBytes int64 // 0: bounded by count only
	bytes    atomic.Int64
}

// entry is a compiled schema, with its bytes (its Raw), or a compile
// failure, with the SHA-256 of its bytes: a failure does not keep a schema
// that may be large and was refused. Either is compared with the bytes
// asked for on every hit (holds).
type entry struct {
	raw    []byte
	sum    [sha256.Size]byte
	s      *Schema
	err    error
	weight int64
}

func (e entry) holds(raw []byte) bool {
	if e.err != nil {
		return e.sum == sha256.Sum256(raw)
	}
	return bytes.Equal(e.raw, raw)
}

// Stats are the cache's counters since it was made.
type Stats struct {
	Hits, Misses, CompileErrors uint64
	Size                        int
	Bytes                       int64 // estimated memory held (see Schema.Weight)
}

// NewCache returns a cache holding at most size schemas; size must be > 0.
// SetMaxBytes bounds it by memory as well.
func NewCache(size int) *Cache {
	c := &Cache{seed: maphash.MakeSeed()}
	l, err := lru.NewWithEvict(size, func(_ uint64, e entry) { c.bytes.Add(-e.weight) })
	if err != nil {
		panic("validate: NewCache: " + err.Error())
	}
	c.lru = l
	return c
}

// SetMaxBytes bounds the memory the cached schemas hold, as estimated by
// Schema.Weight; least recently used schemas are evicted past it. It must be
// called before the cache is used.
func (c *Cache) SetMaxBytes(n int64) { c.maxBytes = n }

// failureWeight is what a cached compile failure holds: its error and the
// SHA-256 of its bytes.
const failureWeight = 256

// Get returns the compiled schema for raw, compiling it on first use.
// Concurrent calls for the same new schema compile it once.
//
// The key is a 64-bit hash with a seed of the process's own, which no client
// sees, so no client can aim two schemas at one key. Two schemas that share
// one all the same are told apart by their bytes: each is compiled for
// itself, and they take the entry in turn.
func (c *Cache) Get(raw []byte) (*Schema, error) {
	return c.get(maphash.Bytes(c.seed, raw), raw)
}

// get is Get with the key given, so that a test can make two schemas share it.
func (c *Cache) get(key uint64, raw []byte) (*Schema, error) {
	if e, ok := c.lru.Get(key); ok && e.holds(raw) {
		c.hits.Add(1)
		return e.s, e.err
	}
	c.misses.Add(1)
	// Concurrent misses share a compile only when their bytes are the
	// same: the singleflight key is their SHA-256 (a miss compiles, which
	// costs far more).
	sum := sha256.Sum256(raw)
	v, _, _ := c.group.Do(string(sum[:]), func() (any, error) {
		if e, ok := c.lru.Get(key); ok && e.holds(raw) {
			return e, nil
		}
		// The cache keeps the bytes beyond the request that brought them.
		own := append([]byte(nil), raw...)
		s, err := Compile(own)
		e := entry{s: s, err: err, weight: failureWeight, sum: sum}
		if err == nil {
			e.raw, e.weight = own, s.Weight()
		}
		c.bytes.Add(e.weight)
		c.lru.Add(key, e)
		for c.maxBytes > 0 && c.bytes.Load() > c.maxBytes && c.lru.Len() > 1 {
			c.lru.RemoveOldest()
		}
		if err != nil {
			c.failures.Add(1)
			if c.OnCompileError != nil {
				c.OnCompileError(raw, err)
			}
		}
		return e, nil
	})
	e := v.(entry)
	return e.s, e.err
}

// Stats returns the counters and the current number of entries.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits:          c.hits.Load(),
		Misses:        c.misses.Load(),
		CompileErrors: c.failures.Load(),
		Size:          c.lru.Len(),
		Bytes:         c.bytes.Load(),
	}
}
