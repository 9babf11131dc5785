package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// A request body of a few KB is read into a buffer that the requests after
// it read theirs into again (bodyBuffers): an agent sends its whole
// conversation every turn, and a 40 KB one otherwise leaves a 48 KB buffer
// to the collector each time, half of all that such a request allocates.
//
// A buffer goes back only when nothing reads it any more: the request is
// done (serveHTTP has written its response and its log line), and every
// reader of it that went upstream is closed. A transport may read a body
// after RoundTrip returns, when the upstream answered before it had all of
// it, and closes it then (see http.RoundTripper); a bodyReader that is never
// closed keeps its buffer from the pool, which costs reuse, nothing else.
// What toolguard keeps past a request of what it read (the caches of
// declarations, schemas and templates, metric labels) are copies.
//
// Only bodies of pooledBodyMin bytes or more are pooled: a reader other
// than the standard library's in-memory ones makes the transport send the
// request's headers on their own before the body (net/http's FlushHeaders),
// one more write for a body that would fit in the transport's 4 KB buffer
// with them, and nothing more for a larger one, whose headers are sent
// before it is all written anyway. (The reverse proxy's wrapper of a body
// would do the same to every body: rewrite takes it off those proxy gave.)
const (
	pooledBodyMin   = 4 << 10
	pooledBodyMax   = 64 << 10 // the largest class's size
	pooledPerClass  = 8
	pooledBodyFirst = 8 << 10 // the smallest class's size
)

// bodyBuffers keeps at most pooledPerClass buffers of each size from
// pooledBodyFirst to pooledBodyMax, doubling: at most 960 KB.
type bodyBuffers struct {
	mu   sync.Mutex
	free [4][][]byte // by class: 8, 16, 32 and 64 KiB
}

// poisonBodies, set by this package's tests, has every buffer given back
// overwritten, so that what still reads a request's body after its request
// reads '#' instead, and fails.
var poisonBodies bool

// bodyClass is the class of the buffers for a body of size bytes and the
// byte after it (see readSized), and false for a size not pooled.
func bodyClass(size int64) (int, bool) {
	if size < pooledBodyMin || size+1 > pooledBodyMax {
		return 0, false
	}
	c, n := 0, int64(pooledBodyFirst)
	for n < size+1 {
		c, n = c+1, n*2
	}
	return c, true
}

// get returns an empty buffer for a body of size bytes, nil for a size not
// pooled.
func (bb *bodyBuffers) get(size int64) []byte {
	c, ok := bodyClass(size)
	if !ok {
		return nil
	}
	bb.mu.Lock()
	if n := len(bb.free[c]); n > 0 {
		b := bb.free[c][n-1]
		bb.free[c][n-1] = nil
		bb.free[c] = bb.free[c][:n-1]
		bb.mu.Unlock()
		return b
	}
	bb.mu.Unlock()
	return make([]byte, 0, pooledBodyFirst<<c)
}

// put gives b, a buffer get returned, back.
func (bb *bodyBuffers) put(b []byte) {
	c := 0
	for pooledBodyFirst<<c < cap(b) {
		c++
	}
	if c >= len(bb.free) || pooledBodyFirst<<c != cap(b) {
		return
	}
	b = b[:0]
	if poisonBodies {
		full := b[:cap(b)]
		for i := range full {
			full[i] = '#'
		}
	}
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if len(bb.free[c]) < pooledPerClass {
		bb.free[c] = append(bb.free[c], b)
	}
}

// A heldBody is the pooled buffer a request's body was read into, and the
// holds on it: the request's own, until it is done, and one for each open
// reader of it (bodyReader). The last hold given up gives the buffer back.
// The zero heldBody holds nothing.
type heldBody struct {
	pool *bodyBuffers
	buf  []byte
	refs atomic.Int32
}

// hold makes h the holder of buf, which pool lent, with the request's hold.
func (h *heldBody) hold(pool *bodyBuffers, buf []byte) {
	h.pool, h.buf = pool, buf
	h.refs.Store(1)
}

// take adds a hold, unless the buffer went back already.
func (h *heldBody) take() bool {
	for {
		n := h.refs.Load()
		if n <= 0 {
			return false
		}
		if h.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// drop gives up a hold.
func (h *heldBody) drop() {
	if h.buf == nil {
		return
	}
	if h.refs.Add(-1) == 0 {
		h.pool.put(h.buf)
	}
}

// errBodyGone is the error of a body that toolguard no longer holds: read
// after its Close, or asked for again (GetBody) after its request ended.
var errBodyGone = errors.New("toolguard: the request body was read after its request ended")

// A bodyReader reads a body sent upstream that is held in a pooled buffer.
// Read and Close exclude each other: once Close returns, no Read is under
// way, and none reads the buffer again.
type bodyReader struct {
	mu     sync.Mutex
	r      bytes.Reader
	h      *heldBody
	closed bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyGone
	}
	return r.r.Read(p)
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.h.drop()
	}
	return nil
}

// upstreamBody returns a reader of body for a request to the upstream on
// behalf of the request whose context ctx is: one that holds the buffer
// that request's body was read into, if it was pooled (body may be that
// buffer, or a body made from it). It fails only when that request has
// ended.
func upstreamBody(ctx context.Context, body []byte) (io.ReadCloser, error) {
	info := requestInfoFrom(ctx)
	if info == nil || info.body.buf == nil {
		return io.NopCloser(bytes.NewReader(body)), nil
	}
	if !info.body.take() {
		return nil, errBodyGone
	}
	r := &bodyReader{h: &info.body}
	r.r.Reset(body)
	return r, nil
}
