package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logBufferSize is what a buffered log holds before it writes.
const logBufferSize = 64 << 10

// bufferedLog gathers log lines and writes them together: when its buffer
// fills, every interval, and when it is closed. Each line costs a copy
// instead of a write system call (about 10 us on a loaded machine); what it
// trades away is the lines of the last interval if the process dies
// without closing it (a SIGKILL, an out-of-memory kill). The operator
// chooses it with TOOLGUARD_LOG_FLUSH_INTERVAL.
type bufferedLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newBufferedLog(w io.Writer, interval time.Duration) *bufferedLog {
	b := &bufferedLog{w: bufio.NewWriterSize(w, logBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushEvery(interval)
	return b
}

// Write implements io.Writer; slog handlers write one whole line per call.
func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *bufferedLog) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

func (b *bufferedLog) flushEvery(interval time.Duration) {
	defer close(b.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.stop:
			return
		}
	}
}

// Close stops the flushing and writes what is buffered.
func (b *bufferedLog) Close() error {
	close(b.stop)
	<-b.done
	return b.flush()
}
