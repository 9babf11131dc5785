package validate

import (
	"crypto/sha256"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Cache holds compiled schemas keyed by the SHA-256 of their bytes. A client
// sends the same tool declarations with every turn of a conversation, so the
// compile cost (about 30 times that of a validation) is paid once per schema.
// Compile failures are cached too, so a broken schema is reported once, not
// once per request. Cache is safe for concurrent use.
type Cache struct {
	lru   *lru.Cache[[sha256.Size]byte, entry]
	group singleflight.Group

	// OnCompileError, if not nil, is called once for each schema that fails
	// to compile (again only if it was evicted and comes back). It must not
	// block.
	OnCompileError func(raw []byte, err error)

	hits, misses, failures atomic.Uint64
}

type entry struct {
	s   *Schema
	err error
}

// Stats are the cache's counters since it was made.
type Stats struct {
	Hits, Misses, CompileErrors uint64
	Size                        int
}

// NewCache returns a cache holding at most size schemas; size must be > 0.
func NewCache(size int) *Cache {
	l, err := lru.New[[sha256.Size]byte, entry](size)
	if err != nil {
		panic("validate: NewCache: " + err.Error())
	}
	return &Cache{lru: l}
}

// Get returns the compiled schema for raw, compiling it on first use.
// Concurrent calls for the same new schema compile it once.
func (c *Cache) Get(raw []byte) (*Schema, error) {
	key := sha256.Sum256(raw)
	if e, ok := c.lru.Get(key); ok {
		c.hits.Add(1)
		return e.s, e.err
	}
	c.misses.Add(1)
	v, _, _ := c.group.Do(string(key[:]), func() (any, error) {
		if e, ok := c.lru.Get(key); ok {
			return e, nil
		}
		// The cache keeps the bytes beyond the request that brought them.
		s, err := Compile(append([]byte(nil), raw...))
		e := entry{s: s, err: err}
		c.lru.Add(key, e)
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
	}
}
