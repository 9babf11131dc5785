package proxy

import (
	"io"
	"sync"
)

// copyBufferSize is the size of the buffers the reverse proxy copies
// response bodies with (its own default).
const copyBufferSize = 32 << 10

// bufferPool lends the reverse proxy its copy buffers. Without one,
// httputil.ReverseProxy allocates 32 KB for every response it copies: in a
// load profile that was two thirds of all the bytes toolguard allocated,
// and the garbage collection they cost.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}}}
}

func (bp *bufferPool) Get() []byte { return *bp.p.Get().(*[]byte) }

func (bp *bufferPool) Put(b []byte) {
	if cap(b) != copyBufferSize {
		return
	}
	b = b[:copyBufferSize]
	bp.p.Put(&b)
}

// readSized reads all of r into a buffer allocated once from size, the
// length the sender declared (Content-Length; -1 if unknown), instead of
// growing one from 512 bytes: a 40 KB chat history otherwise costs seven
// allocations and copies, about 80 KB of garbage. size is a hint only: a
// shorter or longer body is read whole all the same, and the caller bounds
// r, so a false size costs at most one buffer of max bytes.
func readSized(r io.Reader, size, max int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than declared, so the read that finds EOF does not
	// grow the buffer.
	b := make([]byte, 0, min(size, max)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
