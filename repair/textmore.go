package repair

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// OpenAI's harmony tokens (gpt-oss).
const (
	hStart   = "<|start|>"
	hChannel = "<|channel|>"
	hMessage = "<|message|>"
	hCall    = "<|call|>"
	hEnd     = "<|end|>"
	hReturn  = "<|return|>"
)

// Kimi K2's tokens.
const (
	kSectionBegin = "<|tool_calls_section_begin|>"
	kSectionEnd   = "<|tool_calls_section_end|>"
	kCallBegin    = "<|tool_call_begin|>"
	kCallEnd      = "<|tool_call_end|>"
	kArgBegin     = "<|tool_call_argument_begin|>"
)

// glmArgKey opens GLM's first argument; a call whose <tool_call> opener the
// serving stack dropped (it is a special token) starts with the tool's
// name and this.
const glmArgKey = "<arg_key>"

// harmony reads a run of harmony messages: each is a header ("<|start|>"
// and a role, "<|channel|>" and a channel) up to "<|message|>", then a body
// up to "<|call|>", "<|end|>", "<|return|>" or the end of the text. A
// message whose header names a recipient (" to=functions.NAME", in the
// role or the channel part) is a call, its body the arguments; the other
// messages (analysis, a preamble, the final answer) are not, and stay
// content as written.
func (s *textScan) harmony(i int) (int, bool) {
	t := s.text
	k := i
	for n := 0; n <= maxTextCalls; n++ {
		k = skipSpace(t, k)
		if !strings.HasPrefix(t[k:], hStart) && !strings.HasPrefix(t[k:], hChannel) {
			break
		}
		ms := k
		h := strings.Index(t[k:], hMessage)
		if h < 0 {
			return len(t), true // a header cut off: no call that can be read
		}
		header, b := t[k:k+h], k+h+len(hMessage)
		be, term := harmonyBodyEnd(t, b)
		next := be + len(term)
		if to := harmonyRecipient(header); to != "" {
			name := strings.TrimPrefix(to, "functions.")
			body := t[b:be]
			if term == "" {
				body = trimEndToken(body)
			}
			c := found{name: name, start: ms}
			var ok bool
			if c.args, ok = s.readObject(body); !ok {
				if term != hCall {
					return 0, false // cut off, or ended as no call ends
				}
				c = s.unread(name, strings.TrimSpace(body))
				c.start = ms
			}
			if !validName(name) || !s.add(ms, next, "harmony", c) {
				return 0, false
			}
		}
		if next == k {
			break
		}
		k = next
	}
	return k, true
}

// harmonyBodyEnd returns where the body from b ends, and the token that
// ends it ("" at the end of the text).
func harmonyBodyEnd(t string, b int) (int, string) {
	end, term := len(t), ""
	for _, tok := range [...]string{hCall, hEnd, hReturn} {
		if k := strings.Index(t[b:], tok); k >= 0 && b+k < end {
			end, term = b+k, tok
		}
	}
	return end, term
}

// harmonyRecipient returns the recipient a harmony header names
// ("to=functions.get_weather"), or "".
func harmonyRecipient(header string) string {
	for k := 0; ; {
		j := strings.Index(header[k:], "to=")
		if j < 0 {
			return ""
		}
		j += k
		if j == 0 || header[j-1] == ' ' || header[j-1] == '>' {
			r := header[j+3:]
			e := strings.IndexAny(r, " \t\r\n<")
			if e < 0 {
				e = len(r)
			}
			return r[:e]
		}
		k = j + 3
	}
}

// harmonyHold returns where the first harmony message from i that is, or
// may become, a call starts: its header is not complete yet, or names a
// recipient. len(t) when none is.
func harmonyHold(t string, i int) int {
	for k, n := i, 0; n <= maxTextCalls; n++ {
		k = skipSpace(t, k)
		if !strings.HasPrefix(t[k:], hStart) && !strings.HasPrefix(t[k:], hChannel) {
			break
		}
		h := strings.Index(t[k:], hMessage)
		if h < 0 || harmonyRecipient(t[k:k+h]) != "" {
			return k
		}
		be, term := harmonyBodyEnd(t, k+h+len(hMessage))
		if term == "" {
			break
		}
		k = be + len(term)
	}
	return len(t)
}

