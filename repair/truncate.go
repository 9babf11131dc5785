package repair

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/validate"
)

// scan reports, as an error, text whose repair would need a guess. The
// JSON repairer closes whatever is open at the end of the text, which is
// right when the text was cut between two values ({"a": 1, "b": [2) and
// wrong when it was cut inside one: a string ("myCool), a number (12 might
// have been 125), a literal (tr), a key with no value, or a colon, which the
// repairer would complete with a null nobody sent. It also refuses nesting
// deeper than maxNesting. It returns the double-quoted strings of the text,
// for the check that the repair kept them, when keep is set.
//
// It is a scanner, not a parser: it only tracks strings, brackets and
// whether the innermost object expects a key, which is all it takes to tell
// where the text ends. open lists the brackets still open at the end, the
// outermost first ('{' or '['): what the repairer would close.
func scan(t []byte, keep bool) (quoted [][]byte, open []byte, err error) {
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
				return nil, nil, errors.New("arguments end inside a string: the value may be cut off")
			}
			last, lastKey = str, inKey()
			i = end
		case c == '"' || c == '\'':
			end := stringEnd(t, i+1, c)
			if end < 0 {
				return nil, nil, errors.New("arguments end inside a string: the value may be cut off")
			}
			if c == '"' && keep {
				quoted = append(quoted, t[i:end])
			}
			last, lastKey = str, inKey()
			i = end
		case c == '{' || c == '[':
			if len(stack) >= maxNesting {
				return nil, nil, fmt.Errorf("arguments nest deeper than %d levels", maxNesting)
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
		return quoted, nil, nil
	}
	switch {
	case last == punct && lastPunct == ':':
		return nil, nil, errors.New("arguments end after a key: its value is missing")
	case (last == str || last == word) && lastKey:
		return nil, nil, errors.New("arguments end with a key: its value is missing")
	case last == word && !literal(lastWord):
		return nil, nil, fmt.Errorf("arguments end with %q, which may be cut off", clip(lastWord))
	}
	for _, f := range stack {
		if f.object {
			open = append(open, '{')
		} else {
			open = append(open, '[')
		}
	}
	return quoted, open, nil
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

// cut records the brackets the JSON repairer closed at the end of the
// arguments, outermost first; none when the text was not cut off.
type cut struct {
	open []byte
	// quota is the request's repair work (see Quota); nil bounds each text
	// alone.
	quota *Quota
}

// closable decides whether closing the brackets of a cut-off text (already
// decoded into v) is a repair or a guess. The repairer can only close what
// is open; it cannot know what the model was still going to write. So:
//
//   - when the model was stopped at its length limit (cutOff), nothing is
//     known to be complete, and closing is always a guess;
//   - an array left open may have had more items, and an object nested in
//     another may have had more members: a guess;
//   - only the outermost object may be closed, and only when every property
//     its schema declares is already there (no patternProperties, no schema
//     for additional properties), so that nothing the tool reads can have
//     followed.
//
// The error says why, for the re-ask.
func closable(v any, c *cut, s *validate.Schema, cutOff bool) *validate.Error {
	if len(c.open) == 0 {
		return nil
	}
	refuse := func(msg string) *validate.Error {
		return &validate.Error{Keyword: "truncated", Message: msg}
	}
	if cutOff {
		return refuse("the arguments were cut off at the length limit before they ended; they cannot be known to be complete")
	}
	if len(c.open) > 1 || c.open[0] != '{' {
		return refuse(fmt.Sprintf("the arguments end before %d closing bracket(s): more members or items may have followed", len(c.open)))
	}
	obj, _ := v.(map[string]any)
	var doc map[string]any
	if s != nil {
		doc, _ = s.Doc().(map[string]any)
	}
	props, _ := doc["properties"].(map[string]any)
	_, patterns := doc["patternProperties"]
	_, extraSchema := doc["additionalProperties"].(map[string]any)
	if obj == nil || props == nil || patterns || extraSchema {
		return refuse("the arguments end before their closing brace: more members may have followed")
	}
	var missing []string
	for k := range props {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return refuse(fmt.Sprintf("the arguments end before their closing brace, without %s: it may have followed", quoteList(missing, 5)))
	}
	return nil
}

// quoteList quotes up to n names, each clipped (see clipName), saying how
// many more there are.
func quoteList(names []string, n int) string {
	var b strings.Builder
	for i, s := range names {
		if i == n {
			fmt.Fprintf(&b, " and %d more", len(names)-n)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(clipName(s)))
	}
	return b.String()
}
