package wire

import (
	"bytes"
	"strings"
	"testing"
)

// TestSplitterReusesItsBuffer: a long stream read in small pieces is split
// in one buffer, moved to its start at each Feed, without allocating once
// it has grown to an event and a read; the events come out whole, in order,
// whatever the pieces.
func TestSplitterReusesItsBuffer(t *testing.T) {
	var stream strings.Builder
	for i := range 200 {
		stream.WriteString("data: {\"n\":" + strings.Repeat("1", i%40) + "}\r\n\r\n")
	}
	in := []byte(stream.String())
	for _, piece := range []int{1, 7, 64, 4096} {
		var s Splitter
		var got bytes.Buffer
		read := func() {
			for at := 0; at < len(in); at += piece {
				s.Feed(in[at:min(at+piece, len(in))])
				for {
					ev, ok := s.Next()
					if !ok {
						break
					}
					got.Write(ev)
				}
			}
		}
		read() // grows the buffer
		if got.String() != stream.String() || len(s.Rest()) != 0 {
			t.Fatalf("pieces of %d: the events do not reassemble to the stream", piece)
		}
		if allocs := testing.AllocsPerRun(5, func() { got.Reset(); read() }); allocs != 0 {
			t.Errorf("pieces of %d: %.0f allocations per pass over the stream, want 0", piece, allocs)
		}
	}
}

// TestSplitterLetsGoOfALargeBuffer: a buffer grown past keptBuffer by one
// large event is not kept once the event is read.
func TestSplitterLetsGoOfALargeBuffer(t *testing.T) {
	var s Splitter
	s.Feed([]byte("data: " + strings.Repeat("x", 2*keptBuffer) + "\n\n"))
	if ev, ok := s.Next(); !ok || len(ev) != 2*keptBuffer+8 {
		t.Fatalf("the large event: %d bytes, %v", len(ev), ok)
	}
	s.Feed([]byte("data: a\n\n"))
	if cap(s.mem) > keptBuffer {
		t.Errorf("a buffer of %d bytes is kept after its large event", cap(s.mem))
	}
	if ev, ok := s.Next(); !ok || string(ev) != "data: a\n\n" {
		t.Errorf("the next event: %q, %v", ev, ok)
	}
}

// TestSplitterMovesEachByteAtMostOnce: the bytes a Feed moves to the
// buffer's start are those after the last event returned, which no later
// Feed moves again until another event is returned past them; so the work
// stays linear in the stream whatever its reads. The hostile shapes: every
// read ends one small event and starts a large one, in pieces of several
// sizes.
func TestSplitterMovesEachByteAtMostOnce(t *testing.T) {
	moved := func(in []byte, piece int) int {
		var s Splitter
		n := 0
		for at := 0; at < len(in); at += piece {
			if s.off > 0 {
				n += len(s.buf) // what Feed moves
			}
			s.Feed(in[at:min(at+piece, len(in))])
			for {
				if _, ok := s.Next(); !ok {
					break
				}
			}
		}
		return n
	}
	stream := func(events int) []byte {
		var b strings.Builder
		for i := range events {
			b.WriteString("data: a\n\n")
			b.WriteString("data: " + strings.Repeat("x", 1000+i%3000) + "\n\n")
		}
		return []byte(b.String())
	}
	for _, piece := range []int{100, 1009, 4096, 32 << 10} {
		small, large := stream(200), stream(400)
		ms, ml := moved(small, piece), moved(large, piece)
		if ms > len(small) || ml > len(large) {
			t.Errorf("pieces of %d: %d and %d bytes moved for streams of %d and %d", piece, ms, ml, len(small), len(large))
		}
	}
}

// TestLineEndIsIndexAny: lineEnd finds what bytes.IndexAny(b, "\r\n") does,
// for every text of up to eight bytes of CR, LF and a letter, and for
// longer ones with the line ends far apart.
func TestLineEndIsIndexAny(t *testing.T) {
	alphabet := []byte("\r\na")
	var b []byte
	var each func(n int)
	each = func(n int) {
		if got, want := lineEnd(b), bytes.IndexAny(b, "\r\n"); got != want {
			t.Fatalf("lineEnd(%q) = %d, want %d", b, got, want)
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			b = append(b, c)
			each(n - 1)
			b = b[:len(b)-1]
		}
	}
	each(8)
	// Line ends on either side of every window's edge (64, 192, 448...).
	for _, n := range []int{62, 63, 64, 65, 191, 192, 193, 447, 448, 449, 960, 961, 5000} {
		for _, end := range []string{"\r", "\n", "\r\n"} {
			b := append(bytes.Repeat([]byte("a"), n), end...)
			b = append(b, "b\rc\n"...)
			if got, want := lineEnd(b), bytes.IndexAny(b, "\r\n"); got != want {
				t.Errorf("lineEnd of %d letters then %q = %d, want %d", n, end, got, want)
			}
		}
	}
	long := bytes.Repeat([]byte("a"), 1000)
	for _, tc := range [][]byte{
		long,
		append(append([]byte{}, long...), '\n'),
		append(append([]byte{}, long...), '\r'),
		append(append(append([]byte{}, long...), "\r\n"...), long...),
		append(append(append([]byte{}, long...), '\n'), append(long, '\r')...),
		append(append(append([]byte{}, long...), '\r'), append(long, '\n')...),
	} {
		if got, want := lineEnd(tc), bytes.IndexAny(tc, "\r\n"); got != want {
			t.Errorf("lineEnd of %d bytes = %d, want %d", len(tc), got, want)
		}
	}
}

// TestEventDataOfOneLine: EventData's reading of an event of one data line
// gives what reading it line by line does, for every event of up to six
// pieces among data fields, colons, spaces, text and line ends.
func TestEventDataOfOneLine(t *testing.T) {
	pieces := []string{"data:", "data", ":", " ", "x", "\n", "\r", "\ufeff"}
	var ev []byte
	var each func(n int)
	each = func(n int) {
		for _, end := range []string{"", "\n\n"} {
			e := append(append([]byte{}, ev...), end...)
			got, gotOK := EventData(e)
			want, wantOK := eventData(e)
			if string(got) != string(want) || gotOK != wantOK {
				t.Fatalf("EventData(%q) = %q, %v; line by line %q, %v", e, got, gotOK, want, wantOK)
			}
			// Appending to the data must not write into the event.
			was := string(e)
			_ = append(got, '!')
			if string(e) != was {
				t.Fatalf("appending to EventData(%q) wrote into it", was)
			}
		}
		if n == 0 {
			return
		}
		for _, p := range pieces {
			ev = append(ev, p...)
			each(n - 1)
			ev = ev[:len(ev)-len(p)]
		}
	}
	each(6)
}
