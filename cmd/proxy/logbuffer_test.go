package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestBufferedLog: lines are written together, every line whole and none
// lost, when the buffer fills and at Close.
func TestBufferedLog(t *testing.T) {
	var out syncBuffer
	b := newBufferedLog(&out, time.Hour)
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
	if out.Len() == 0 {
		t.Errorf("nothing written before Close: a full buffer must be written")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != 20000 {
		t.Fatalf("%d lines, want 20000", len(lines))
	}
	for _, l := range lines {
		if !bytes.HasPrefix(l, []byte(`{"g":`)) || !bytes.HasSuffix(l, []byte("}")) {
			t.Fatalf("a line was split: %q", l)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Bytes()
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