// kimi reads Kimi K2's call tokens: "<|tool_call_begin|>functions.NAME:0
// <|tool_call_argument_begin|>{...}<|tool_call_end|>", one or more, in a
// "<|tool_calls_section_begin|>" section or not.
func (s *textScan) kimi(i int) (int, bool) {
	return s.tokenCalls(i, callTokens{kSectionBegin, kSectionEnd, kCallBegin, kCallEnd, "kimi-k2"}, func(body string) (found, bool) {
		id, args, ok := strings.Cut(body, kArgBegin)
		if !ok {
			return found{}, false
		}
		return s.tokenCall(kimiName(strings.TrimSpace(id)), args)
	})
}

// kimiName reads a Kimi K2 call id, "functions.get_weather:0": the name
// without its namespace and index.
func kimiName(id string) string {
	if c := strings.LastIndexByte(id, ':'); c >= 0 && c+1 < len(id) && allDigits(id[c+1:]) {
		id = id[:c]
	}
	return strings.TrimPrefix(id, "functions.")
}

func allDigits(t string) bool {
	for k := 0; k < len(t); k++ {
		if t[k] < '0' || t[k] > '9' {
			return false
		}
	}
	return t != ""
}

// glmBare reads a GLM call whose <tool_call> opener is missing: the name of
// a declared tool at the start of the content, then the argument pairs, up
// to </tool_call> or the end of the text. Without the opener the name is
// no marker: it must be a declared tool's, exactly.
func (s *textScan) glmBare(i int) (int, bool) {
	t := s.text
	ne := i
	for ne > 0 && strings.IndexByte(spaces, t[ne-1]) >= 0 {
		ne--
	}
	ns := ne
	for ns > 0 && isNameByte(t[ns-1]) {
		ns--
	}
	name := t[ns:ne]
	if ns != s.lead || !contains(s.declared, name) {
		return 0, false
	}
	inner, end := s.block(i, "</tool_call>")
	c, ok := s.readGLM(name + " " + inner)
	if !ok {
		return 0, false
	}
	marked := s.marked
	s.marked = false
	ok = s.add(ns, end, "glm", c)
	s.marked = marked
	return end, ok
}

