package logbuf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter counts the writes it is given.
type countingWriter struct {
	syncWriter
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.syncWriter.Write(p)
}

// TestBufferedLog: lines written from many goroutines all come out whole,
// none lost, by Close, and in fewer writes than lines; with an interval,
// a full buffer is written without waiting for it.
func TestBufferedLog(t *testing.T) {
	for _, interval := range []time.Duration{0, time.Hour} {
		t.Run(interval.String(), func(t *testing.T) {
			var out countingWriter
			b := New(&out, interval)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 5000 {
						fmt.Fprintf(b, "{\"g\":%d,\"i\":%d}\n", g, i)
					}
				}()
			}
			wg.Wait()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 20000 {
				t.Fatalf("%d lines, want 20000", len(lines))
			}
			next := [4]int{}
			for _, l := range lines {
				var g, i int
				if _, err := fmt.Sscanf(l, "{\"g\":%d,\"i\":%d}", &g, &i); err != nil || g < 0 || g > 3 {
					t.Fatalf("a line was split: %q", l)
				}
				if i != next[g] {
					t.Fatalf("goroutine %d: line %d after %d: out of order", g, i, next[g]-1)
				}
				next[g]++
			}
			// A full buffer wakes the writer; a wake that arrives while it
			// writes can make one short write after each full one.
			if interval > 0 && out.writes > 2*(out.b.Len()/bufferSize)+2 {
				t.Errorf("%d writes for %d bytes: the buffer is not written when full only", out.writes, out.b.Len())
			}
		})
	}
}

// blockedWriter holds every write until release is closed.
type blockedWriter struct {
	syncWriter
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return w.syncWriter.Write(p)
}

// TestBufferedLogIsBounded: while the destination does not take lines,
// what waits in memory stays under maxLogBuffered (writers wait instead),
// and once it takes them again every line comes out.
func TestBufferedLogIsBounded(t *testing.T) {
	out := &blockedWriter{entered: make(chan struct{}), release: make(chan struct{})}
	b := New(out, 0)
	line := []byte(strings.Repeat("x", 999) + "\n")
	b.Write(line)
	<-out.entered // the writer holds the first line and waits
	const n = 3 * maxLogBuffered / 1000
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range n {
			b.Write(line)
		}
	}()
	for {
		b.mu.Lock()
		held := len(b.buf)
		b.mu.Unlock()
		if held > maxLogBuffered {
			t.Fatalf("%d bytes held, bound %d", held, maxLogBuffered)
		}
		if held+len(line) > maxLogBuffered {
			break
		}
		runtime.Gosched()
	}
	select {
	case <-finished:
		t.Fatal("all lines taken while the destination took none")
	default:
	}
	close(out.release)
	<-finished
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "\n"); got != n+1 {
		t.Errorf("%d lines written, want %d", got, n+1)
	}
}

// BenchmarkLogWrite compares a log line written to a file at once with
// one buffered and written at an interval.
func BenchmarkLogWrite(b *testing.B) {
	line := []byte(`{"time":"2026-11-22T23:04:42.306239284Z","level":"INFO","msg":"request","method":"POST","route":"/v1/chat/completions","status":200,"bytes":470,"duration_ms":0.42,"format":"chat.completions","outcome":"valid","attempts":1,"reasks":0,"request_id":"0966184e50838e88"}` + "\n")
	for _, buffered := range []bool{false, true} {
		b.Run(fmt.Sprintf("buffered=%v", buffered), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var w interface{ Write([]byte) (int, error) } = f
			if buffered {
				bl := New(f, 100*time.Millisecond)
				defer bl.Close()
				w = bl
			}
			for b.Loop() {
				w.Write(line)
			}
		})
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
