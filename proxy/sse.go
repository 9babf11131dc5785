package proxy

import "bytes"

// sseSplitter cuts a byte stream into Server-Sent Events. A network read can
// end anywhere (inside a line, inside a UTF-8 character), so bytes are kept
// until the blank line that ends an event arrives. Lines end in LF or CRLF.
type sseSplitter struct {
	buf     []byte
	scanned int // bytes of buf already searched for an event end
}

// feed appends bytes read from the network.
func (s *sseSplitter) feed(b []byte) { s.buf = append(s.buf, b...) }

// buffered is the number of bytes held that do not yet form an event.
func (s *sseSplitter) buffered() int { return len(s.buf) }

// next returns the next whole event, raw (its blank line included), or false
// when no whole event is buffered. The returned slice is valid until the next
// call to feed.
func (s *sseSplitter) next() ([]byte, bool) {
	for {
		i := bytes.IndexByte(s.buf[s.scanned:], '\n')
		if i < 0 {
			s.scanned = len(s.buf)
			return nil, false
		}
		end := s.scanned + i // index of this '\n'
		lineStart := bytes.LastIndexByte(s.buf[:end], '\n') + 1
		line := s.buf[lineStart:end]
		s.scanned = end + 1
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			ev := s.buf[:end+1]
			s.buf = s.buf[end+1:]
			s.scanned = 0
			return ev, true
		}
	}
}

// rest returns the bytes left over when the stream ends, which do not form a
// whole event.
func (s *sseSplitter) rest() []byte { return s.buf }

// eventData returns the data of an event: its data lines joined by "\n",
// and whether it had any.
func eventData(ev []byte) ([]byte, bool) {
	var data []byte
	found := false
	for len(ev) > 0 {
		i := bytes.IndexByte(ev, '\n')
		var line []byte
		if i < 0 {
			line, ev = ev, nil
		} else {
			line, ev = ev[:i], ev[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if found {
			data = append(data, '\n')
		}
		data = append(data, v...)
		found = true
	}
	return data, found
}
