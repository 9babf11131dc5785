package repair

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPyDepth bounds the nesting of Python literals read.
const maxPyDepth = 64

// readPythonic reads t[start:stop] as a pythonic call list,
// [get_weather(city="Paris"), other(x=1)]: keyword arguments only, whose
// values are Python literals (strings, numbers, True, False, None, lists
// and dicts of them), converted to JSON. Anything else (a positional
// argument, an expression, a name) is code, not a value, and is refused.
func readPythonic(t string, start, stop int) ([]found, bool) {
	calls, end, ok := readPythonicAt(t[:stop], start)
	return calls, ok && skipSpace(t[:stop], end) == stop
}

// readPythonicAt reads the pythonic call list at start of t, and returns
// where it ends.
func readPythonicAt(t string, start int) ([]found, int, bool) {
	p := pyReader{t: t, i: start}
	if !p.eat('[') {
		return nil, 0, false
	}
	var calls []found
	for {
		p.space()
		if p.eat(']') {
			break
		}
		if len(calls) > 0 && !p.eat(',') {
			return nil, 0, false
		}
		p.space()
		if len(calls) > 0 && p.eat(']') {
			break // a trailing comma
		}
		if len(calls) >= maxTextCalls {
			return nil, 0, false
		}
		c, ok := p.call()
		if !ok {
			return nil, 0, false
		}
		calls = append(calls, c)
	}
	return calls, p.i, len(calls) > 0
}

type pyReader struct {
	t     string
	i     int
	depth int
}

func (p *pyReader) space() { p.i = skipSpace(p.t, p.i) }

func (p *pyReader) eat(c byte) bool {
	if p.i < len(p.t) && p.t[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyReader) name() string {
	k := p.i
	if k >= len(p.t) || !isNameStart(p.t[k]) {
		return ""
	}
	for k < len(p.t) && (isNameByte(p.t[k]) && p.t[k] != '-') {
		k++
	}
	name := p.t[p.i:k]
	p.i = k
	return name
}

// call reads name(key=value, ...).
func (p *pyReader) call() (found, bool) {
	c := found{start: p.i}
	if c.name = p.name(); c.name == "" {
		return found{}, false
	}
	p.space()
	if !p.eat('(') {
		return found{}, false
	}
	var o objectText
	for n := 0; ; n++ {
		p.space()
		if p.eat(')') {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return found{}, false
			}
			p.space()
			if p.eat(')') {
				break
			}
		}
		key := p.name()
		p.space()
		if key == "" || strings.Contains(key, ".") || !p.eat('=') {
			return found{}, false
		}
		p.space()
		v, ok := p.value()
		if !ok || !o.addJSON(key, v) {
			return found{}, false
		}
	}
	c.args, c.end = o.close(), p.i
	return c, true
}

// value reads one Python literal and returns it as JSON.
func (p *pyReader) value() ([]byte, bool) {
	if p.i >= len(p.t) {
		return nil, false
	}
	switch c := p.t[p.i]; {
	case c == '"' || c == '\'':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		b, err := encode(s)
		return b, err == nil
	case c == '[':
		return p.list()
	case c == '{':
		return p.dict()
	case c == '-' || '0' <= c && c <= '9':
		k := p.i + 1
		for k < len(p.t) && (isNameByte(p.t[k]) || p.t[k] == '+') {
			k++
		}
		num := p.t[p.i:k]
		if !json.Valid([]byte(num)) {
			return nil, false
		}
		p.i = k
		return []byte(num), true
	}
	// JSON's literals are the same values written in another language's
	// form: models that write JSON arguments write them so.
	for _, lit := range [...][2]string{{"True", "true"}, {"False", "false"}, {"None", "null"}, {"true", "true"}, {"false", "false"}, {"null", "null"}} {
		if rest, ok := strings.CutPrefix(p.t[p.i:], lit[0]); ok && (rest == "" || !isNameByte(rest[0])) {
			p.i += len(lit[0])
			return []byte(lit[1]), true
		}
	}
	return nil, false
}

func (p *pyReader) list() ([]byte, bool) {
	if p.depth++; p.depth > maxPyDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // [
	b := []byte{'['}
	for n := 0; ; n++ {
		p.space()
		if p.eat(']') {
			return append(b, ']'), true
		}
		if n > 0 {
			if !p.eat(',') {
				return nil, false
			}
			p.space()
			if p.eat(']') {
				return append(b, ']'), true
			}
			b = append(b, ',')
		}
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		b = append(b, v...)
	}
}

func (p *pyReader) dict() ([]byte, bool) {
	if p.depth++; p.depth > maxPyDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // {
	var o objectText
	for n := 0; ; n++ {
		p.space()
		if p.eat('}') {
			return o.close(), true
		}
		if n > 0 {
			if !p.eat(',') {
				return nil, false
			}
			p.space()
			if p.eat('}') {
				return o.close(), true
			}
		}
		if p.i >= len(p.t) || p.t[p.i] != '"' && p.t[p.i] != '\'' {
			return nil, false // only string keys have a JSON form
		}
		key, ok := p.str()
		p.space()
		if !ok || !p.eat(':') {
			return nil, false
		}
		p.space()
		v, ok := p.value()
		if !ok || !o.addJSON(key, v) {
			return nil, false
		}
	}
}

// str reads a quoted Python string (not raw, bytes, f-string nor
// triple-quoted) and returns its value.
func (p *pyReader) str() (string, bool) {
	q := p.t[p.i]
	if strings.HasPrefix(p.t[p.i:], strings.Repeat(string(q), 3)) {
		return "", false
	}
	var b strings.Builder
	for k := p.i + 1; k < len(p.t); {
		c := p.t[k]
		switch {
		case c == q:
			p.i = k + 1
			return b.String(), true
		case c == '\n':
			return "", false
		case c != '\\':
			b.WriteByte(c)
			k++
			continue
		}
		if k+1 >= len(p.t) {
			return "", false
		}
		e := p.t[k+1]
		k += 2
		switch e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '\n':
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if k+n > len(p.t) {
				return "", false
			}
			r, err := strconv.ParseUint(p.t[k:k+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				return "", false
			}
			b.WriteRune(rune(r))
			k += n
		default:
			// Python keeps an unknown escape as written.
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", false
}
