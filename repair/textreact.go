package repair

import (
	"encoding/json"
	"strings"
)

// reactResult says what the ReAct reader made of a text.
type reactResult int

const (
	reactNone   reactResult = iota // no Action line
	reactFound                     // every Action read
	reactFailed                    // an Action that cannot be read
)

// reactStops are the lines that end an Action Input.
var reactStops = []string{"Observation:", "Thought:", "Action:", "Final Answer:"}

// react reads ReAct blocks, "Action: tool" and then "Action Input: input"
// up to an Observation, the next step or the end of the text. A text that
// also gives a Final Answer is not a call: which of the two the model
// meant is a guess.
func (s *textScan) react(from int, quoted []span) reactResult {
	t := s.text
	n := 0
	final := strings.Contains(t[from:], "Final Answer:")
	for k := from; ; {
		a := actionLine(t, k, quoted)
		if a < 0 {
			break
		}
		if final {
			return reactFailed
		}
		nameEnd := lineEnd(t, a)
		name := strings.Trim(strings.TrimSpace(t[a+len("Action:"):nameEnd]), "`")
		j := skipSpace(t, nameEnd)
		if !strings.HasPrefix(t[j:], "Action Input:") {
			return reactFailed
		}
		in := j + len("Action Input:")
		inEnd := len(t)
		for e := lineEnd(t, in); e < len(t); e = lineEnd(t, e+1) {
			line := strings.TrimLeft(t[e+1:], " \t")
			if hasAnyPrefix(line, reactStops) {
				inEnd = e + 1
				break
			}
		}
		input := strings.TrimRight(t[in:inEnd], spaces)
		args, ok := s.reactInput(input)
		if !ok || !s.add(a, in+len(input), "react", found{name: name, args: args}) {
			return reactFailed
		}
		n++
		k = in + len(input)
	}
	if n == 0 {
		return reactNone
	}
	return reactFound
}

// reactInput reads an Action Input: JSON when it is JSON (or an object
// mended in form), the string it quotes when it is one Python string, and
// otherwise the text itself as a JSON string, for the schema-guided step
// to place. Text that starts as JSON but cannot be read is refused rather
// than passed on as a string.
func (s *textScan) reactInput(in string) ([]byte, bool) {
	t := strings.TrimSpace(in)
	switch {
	case t != "" && json.Valid([]byte(t)):
		return []byte(t), true
	case strings.HasPrefix(t, "{"):
		return s.readObject(t)
	case strings.HasPrefix(t, "["), strings.HasPrefix(t, "\""):
		return nil, false
	case strings.HasPrefix(t, "```"):
		raw, err := encode(t)
		if err != nil {
			return nil, false
		}
		out, edits, err := SyntaxWithin(raw, s.quota)
		for _, e := range edits {
			if e.Kind != KindStripFence && e.Kind != KindJSONRepair {
				return nil, false
			}
		}
		return out, err == nil
	case strings.HasPrefix(t, "'"):
		p := pyReader{t: t}
		v, ok := p.value()
		return v, ok && p.i == len(t)
	}
	out, err := encode(t)
	return out, err == nil
}

// reactHold returns where a ReAct call may start in the text so far: an
// Action line, or a last line that may become one. failed is true when an
// Action is already certain to be refused: its tool is not declared, or
// no Action Input follows it.
func reactHold(t string, from int, quoted []span, declared []string) (int, bool) {
	if strings.Contains(t[from:], "Final Answer:") {
		return len(t), false
	}
	if a := actionLine(t, from, quoted); a >= 0 {
		if e := lineEnd(t, a); e < len(t) {
			name := strings.Trim(strings.TrimSpace(t[a+len("Action:"):e]), "`")
			if _, ok := ToolName(name, declared); !ok {
				return len(t), true
			}
			next := t[skipSpace(t, e):]
			if !strings.HasPrefix(next, "Action Input:") && !strings.HasPrefix("Action Input:", next) {
				return len(t), true
			}
		}
		return a, false
	}
	last := strings.LastIndexByte(t, '\n') + 1
	if last < from {
		last = from
	}
	if lastLineIsPrefix(t[last:], "Action:") && !isQuoted(quoted, last) {
		return skipSpace(t, last), false
	}
	return len(t), false
}

// actionLine returns the position of the first "Action:" at or after k
// that starts a line (after indentation) outside quoted text, or -1.
func actionLine(t string, k int, quoted []span) int {
	for k < len(t) {
		j := strings.Index(t[k:], "Action:")
		if j < 0 {
			return -1
		}
		a := k + j
		ls := a
		for ls > 0 && (t[ls-1] == ' ' || t[ls-1] == '\t') {
			ls--
		}
		if (ls == 0 || t[ls-1] == '\n') && !isQuoted(quoted, a) {
			return a
		}
		k = a + len("Action:")
	}
	return -1
}

// lineEnd returns the position of the newline that ends the line holding
// i, or len(t).
func lineEnd(t string, i int) int {
	if i >= len(t) {
		return len(t)
	}
	if k := strings.IndexByte(t[i:], '\n'); k >= 0 {
		return i + k
	}
	return len(t)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
