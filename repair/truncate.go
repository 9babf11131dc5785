package repair

import (
	"bytes"
	"errors"
	"fmt"
)

// scan reports, as an error, text whose repair would need a guess. The
// JSON repairer closes whatever is open at the end of the text, which is
// right when the text was cut between two values ({"a": 1, "b": [2) and
// wrong when it was cut inside one: a string ("myCool), a number (12 might
// have been 125), a literal (tr), a key with no value, or a colon, which the
// repairer would complete with a null nobody sent. It also refuses nesting
// deeper than maxNesting. It returns the double-quoted strings of the text,
// for the check that the repair kept them.
//
// It is a scanner, not a parser: it only tracks strings, brackets and
// whether the innermost object expects a key, which is all it takes to tell
// where the text ends.
func scan(t []byte) (quoted [][]byte, err error) {
	type frame struct {
		object, wantKey bool
	}
	var stack []frame
	const (
		none = iota
		str
		word
		punct
	)
	last, lastKey, lastPunct := none, false, byte(0)
	var lastWord []byte
	inKey := func() bool { return len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey }
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\\' && i+1 < len(t) && t[i+1] == '"':
			// Escaped JSON outside a string ({\"a\": 1}): the string runs to
			// the next unescaped \".
			end := escapedStringEnd(t, i+2)
			if end < 0 {
				return nil, errors.New("arguments end inside a string: the value may be cut off")
			}
			last, lastKey = str, inKey()
			i = end
		case c == '"' || c == '\'':
			end := stringEnd(t, i+1, c)
			if end < 0 {
				return nil, errors.New("arguments end inside a string: the value may be cut off")
			}
			if c == '"' {
				quoted = append(quoted, t[i:end])
			}
			last, lastKey = str, inKey()
			i = end
		case c == '{' || c == '[':
			if len(stack) >= maxNesting {
				return nil, fmt.Errorf("arguments nest deeper than %d levels", maxNesting)
			}
			stack = append(stack, frame{object: c == '{', wantKey: c == '{'})
			last, lastPunct = punct, c
			i++
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			last, lastPunct = punct, c
			i++
		case c == ':' || c == ',':
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].wantKey = c == ','
			}
			last, lastPunct = punct, c
			i++
		case c == '/' && i+1 < len(t) && (t[i+1] == '/' || t[i+1] == '*'):
			i = commentEnd(t, i)
		default:
			j := i
			for j < len(t) && !bytes.ContainsRune([]byte(" \t\r\n{}[]:,\"'"), rune(t[j])) {
				j++
			}
			if j == i {
				j++
			}
			last, lastKey, lastWord = word, inKey(), t[i:j]
			i = j
		}
	}
	if len(stack) == 0 {
		return quoted, nil
	}
	switch {
	case last == punct && lastPunct == ':':
		return nil, errors.New("arguments end after a key: its value is missing")
	case (last == str || last == word) && lastKey:
		return nil, errors.New("arguments end with a key: its value is missing")
	case last == word && !literal(lastWord):
		return nil, fmt.Errorf("arguments end with %q, which may be cut off", clip(lastWord))
	}
	return quoted, nil
}

// stringEnd returns the index after the quote q that closes the string
// starting at i, or -1.
func stringEnd(t []byte, i int, q byte) int {
	for i < len(t) {
		switch t[i] {
		case '\\':
			i += 2
		case q:
			return i + 1
		default:
			i++
		}
	}
	return -1
}

// escapedStringEnd is stringEnd for a string quoted with \" in escaped JSON.
func escapedStringEnd(t []byte, i int) int {
	for i < len(t) {
		switch {
		case bytes.HasPrefix(t[i:], []byte(`\\\"`)):
			i += 4
		case bytes.HasPrefix(t[i:], []byte(`\"`)):
			return i + 2
		default:
			i++
		}
	}
	return -1
}

func commentEnd(t []byte, i int) int {
	if t[i+1] == '/' {
		if j := bytes.IndexByte(t[i:], '\n'); j >= 0 {
			return i + j + 1
		}
		return len(t)
	}
	if j := bytes.Index(t[i+2:], []byte("*/")); j >= 0 {
		return i + 2 + j + 2
	}
	return len(t)
}

func literal(w []byte) bool {
	switch string(w) {
	case "true", "false", "null", "True", "False", "None":
		return true
	}
	return false
}