// glmLeadMayCall reports whether t, the start of the content, may become
// a GLM call without its opener: it is a prefix of a declared tool's name,
// or such a name and the start of <arg_key>.
func glmLeadMayCall(t string, declared []string) bool {
	k := 0
	for k < len(t) && isNameByte(t[k]) {
		k++
	}
	if k == 0 {
		return false
	}
	name, rest := t[:k], t[k:]
	r := strings.TrimLeft(rest, spaces)
	switch {
	case rest == "":
		for _, d := range declared {
			if strings.HasPrefix(d, name) {
				return true
			}
		}
		return false
	case r == "" || len(r) < len(glmArgKey) && strings.HasPrefix(glmArgKey, r):
		return contains(declared, name)
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// markerHold returns where text must be held from for the marker m at i:
// a GLM call without its opener starts at its name; a run of harmony
// messages at its first that may be a call.
func markerHold(text string, from, i int, m *textMarker, declared []string) int {
	switch m.token {
	case glmArgKey:
		if c := skipSpace(text, from); contains(declared, strings.TrimRight(text[c:i], spaces)) {
			return c
		}
		return len(text)
	case hStart, hChannel:
		return harmonyHold(text, i)
	}
	return i
}

// openAtEnd reports whether the calls from the marker m at i run to the
// end of the text with the last one still open: cut off so far, and not
// yet certain to be refused.
func openAtEnd(t string, i int, m *textMarker) bool {
	switch m.token {
	case hStart, hChannel:
		for k, n := i, 0; n <= maxTextCalls; n++ {
			k = skipSpace(t, k)
			if !strings.HasPrefix(t[k:], hStart) && !strings.HasPrefix(t[k:], hChannel) {
				return false
			}
			h := strings.Index(t[k:], hMessage)
			if h < 0 {
				return true
			}
			be, term := harmonyBodyEnd(t, k+h+len(hMessage))
			if term == "" {
				return true
			}
			k = be + len(term)
		}
	case kSectionBegin, kCallBegin:
		return strings.Count(t[i:], kCallBegin) > strings.Count(t[i:], kCallEnd)
	case dsCallsBegin, dsCallBegin:
		return strings.Count(t[i:], dsCallBegin) > strings.Count(t[i:], dsCallEnd)
	}
	return false
}

// proseResult says what inProse made of a text.
type proseResult int

const (
	proseNone   proseResult = iota // no call on lines of its own
	proseMaybe                     // a block that the text ends in the middle of
	proseFound                     // one call block, read
	proseFailed                    // a call block framed as an example, or two
)

// maxProseBlocks bounds the blocks inProse tries to read in one text.
const maxProseBlocks = 16

// inProse reads an unmarked call written on lines of its own between
// prose: a pythonic call list, a JSON call object or a list of them, that
// starts a line and ends one, outside quoted text, naming declared tools.
// The prose before and after must not present it as an example, and the
// text must hold no other such block: which one is meant would be a guess.
// It returns where the block starts.
func (s *textScan) inProse(from int, quoted []span) (int, proseResult) {
	t := s.text
	at, result, tries := 0, proseNone, 0
	for ls := from; ls < len(t); {
		p := ls
		for p < len(t) && (t[p] == ' ' || t[p] == '\t') {
			p++
		}
		next := len(t)
		if k := strings.IndexByte(t[p:], '\n'); k >= 0 {
			next = p + k + 1
		}
		if p < len(t) && (t[p] == '[' || t[p] == '{') && p != s.lead && !isQuoted(quoted, p) {
			if tries++; tries > maxProseBlocks {
				return at, result
			}
			end, r := s.proseBlock(p)
			switch {
			case r == proseMaybe:
				if result == proseFound {
					return at, proseFailed
				}
				return p, proseMaybe
			case r == proseFound && result == proseFound:
				s.calls = s.calls[:0]
				return at, proseFailed
			case r == proseFound:
				at, result = p, proseFound
				next = end
			}
		}
		ls = next
	}
	if result == proseFound && (framedAsExample(t[from:at]) || framedAsExample(leading(t[s.calls[len(s.calls)-1].End:], 300))) {
		s.calls = s.calls[:0]
		return at, proseFailed
	}
	return at, result
}

func leading(t string, n int) string {
	if len(t) > n {
		return t[:n]
	}
	return t
}

// proseBlock reads the call block at p, which starts a line: it must end
// its line. It returns the end of the line.
func (s *textScan) proseBlock(p int) (int, proseResult) {
	t := s.text
	n := len(s.calls)
	var end int
	var ok bool
	switch {
	case t[p] == '[' && skipSpace(t, p+1) < len(t) && isNameStart(t[skipSpace(t, p+1)]):
		var calls []found
		calls, end, ok = readPythonicAt(t, p)
		ok = ok && s.add(p, end, "pythonic", calls...)
	case t[p] == '[':
		end, ok = s.callList(p, p, "json-list")
	default:
		e, err := jsonEnd(t, p)
		if err != nil {
			ok = false
			break
		}
		var c found
		c, ok = s.readEnvelope(t[p:e], false)
		end = e
		ok = ok && s.add(p, e, "llama3-json", c)
	}
	if !ok {
		s.calls = s.calls[:n]
		if couldBeWhole(t[p:], TextFormats{Marked: true, BareJSON: true}, false) {
			return 0, proseMaybe
		}
		return 0, proseNone
	}
	e := end
	for e < len(t) && (t[e] == ' ' || t[e] == '\t' || t[e] == '\r') {
		e++
	}
	if e < len(t) && t[e] != '\n' {
		s.calls = s.calls[:n]
		return 0, proseNone
	}
	for k := n; k < len(s.calls); k++ {
		s.calls[k].InProse = true
	}
	return e, proseFound
}

// jsonEnd returns the end of the complete JSON value at i, or an error
// that is io.ErrUnexpectedEOF when the text ends inside it.
func jsonEnd(t string, i int) (int, error) {
	d := json.NewDecoder(strings.NewReader(t[i:]))
	var raw json.RawMessage
	if err := d.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	return i + int(d.InputOffset()), nil
}

// listMarker reads a JSON list of call objects after a marker: Granite
// 3's "<|tool_call|>[...]", Hunyuan's "<tool_calls>[...]</tool_calls>".
// closing, when the format has one, must follow the list (or the text
// ends there).
func (s *textScan) listMarker(i int, token, closing, format string) (int, bool) {
	j := skipSpace(s.text, i+len(token))
	if j >= len(s.text) || s.text[j] != '[' {
		return 0, false
	}
	end, ok := s.callList(i, j, format)
	if !ok {
		return 0, false
	}
	if closing != "" {
		k := skipSpace(s.text, end)
		switch {
		case strings.HasPrefix(s.text[k:], closing):
			end = k + len(closing)
		case strings.TrimSpace(trimEndToken(s.text[k:])) != "":
			return 0, false // not closed, and not at the end of the text
		}
		s.calls[len(s.calls)-1].End = end
	}
	return end, true
}
