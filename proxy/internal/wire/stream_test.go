package wire

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// passEvents hands every event to the client as it came; the stream ends at
// the upstream's end.
type passEvents struct{}

func (passEvents) MayWait([]byte) bool { return false }
func (passEvents) Handle(ev []byte, out *bytes.Buffer) (bool, error) {
	out.Write(ev)
	return false, nil
}
func (passEvents) End() *Error                      { return nil }
func (passEvents) Fail(out *bytes.Buffer, e *Error) { out.WriteString("error\n\n") }

// pieces reads b in pieces of random sizes, as a network would bring them.
type pieces struct {
	b []byte
	r *rand.Rand
}

func (p *pieces) Read(q []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(q), len(p.b), 1+p.r.IntN(700))
	copy(q, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}

func (p *pieces) Close() error { return nil }

// TestStreamsShareNoBuffer: streams read side by side take their output and
// event buffers from shared pools, and give them back between reads; each
// client must still get its own stream's bytes, whole and in order.
func TestStreamsShareNoBuffer(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for n := range 40 {
				var in strings.Builder
				for i := range 1 + r.IntN(200) {
					fmt.Fprintf(&in, "data: {\"stream\":%d,\"n\":%d,\"text\":%q}\n\n", g*1000+n, i, strings.Repeat("x", r.IntN(1000)))
				}
				s := NewStream(&pieces{[]byte(in.String()), r}, passEvents{}, 1<<20, func(error) *Error { return nil })
				got, err := io.ReadAll(s)
				s.Close()
				if err != nil || string(got) != in.String() {
					t.Errorf("stream %d/%d: %d bytes (%v), want its own %d", g, n, len(got), err, in.Len())
					return
				}
			}
		})
	}
	wg.Wait()
}

// blockingBody is an upstream that has sent what the test wrote and waits
// for more.
type blockingBody struct{ pending []byte }

func (b *blockingBody) Read(q []byte) (int, error) {
	if len(b.pending) == 0 {
		panic("the stream read past what the upstream has sent")
	}
	n := copy(q, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *blockingBody) Close() error { return nil }

// TestStreamHoldsNoBufferWhileWaiting: once the client has read all a
// stream's output, the stream holds no buffer while its upstream has not
// sent more, unless part of an event is waiting for the rest of it; after
// Close it holds none and reads nothing.
func TestStreamHoldsNoBufferWhileWaiting(t *testing.T) {
	up := &blockingBody{pending: []byte("data: 1\n\ndata: 2\n\n")}
	s := NewStream(up, passEvents{}, 1<<20, func(error) *Error { return nil })
	p := make([]byte, 64)
	if n, err := s.Read(p); err != nil || string(p[:n]) != "data: 1\n\ndata: 2\n\n" {
		t.Fatalf("Read: %q, %v", p[:n], err)
	}
	if s.out != nil || s.split.box != nil {
		t.Errorf("waiting on its upstream, the stream holds an output buffer (%v) or an event buffer (%v)", s.out != nil, s.split.box != nil)
	}
	// Part of an event stays until the rest of it comes.
	up.pending = []byte("data: 3\n\ndata: 4")
	if n, err := s.Read(p); err != nil || string(p[:n]) != "data: 3\n\n" {
		t.Fatalf("Read: %q, %v", p[:n], err)
	}
	if s.split.box == nil || string(s.split.Rest()) != "data: 4" {
		t.Errorf("part of an event was let go: %q", s.split.Rest())
	}
	up.pending = []byte("\n\n")
	if n, err := s.Read(p); err != nil || string(p[:n]) != "data: 4\n\n" {
		t.Fatalf("Read: %q, %v", p[:n], err)
	}
	s.Close()
	if s.out != nil || s.split.box != nil {
		t.Error("a closed stream holds a buffer")
	}
	if n, err := s.Read(p); n != 0 || err == nil || err == io.EOF {
		t.Errorf("Read after Close: %d bytes, %v; want an error", n, err)
	}
}

// silentEvents writes nothing for an event whose data is "hold", as a format
// holding events back does, and passes the others.
type silentEvents struct{ passEvents }

func (silentEvents) Handle(ev []byte, out *bytes.Buffer) (bool, error) {
	if !bytes.Equal(ev, []byte("data: hold\n\n")) {
		out.Write(ev)
	}
	return false, nil
}

// watchedBody is an upstream that checks, whenever the stream reads it,
// that the stream holds no buffer: it has no partial event left.
type watchedBody struct {
	t      *testing.T
	s      *Stream
	chunks []string
}

func (b *watchedBody) Read(q []byte) (int, error) {
	if b.s.out != nil || b.s.split.box != nil {
		b.t.Errorf("the stream reads its upstream holding an output buffer (%v) or an event buffer (%v)", b.s.out != nil, b.s.split.box != nil)
	}
	if len(b.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(q, b.chunks[0])
	b.chunks = b.chunks[1:]
	return n, nil
}

func (b *watchedBody) Close() error { return nil }

// TestStreamWaitsHoldingNoBuffer: a stream whose events wrote nothing (held
// back by the format) waits on its upstream without an output buffer.
func TestStreamWaitsHoldingNoBuffer(t *testing.T) {
	up := &watchedBody{t: t, chunks: []string{"data: 1\n\n", "data: hold\n\n", "data: hold\n\ndata: hold\n\n", "data: 2\n\n"}}
	s := NewStream(up, silentEvents{}, 1<<20, func(error) *Error { return nil })
	up.s = s
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "data: 1\n\ndata: 2\n\n" {
		t.Fatalf("ReadAll: %q, %v", got, err)
	}
}
