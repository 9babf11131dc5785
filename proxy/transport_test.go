package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// TestCopyConnWritesBodiesThroughItsPool: a body the transport writes with
// its connection's ReadFrom arrives whole, copied through a pooled buffer
// (a TCP connection's own ReadFrom allocates 32 KB each time), and the
// connection half-closes as the TCP connection it wraps does.
func TestCopyConnWritesBodiesThroughItsPool(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	conn, err := NewTransport(policy.Default()).DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c, ok := conn.(copyConn)
	if !ok {
		t.Fatalf("the transport dials a %T", conn)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 10_000)
	var br bytes.Reader
	// As the transport hands a body over: a reader that is no io.WriterTo.
	lr := &io.LimitedReader{}
	write := func() {
		br.Reset(body)
		lr.R, lr.N = &br, int64(len(body))
		if n, err := c.ReadFrom(lr); n != int64(len(body)) || err != nil {
			t.Fatalf("wrote %d bytes (%v), want %d", n, err, len(body))
		}
	}
	write()
	// The race detector's sync.Pool drops a quarter of what is put back:
	// .ci/run counts without it too.
	if allocs := testing.AllocsPerRun(20, write); allocs > 0.5 && !raceEnabled {
		t.Errorf("%.2f allocations a body, want none", allocs)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat(body, 22); !bytes.Equal(<-got, want) {
		t.Fatal("the upstream did not read the body 22 times")
	}
	if err := (copyConn{Conn: pipeConn{}}).CloseWrite(); !errors.Is(err, http.ErrNotSupported) {
		t.Fatalf("CloseWrite of a connection without it: %v", err)
	}
}

// pipeConn is a connection that cannot half-close.
type pipeConn struct{ net.Conn }
