package proxy

import (
	"io"
	"math"
	"sync"
)

// copyBufferSize is the size of the buffers the reverse proxy copies
// response bodies with (its own default).
const copyBufferSize = 32 << 10

// bufferPool lends the reverse proxy its copy buffers. Without one,
// httputil.ReverseProxy allocates 32 KB for every response it copies: in a
// load profile that was two thirds of all the bytes toolguard allocated,
// and the garbage collection they cost. The upstream's connections copy
// request bodies through one too (copyConn), by pointer. httputil's Get
// and Put pass the slice: the pointers Get empties are kept (holders) for
// Put to keep a slice under again, not allocated anew.
type bufferPool struct{ p, holders sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}}}
}

func (bp *bufferPool) Get() []byte {
	h := bp.p.Get().(*[]byte)
	b := *h
	*h = nil
	bp.holders.Put(h)
	return b
}

func (bp *bufferPool) Put(b []byte) {
	if cap(b) != copyBufferSize {
		return
	}
	h, _ := bp.holders.Get().(*[]byte)
	if h == nil {
		h = new([]byte)
	}
	*h = b[:copyBufferSize]
	bp.p.Put(h)
}

// get and put lend a buffer by the pointer the pool keeps it under.
func (bp *bufferPool) get() *[]byte  { return bp.p.Get().(*[]byte) }
func (bp *bufferPool) put(b *[]byte) { bp.p.Put(b) }

// readSized reads r into a buffer allocated from size, the length the
// sender declared (Content-Length; -1 if unknown), instead of growing one
// from 512 bytes: a 40 KB chat history otherwise costs seven allocations
// and copies, about 80 KB of garbage. size is a hint only: a shorter or
// longer body is read whole all the same, and no more than 64 KiB is
// allocated before the bytes arrive. It stops once it holds more than max
// bytes, which the caller tells from the length it returns.
func readSized(r io.Reader, size, max int64) ([]byte, error) {
	const maxPresize = 64 << 10
	if size <= 0 {
		// No size declared: io.ReadAll's growing chunks, copied once at
		// the end, cost less for a large body than one buffer grown by
		// append (readInto).
		n := max
		if n < math.MaxInt64 {
			n++ // one byte past max tells the caller it was passed
		}
		return io.ReadAll(io.LimitReader(r, n))
	}
	// One byte more than declared, so the read that finds EOF does not
	// grow the buffer. The declared size is the sender's word: trust it
	// for a buffer of at most maxPresize, and grow past that only with
	// what arrives, so that a client declaring 32 MiB and sending ten
	// bytes holds 64 KiB, not 32 MiB.
	return readInto(make([]byte, 0, min(size, max, maxPresize)+1), r, max)
}

// readInto reads r into b, from its length on, grown only when full
// (readSized's, or a pooled buffer: see bodyBuffers), until r ends or b
// holds more than max bytes (max+1: no more is read).
func readInto(b []byte, r io.Reader, max int64) ([]byte, error) {
	for {
		// At most one byte past max: left+1 cannot overflow, as left is
		// less than the room's length.
		room := b[len(b):cap(b)]
		if left := max - int64(len(b)); int64(len(room)) > left {
			room = room[:left+1]
		}
		n, err := r.Read(room)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil || int64(len(b)) > max {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
