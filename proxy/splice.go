package proxy

import "fmt"

// splice replaces the bytes [start, end) of a body with with.
type splice struct {
	start, end int
	with       []byte
}

// applySplices returns body with each splice applied, building the result
// in one pass: bytes outside the splices are copied as they are. The
// splices must be in order and must not overlap. With none, body itself is
// returned.
func applySplices(body []byte, ss []splice) ([]byte, error) {
	if len(ss) == 0 {
		return body, nil
	}
	size, last := len(body), 0
	for _, s := range ss {
		if s.start < last || s.end < s.start || s.end > len(body) {
			return nil, fmt.Errorf("edit [%d, %d) of a %d-byte body is out of order or out of range", s.start, s.end, len(body))
		}
		size += len(s.with) - (s.end - s.start)
		last = s.end
	}
	out := make([]byte, 0, size)
	last = 0
	for _, s := range ss {
		out = append(out, body[last:s.start]...)
		out = append(out, s.with...)
		last = s.end
	}
	return append(out, body[last:]...), nil
}
