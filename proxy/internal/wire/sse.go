package wire

import (
	"bytes"
	"sync"
)

// Splitter cuts a byte stream into Server-Sent Events. A network read can
// End anywhere (inside a line, inside a UTF-8 character), so bytes are kept
// until the blank line that ends an event arrives. Lines end in LF, CRLF or
// a lone CR, as the SSE specification says and clients read them: an event
// framed by lone CRs that toolguard did not split would reach clients as
// data it never saw.
//
// Its buffer is reused: the events Next returned are overwritten by the next
// Feed, which moves the bytes not yet returned to the buffer's start. It is
// taken from a pool at the first Feed and can be given back while it holds
// nothing (Release), so that a stream waiting on its upstream holds none.
type Splitter struct {
	buf []byte // the bytes not yet returned, from mem[off]
	mem []byte // the buffer's start (length 0)
	// box is the pool's holder of mem, kept to put it back without
	// allocating one.
	box       *[]byte
	off       int
	scanned   int // bytes of buf already searched for a line end
	lineStart int // where the line being scanned starts
	// crFree is where buf may hold a CR: none is in buf[scanned:crFree]
	// (see lineEnd).
	crFree int
	eof    bool
}

// keptBuffer is the largest buffer a Splitter reuses: one grown by a large
// event is let go once the event is read.
const keptBuffer = 256 << 10

// splitBuffers are Splitters' buffers (see Release). Without them a
// stream's, grown to what one network read brings, is garbage when it ends.
var splitBuffers = sync.Pool{New: func() any { return new([]byte) }}

// Feed appends bytes read from the network.
func (s *Splitter) Feed(b []byte) {
	if s.box == nil {
		s.box = splitBuffers.Get().(*[]byte)
		s.mem, s.buf, s.off = (*s.box)[:0], (*s.box)[:0], 0
	}
	if s.off > 0 {
		if cap(s.mem) > keptBuffer {
			s.buf = bytes.Clone(s.buf)
		} else {
			n := copy(s.mem[:cap(s.mem)], s.buf)
			s.buf = s.mem[:n]
		}
		s.off = 0
	}
	s.buf = append(s.buf, b...)
	s.mem = s.buf[:0]
}

// Release gives the buffer back to the pool if no byte is left in it: the
// events Next returned are then no longer valid. A buffer that a large
// event grew past pooledBuffer is let go instead.
func (s *Splitter) Release() {
	if s.box == nil || len(s.buf) > 0 {
		return
	}
	if cap(s.mem) <= pooledBuffer {
		*s.box = s.mem[:0]
		splitBuffers.Put(s.box)
	}
	s.box, s.mem, s.buf, s.off = nil, nil, nil, 0
	s.scanned, s.lineStart, s.crFree = 0, 0, 0
}

// End says no more bytes will come: a CR at the very end is a line end.
func (s *Splitter) End() { s.eof = true }

// Buffered is the number of bytes held that do not yet form an event.
func (s *Splitter) Buffered() int { return len(s.buf) }

// Next returns the next whole event, raw (its blank line included), or false
// when no whole event is buffered. The returned slice is valid until the next
// call to Feed.
func (s *Splitter) Next() ([]byte, bool) {
	for {
		i := s.lineEnd()
		if i < 0 {
			s.scanned = len(s.buf)
			return nil, false
		}
		end := s.scanned + i // index of this line's terminator
		after := end + 1
		if s.buf[end] == '\r' {
			if after == len(s.buf) && !s.eof {
				// A CR at the end of what has arrived may be the first
				// half of a CRLF.
				s.scanned = end
				return nil, false
			}
			if after < len(s.buf) && s.buf[after] == '\n' {
				after++
			}
		}
		empty := end == s.lineStart
		s.scanned, s.lineStart = after, after
		if empty {
			ev := s.buf[:after:after]
			s.buf, s.off = s.buf[after:], s.off+after
			s.scanned, s.lineStart = 0, 0
			s.crFree = max(s.crFree-after, 0)
			return ev, true
		}
	}
}

