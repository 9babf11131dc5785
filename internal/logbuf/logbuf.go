// Package logbuf takes log lines off the request path: a Writer gathers
// them in memory and a background goroutine writes them in batches.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// bufferSize is what a log with a flush interval holds before it is
// written anyway.
const bufferSize = 64 << 10

// maxLogBuffered bounds the lines waiting to be written: a request that
// would add past it waits until the writer has caught up, so a slow log
// destination slows requests down rather than growing memory or losing
// lines.
const maxLogBuffered = 256 << 10

// Writer takes log lines off the request path: Write copies a line
// into a buffer and a background writer writes what has gathered in one
// system call. With an interval (the default is 50ms) it writes at that
// interval, when bufferSize is reached, and at Close; with none, as soon
// as it runs, which under load is close to one write per line again. Close writes
// every line given before it returns, so a clean shutdown loses none; what
// a kill (SIGKILL, out of memory) loses is the lines not written yet: with
// no interval, those of the last moments, with one, up to an interval's.
type Writer struct {
	w        io.Writer
	interval time.Duration

	mu     sync.Mutex
	space  sync.Cond // signalled when the writer has taken the buffer
	buf    []byte    // lines waiting to be written
	spare  []byte    // the other buffer, being written or free
	closed bool
	err    error // the first write error

	wake  chan struct{}
	flush chan chan struct{} // Sync's requests
	stop  chan struct{}
	done  chan struct{}
}

func New(w io.Writer, interval time.Duration) *Writer {
	b := &Writer{w: w, interval: interval, wake: make(chan struct{}, 1), flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	b.space.L = &b.mu
	go b.writeLoop()
	return b
}

// Write implements io.Writer; slog handlers write one whole line per call,
// and a line is never split between two writes.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	for !b.closed && len(b.buf) > 0 && len(b.buf)+len(p) > maxLogBuffered {
		b.signal()
		b.space.Wait()
	}
	if b.closed {
		// After Close, lines go out at once, after everything before them.
		b.mu.Unlock()
		<-b.done
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.w.Write(p)
	}
	b.buf = append(b.buf, p...)
	if b.interval == 0 || len(b.buf) >= bufferSize {
		b.signal()
	}
	b.mu.Unlock()
	return len(p), nil
}

// signal wakes the writer if it is not already awake.
func (b *Writer) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes what has gathered whenever it is woken (or at each
// interval), and everything left when stopped.
func (b *Writer) writeLoop() {
	defer close(b.done)
	var tick <-chan time.Time
	if b.interval > 0 {
		t := time.NewTicker(b.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-b.wake:
		case <-tick:
		case ch := <-b.flush:
			b.writeOut()
			close(ch)
			continue
		case <-b.stop:
			b.writeOut()
			return
		}
		b.writeOut()
	}
}

// writeOut writes the lines gathered so far in one call.
func (b *Writer) writeOut() {
	b.mu.Lock()
	out := b.buf
	b.buf, b.spare = b.spare[:0], nil
	b.space.Broadcast()
	b.mu.Unlock()
	if len(out) == 0 {
		b.mu.Lock()
		b.spare = out
		b.mu.Unlock()
		return
	}
	_, err := b.w.Write(out)
	b.mu.Lock()
	if err != nil && b.err == nil {
		b.err = err
	}
	// Kept for the next batch unless one outsized line grew it: appends
	// past maxLogBuffered grow it to at most twice that.
	if cap(out) <= 2*maxLogBuffered {
		b.spare = out[:0]
	}
	b.mu.Unlock()
}

// Sync returns once every line given before it is written.
func (b *Writer) Sync() {
	ch := make(chan struct{})
	select {
	case b.flush <- ch:
		<-ch
	case <-b.done:
	}
}

// Close writes every line given so far and returns the first write error.
// Lines given after it are written at once.
func (b *Writer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.done
		return nil
	}
	b.closed = true
	b.space.Broadcast()
	b.mu.Unlock()
	close(b.stop)
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
