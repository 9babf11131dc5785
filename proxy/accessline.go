package proxy

import (
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// The request line is the one line every request writes. slog's
// JSONHandler writes it through its general encoding, which formats each
// float with encoding/json and looks at every value's kind and every
// string's bytes one at a time: 16 k instructions a line, about a ninth
// of what toolguard adds to a valid call. With Options.AccessLog,
// appendAccessLine writes the line itself, byte for byte as
// slog.NewJSONHandler (without ReplaceAttr or AddSource) would, when every
// value is one it can write so: a string of printable ASCII with no quote
// or backslash, an integer, a float that encoding/json writes in plain
// decimal notation, a list of such strings. Any other line (a path with a
// quote in it, an error message) goes through slog as before.

// accessLines holds the buffers lines are written in, reused.
var accessLines = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeAccessLine writes the record (t, level, msg, attrs) to w as
// slog.NewJSONHandler(w, nil) would, in one Write, and reports whether it
// could; when it could not, nothing is written.
func writeAccessLine(w io.Writer, t time.Time, level slog.Level, msg string, attrs []slog.Attr) bool {
	bp := accessLines.Get().(*[]byte)
	defer accessLines.Put(bp)
	b, ok := appendAccessLine((*bp)[:0], t, level, msg, attrs)
	if ok {
		_, _ = w.Write(b) // as slog's handlers, which return the error to no one here
	}
	if cap(b) <= 64<<10 {
		*bp = b
	}
	return ok
}

// appendAccessLine appends the line to b; ok is false if a value is not
// one it writes as slog does (see above).
func appendAccessLine(b []byte, t time.Time, level slog.Level, msg string, attrs []slog.Attr) (_ []byte, ok bool) {
	b = append(b, '{')
	if !t.IsZero() {
		t = t.Round(0) // without the monotonic reading, as slog writes it
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false // slog writes an error in its place
		}
		b = append(b, `"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	if !plain(msg) {
		return b, false
	}
	b = append(b, `"level":"`...)
	b = append(b, level.String()...)
	b = append(b, `","msg":"`...)
	b = append(b, msg...)
	b = append(b, '"')
	for _, a := range attrs {
		if a.Key == "" || !plain(a.Key) {
			return b, false
		}
		b = append(b, `,"`...)
		b = append(b, a.Key...)
		b = append(b, `":`...)
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			s := v.String()
			if !plain(s) {
				return b, false
			}
			b = append(b, '"')
			b = append(b, s...)
			b = append(b, '"')
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindFloat64:
			f := v.Float64()
			// encoding/json writes a float in decimal notation from 1e-6
			// up to 1e21, and as this does: the shortest that reads back.
			if f != 0 && !(1e-6 <= f && f < 1e21) && !(-1e21 < f && f <= -1e-6) {
				return b, false
			}
			b = appendFloat(b, f)
		case slog.KindAny:
			ss, isStrings := v.Any().([]string)
			if !isStrings {
				return b, false
			}
			if ss == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for i, s := range ss {
				if !plain(s) {
					return b, false
				}
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, '"')
				b = append(b, s...)
				b = append(b, '"')
			}
			b = append(b, ']')
		default:
			return b, false
		}
	}
	return append(b, "}\n"...), true
}

// appendFloat appends f as strconv.AppendFloat(b, f, 'f', -1, 64) does:
// the shortest decimal that reads back as f. The line's floats are
// durations in milliseconds, whole microseconds over a thousand (millis),
// written here from their digits. When f is the double nearest k/1000 for a
// whole k of at most 15 digits, k/1000 is the shortest decimal that reads
// back as f: a double tells apart every two decimals of 15 significant
// digits or fewer, so no shorter one reads back as f too.
func appendFloat(b []byte, f float64) []byte {
	k := math.Round(f * 1000)
	if f <= 0 || k >= 1e15 || k/1000 != f {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	n := int64(k)
	b = strconv.AppendInt(b, n/1000, 10)
	frac := n % 1000
	if frac == 0 {
		return b
	}
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	return b
}

// plain reports whether s is written in JSON as it is, by slog and by
// encoding/json alike: printable ASCII without a quote or a backslash.
// Every value of every request line is checked, a few hundred bytes: eight
// at a time (see plainWord), then one at a time.
func plain(s string) bool {
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if !plainWord(w) {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Bytes repeated in each of a word's eight.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether none of the eight bytes of w is below 0x20, at
// or above 0x7f, a quote or a backslash. With no high bit set, below(w, n)
// is not zero when some byte is below n (see below); a byte equal to c is a
// zero byte of w^(ones*c), below 1.
func plainWord(w uint64) bool {
	return w&highs == 0 &&
		below(w, 0x20)|below(w^(ones*0x7f), 1)|below(w^(ones*'"'), 1)|below(w^(ones*'\\'), 1) == 0
}

// below has a high bit set where a byte of w is below n, for n <= 0x80 and
// w without high bits; it is zero when none is. With no byte below n no
// byte's subtraction borrows, and a byte of n or more less n keeps its high
// bit clear; the lowest byte below n borrows, and its high bit is set.
func below(w, n uint64) uint64 { return (w - ones*n) &^ w & highs }