// lineEnd is lineEnd(s.buf[s.scanned:]) with the next CR remembered: the
// bytes searched for a CR and found to hold none are not searched again,
// and the LF is looked for only before the next CR. Each byte is searched
// once for a CR, and for an LF once for each line it is in or before:
// one search a line where lineEnd's windows take two each, and none for
// a CR in a stream that has none after the first of a network read.
func (s *Splitter) lineEnd() int {
	cr := -1
	if from := max(s.scanned, s.crFree); from < len(s.buf) {
		if j := bytes.IndexByte(s.buf[from:], '\r'); j >= 0 {
			cr = from + j
		}
	}
	if cr < 0 {
		s.crFree = len(s.buf)
		return bytes.IndexByte(s.buf[s.scanned:], '\n')
	}
	s.crFree = cr
	if i := bytes.IndexByte(s.buf[s.scanned:cr], '\n'); i >= 0 {
		return i
	}
	return cr - s.scanned
}

// lineEnd is bytes.IndexAny(b, "\r\n"), the first CR or LF in b or -1, with
// vectorised searches for one byte (IndexAny compares each byte with the
// set, about a hundred times the work): the LF first, then a CR only in the
// bytes before it. The LF is looked for in windows that double from 64
// bytes, so a call reads about twice as far as the line end it finds: a
// text of lone CRs, with no LF for megabytes, is not read to its end for
// each of its lines.
func lineEnd(b []byte) int {
	for at, w := 0, 64; at < len(b); at, w = at+w, 2*w {
		window := b[at:min(len(b), at+w)]
		i := bytes.IndexByte(window, '\n')
		head := window
		if i >= 0 {
			head = window[:i]
		}
		if j := bytes.IndexByte(head, '\r'); j >= 0 {
			return at + j
		}
		if i >= 0 {
			return at + i
		}
	}
	return -1
}

// Rest returns the bytes left over when the stream ends, which do not form a
// whole event.
func (s *Splitter) Rest() []byte { return s.buf }

// EventData returns the data of an event: its data lines joined by "\n",
// and whether it had any. Lines end in LF, CRLF or CR; a field is "data"
// followed by a colon and at most one space, or "data" alone. The data of
// an event of one data line, as nearly every event is, is a slice of ev.
func EventData(ev []byte) ([]byte, bool) {
	// Nearly every event is one data line ended by an LF, then the blank
	// line: two searches tell it, where reading it line by line takes
	// lineEnd's windows twice.
	if n := len(ev); n > 2 && ev[n-1] == '\n' && ev[n-2] == '\n' {
		line := ev[:n-2]
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok &&
			bytes.IndexByte(line, '\n') < 0 && bytes.IndexByte(line, '\r') < 0 {
			v = bytes.TrimPrefix(v, []byte(" "))
			return v[:len(v):len(v)], true
		}
	}
	return eventData(ev)
}

// eventData is EventData for any event, read line by line.
func eventData(ev []byte) ([]byte, bool) {
	var data []byte
	lines := 0
	noCR := bytes.IndexByte(ev, '\r') < 0
	for len(ev) > 0 {
		i := eventLineEnd(ev, noCR)
		var line []byte
		if i < 0 {
			line, ev = ev, nil
		} else {
			line = ev[:i]
			if ev[i] == '\r' && i+1 < len(ev) && ev[i+1] == '\n' {
				i++
			}
			ev = ev[i+1:]
		}
		var v []byte
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			v = bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		case string(line) == "data":
		default:
			continue
		}
		switch lines {
		case 0:
			data = v[:len(v):len(v)] // appending to it must not write into ev
		case 1:
			data = append(append(append([]byte(nil), data...), '\n'), v...)
		default:
			data = append(append(data, '\n'), v...)
		}
		lines++
	}
	return data, lines > 0
}

// eventLineEnd is lineEnd(b) for the rest of an event; noCR says the
// event holds no CR, so that its next line end is its next LF.
func eventLineEnd(b []byte, noCR bool) int {
	if noCR {
		return bytes.IndexByte(b, '\n')
	}
	return lineEnd(b)
}

// EventName returns the name an event's event: line gives it, if any: a
// slice of ev.
func EventName(ev []byte) ([]byte, bool) {
	noCR := bytes.IndexByte(ev, '\r') < 0
	for len(ev) > 0 {
		i := eventLineEnd(ev, noCR)
		line := ev
		if i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			return bytes.TrimPrefix(v, []byte(" ")), true
		}
	}
	return nil, false
}
