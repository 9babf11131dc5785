package wire

import "fmt"

// Splice replaces the bytes [start, end) of a body with with.
type Splice struct {
	Start, End int
	With       []byte
}

// ApplySplices returns body with each Splice applied, building the result
// in one pass: bytes outside the splices are copied as they are. The
// splices must be in order and must not overlap. With none, body itself is
// returned.
func ApplySplices(body []byte, ss []Splice) ([]byte, error) {
	if len(ss) == 0 {
		return body, nil
	}
	size, last := len(body), 0
	for _, s := range ss {
		if s.Start < last || s.End < s.Start || s.End > len(body) {
			return nil, fmt.Errorf("edit [%d, %d) of a %d-byte body is out of order or out of range", s.Start, s.End, len(body))
		}
		size += len(s.With) - (s.End - s.Start)
		last = s.End
	}
	out := make([]byte, 0, size)
	last = 0
	for _, s := range ss {
		out = append(out, body[last:s.Start]...)
		out = append(out, s.With...)
		last = s.End
	}
	return append(out, body[last:]...), nil
}
