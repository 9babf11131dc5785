package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
			b := newBufferedLog(&out, interval)
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
			if interval > 0 && out.writes > 2*(out.b.Len()/logBufferSize)+2 {
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
	b := newBufferedLog(out, 0)
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

// TestCleanShutdownWritesEveryLogLine runs toolguard as main does, with
// its default (background) log writer and with an hour's flush interval,
// sends requests, shuts down, and counts one access-log line per request.
func TestCleanShutdownWritesEveryLogLine(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	for _, interval := range []string{"0s", "1h"} {
		t.Run(interval, func(t *testing.T) {
			ctx, stop := context.WithCancel(context.Background())
			ready := make(chan string, 1)
			done := make(chan error, 1)
			var logs syncWriter
			env := []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=" + up.URL + "/v1",
				"TOOLGUARD_LOG_FLUSH_INTERVAL=" + interval}
			go func() { done <- run(ctx, nil, env, io.Discard, &logs, ready) }()
			addr := <-ready
			const n = 300
			for range n {
				resp, err := http.Get("http://" + addr + "/v1/models")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			log := logs.String()
			if got := strings.Count(log, `"msg":"request"`); got != n {
				t.Errorf("%d access-log lines for %d requests", got, n)
			}
			if !strings.HasSuffix(log, "\n") || !strings.Contains(log[strings.LastIndex(log[:len(log)-1], "\n")+1:], `"msg":"stopped"`) {
				t.Errorf("the last line is not the exit line:\n%s", log[max(0, len(log)-500):])
			}
		})
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
				bl := newBufferedLog(f, 100*time.Millisecond)
				defer bl.Close()
				w = bl
			}
			for b.Loop() {
				w.Write(line)
			}
		})
	}
}
