package repair

import (
	"sort"
	"strings"
)

// span is a byte range [start, end) of a text.
type span struct{ start, end int }

// textMarker is a token that opens a written call, and the reader of the
// call it opens: read returns the end of the call's span.
type textMarker struct {
	token string
	// closing ends the block the marker opens, when it has one: a closed
	// block that cannot be read is final.
	closing string
	read    func(s *textScan, i int) (int, bool)
}

// DeepSeek's tokens, written with full-width bars and the "▁" of its
// tokenizer.
const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
)

var textMarkers = []textMarker{
	{"<tool_call>", "</tool_call>", (*textScan).toolCallTag},
	{"<function=", "</function>", (*textScan).functionTag},
	{"[TOOL_CALLS]", "", (*textScan).mistral},
	{"<|python_tag|>", "", (*textScan).pythonTag},
	{"<|tool_call_start|>", "<|tool_call_end|>", func(s *textScan, i int) (int, bool) {
		return s.pythonicBlock(i, "<|tool_call_start|>", "<|tool_call_end|>")
	}},
	{"<|python_start|>", "<|python_end|>", func(s *textScan, i int) (int, bool) {
		return s.pythonicBlock(i, "<|python_start|>", "<|python_end|>")
	}},
	{dsCallsBegin, dsCallsEnd, (*textScan).deepSeek},
	{dsCallBegin, dsCallEnd, (*textScan).deepSeek},
	{hStart, hCall, (*textScan).harmony},
	{hChannel, hCall, (*textScan).harmony},
	{kSectionBegin, kSectionEnd, (*textScan).kimi},
	{kCallBegin, kCallEnd, (*textScan).kimi},
	{glmArgKey, "", (*textScan).glmBare},
	{"<|tool_call|>", "", func(s *textScan, i int) (int, bool) {
		return s.listMarker(i, "<|tool_call|>", "", "granite")
	}},
	{"<tool_calls>", "</tool_calls>", (*textScan).toolCallsTag},
	{mmOpen, mmClose, func(s *textScan, i int) (int, bool) {
		return s.invokeBlock(i, mmOpen, mmClose, "", "minimax-m2")
	}},
	{"<" + dsmlWide + "function_calls>", "</" + dsmlWide + "function_calls>", func(s *textScan, i int) (int, bool) {
		return s.invokeBlock(i, "<"+dsmlWide+"function_calls>", "</"+dsmlWide+"function_calls>", dsmlWide, "deepseek-v3.2")
	}},
	{"<" + dsmlASCII + "function_calls>", "</" + dsmlASCII + "function_calls>", func(s *textScan, i int) (int, bool) {
		return s.invokeBlock(i, "<"+dsmlASCII+"function_calls>", "</"+dsmlASCII+"function_calls>", dsmlASCII, "deepseek-v3.2")
	}},
	{"<" + dsmlWide + "tool_calls>", "</" + dsmlWide + "tool_calls>", func(s *textScan, i int) (int, bool) {
		return s.invokeBlock(i, "<"+dsmlWide+"tool_calls>", "</"+dsmlWide+"tool_calls>", dsmlWide, "deepseek-v3.2")
	}},
	{seedOpen, seedClose, (*textScan).seed},
	{internOpen, internClose, (*textScan).internLM},
	{cohereOpen, cohereClose, (*textScan).cohere},
	{gemmaOpen, gemmaClose, (*textScan).gemma},
}

// maxMarker is the length of the longest marker, in bytes.
var maxMarker = func() int {
	n := 0
	for _, m := range textMarkers {
		n = max(n, len(m.token))
	}
	return n
}()

// markersByPair lists, by their first and second bytes, the markers that
// start with them, in textMarkers' order: a text of many '<' or '[' that
// start none costs two lookups each, not a comparison with every marker.
var markersByPair = func() (m [256]*[256][]*textMarker) {
	for k := range textMarkers {
		t := textMarkers[k].token
		if m[t[0]] == nil {
			m[t[0]] = new([256][]*textMarker)
		}
		m[t[0]][t[1]] = append(m[t[0]][t[1]], &textMarkers[k])
	}
	return m
}()

func markerAt(t string, i int) *textMarker {
	if i+1 >= len(t) || markersByPair[t[i]] == nil {
		return nil // every marker is longer than a byte
	}
	for _, m := range markersByPair[t[i]][t[i+1]] {
		if strings.HasPrefix(t[i:], m.token) {
			return m
		}
	}
	return nil
}

// walkStops are the bytes the walker stops at: the first of each marker,
// of a code span or block ("`", which Command R's call follows too) and of
// a <think> block.
var walkStops = func() (set [256]bool) {
	for _, m := range textMarkers {
		set[m.token[0]] = true
	}
	set['`'], set['<'] = true, true
	return set
}()

// nextStop returns the index of the first byte of t in walkStops, or -1.
func nextStop(t string) int {
	for i := 0; i < len(t); i++ {
		if walkStops[t[i]] {
			return i
		}
	}
	return -1
}

// walker moves through a text past what is quoted there (inline code, code
// blocks, <think> blocks) and stops at each marker outside it.
type walker struct {
	text    string
	i       int
	markers bool // stop at markers
	keep    bool // record quoted spans
	quoted  []span
	// fences counts the code blocks passed; lastFence is the last one,
	// whose end is len(text) when it is still open.
	fences     int
	lastFence  span
	lastClosed bool
	// quotedEnd is the end of the last quoted span passed; open is the
	// start of a quoted span that runs to the end of the text, or -1.
	quotedEnd, open int
	// lead is where the content starts, after reasoning and space: the
	// only place Phi-4's functools marker is read.
	lead int
}

// functools is Phi-4-mini's marker: "functools[" and a JSON list of calls,
// with no closing marker. Being a word, it is read only where the content
// starts.
const functools = "functools"

// Command R's action starts a line with "Action: " and a json code block:
// the block is a list of calls, not a quote.
const commandRAction = "Action: "

var commandRMarker = textMarker{commandROpen, "```", (*textScan).commandR}

// commandRAt reports whether the code block at i is Command R's action:
// "Action: " starts its line, after anything quoted.
func commandRAt(t string, i, quotedEnd int) bool {
	k := i - len(commandRAction)
	return k >= quotedEnd && k >= 0 && t[k:i] == commandRAction && strings.HasPrefix(t[i:], "```json") &&
		(k == 0 || t[k-1] == '\n')
}

// commandRHold returns where the last line starts when it may yet become
// Command R's action ("Act", "Action: “"), or len(t).
func commandRHold(t string, from int) int {
	// Only a line shorter than the action's opening can be its start: look
	// at that many bytes from the end, not at the whole text.
	lo := max(from, len(t)-len(commandROpen))
	k := strings.LastIndexByte(t[lo:], '\n')
	switch {
	case k >= 0:
		k += lo + 1
	case lo == from:
		k = from
	default:
		return len(t)
	}
	if line := t[k:]; line != "" && len(line) < len(commandROpen) && strings.HasPrefix(commandROpen, line) {
		return k
	}
	return len(t)
}

var functoolsMarker = textMarker{functools + "[", "", func(s *textScan, i int) (int, bool) {
	return s.listMarker(i, functools, "", "phi4")
}}

// anyStart reports whether the text holds a byte that can start a call in
// one of the formats: the fast path for plain prose.
func (w *walker) anyStart(f TextFormats) bool {
	t := w.text[w.i:]
	if (f.Marked || f.BareJSON) && (strings.IndexByte(t, '<') >= 0 || strings.IndexByte(t, '[') >= 0) {
		return true
	}
	if f.Marked && strings.IndexByte(t, '`') >= 0 && strings.Contains(t, commandROpen) {
		return true
	}
	if f.BareJSON && (strings.IndexByte(t, '{') >= 0 || strings.IndexByte(t, '`') >= 0) {
		return true
	}
	return f.ReAct && (strings.Contains(t, "Action") || lastLineIsPrefix(t, "Action:"))
}

// next returns the position of the next marker outside quoted text, or -1
// at the end of the text. The caller moves w.i past what it reads there.
func (w *walker) next() (int, *textMarker) {
	t := w.text
	for w.i < len(t) {
		j := nextStop(t[w.i:])
		if j < 0 {
			w.i = len(t)
			break
		}
		i := w.i + j
		switch {
		case w.markers && commandRAt(t, i, w.quotedEnd):
			w.i = i - len(commandRAction)
			return w.i, &commandRMarker
		case strings.HasPrefix(t[i:], "```"):
			end, closed := len(t), false
			if k := strings.Index(t[i+3:], "```"); k >= 0 {
				end, closed = i+3+k+3, true
			}
			w.fences++
			w.lastFence, w.lastClosed = span{i, end}, closed
			w.quote(i, end, !closed)
			continue
		case strings.HasPrefix("```", t[i:]):
			w.i = len(t) // "`" or "``" at the end may yet open a code block
			continue
		case t[i] == '`':
			k := strings.IndexByte(t[i+1:], '`')
			if k < 0 {
				w.i = i + 1
				continue
			}
			w.quote(i, i+k+2, false)
			continue
		case strings.HasPrefix(t[i:], "<think>"):
			end, closed := len(t), false
			if k := strings.Index(t[i:], "</think>"); k >= 0 {
				end, closed = i+k+len("</think>"), true
			}
			w.quote(i, end, !closed)
			continue
		}
		if w.markers {
			if m := markerAt(t, i); m != nil {
				w.i = i
				return i, m
			}
			if k := i - len(functools); t[i] == '[' && k == w.lead && k >= w.quotedEnd && t[k:i] == functools {
				w.i = k
				return k, &functoolsMarker
			}
		}
		w.i = i + 1
	}
	return -1, nil
}

func (w *walker) quote(start, end int, open bool) {
	if w.keep {
		w.quoted = append(w.quoted, span{start, end})
	}
	if open {
		w.open = start
	}
	w.i, w.quotedEnd = end, end
}

// partialMarker returns where a marker that the text ends in the middle of
// starts ("<tool_", "[TOOL_C"), or len(text). With fences, one or two
// backticks at the end may open a code block.
func (w *walker) partialMarker(markers, fences bool) int {
	t := w.text
	if w.open >= 0 {
		return len(t)
	}
	for q := max(w.quotedEnd, len(t)-maxMarker+1, 0); q < len(t); q++ {
		if t[q] != '<' && t[q] != '[' && t[q] != '`' {
			continue
		}
		rest := t[q:]
		if fences && strings.HasPrefix("```", rest) {
			return q
		}
		for _, m := range textMarkers {
			if markers && len(rest) < len(m.token) && strings.HasPrefix(m.token, rest) {
				return q
			}
		}
	}
	return len(t)
}

// isQuoted reports whether position i is inside one of the quoted spans,
// which are in order.
func isQuoted(quoted []span, i int) bool {
	k := sort.Search(len(quoted), func(k int) bool { return quoted[k].end > i })
	return k < len(quoted) && quoted[k].start <= i
}

// couldBeWhole reports whether t, which starts with "{" or "[", may still
// become a call list or object that is the whole content: it is not yet
// closed, or (when whole) nothing but space follows its closing bracket.
func couldBeWhole(t string, f TextFormats, whole bool) bool {
	k := skipSpace(t, 1)
	if k == len(t) {
		return true
	}
	pythonic := false
	switch c := t[k]; {
	case t[0] == '{':
		if c != '"' && c != '}' {
			return false
		}
	case c == '{':
		if !f.BareJSON {
			return false
		}
	case f.Marked && isNameStart(c):
		e := k
		for e < len(t) && isNameByte(t[e]) {
			e++
		}
		if e < len(t) && t[e] != '(' {
			return false
		}
		pythonic = true
	default:
		return false
	}
	depth, quote := 0, byte(0)
	for k := 0; k < len(t); k++ {
		c := t[k]
		if quote != 0 {
			if c == '\\' {
				k++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"':
			quote = c
		case '\'':
			if pythonic {
				quote = c
			}
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
			if depth == 0 {
				return whole && strings.TrimSpace(t[k+1:]) == ""
			}
		}
	}
	return true
}

// fenceMayCall reports whether a code block that ends the text so far may
// be, or become, a fenced JSON call: its info string is empty or "json",
// what it holds starts as an object, and the prose before does not present
// it as an example.
func fenceMayCall(text string, from int, f span, closed bool) bool {
	body, ok := fenceParts(text, f, closed)
	if !ok || (closed && strings.TrimSpace(text[f.end:]) != "") {
		return false
	}
	b := strings.TrimSpace(body)
	return (b == "" || b[0] == '{') && !framedAsExample(text[from:f.start])
}

// fenceParts returns what the code block at f holds. ok is false when its
// info string is not empty nor "json", or (while the info line is
// incomplete) cannot become either.
func fenceParts(text string, f span, closed bool) (string, bool) {
	inner := text[f.start+3 : f.end]
	if closed {
		inner = inner[:len(inner)-3]
	}
	nl := strings.IndexByte(inner, '\n')
	if nl < 0 {
		info := strings.ToLower(strings.TrimSpace(inner))
		return "", !closed && strings.HasPrefix("json", info)
	}
	info := strings.ToLower(strings.TrimSpace(inner[:nl]))
	return inner[nl+1:], info == "" || info == "json"
}

// lastLineIsPrefix reports whether the last line of t, after its
// indentation, is a proper prefix of word. Only the end of t is read.
func lastLineIsPrefix(t, word string) bool {
	for k := len(t) - 1; k >= 0 && k > len(t)-len(word); k-- {
		if !strings.HasPrefix(word, t[k:]) {
			continue
		}
		i := k
		for i > 0 && (t[i-1] == ' ' || t[i-1] == '\t') {
			i--
		}
		if i == 0 || t[i-1] == '\n' {
			return true
		}
	}
	return false
}

func isNameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isNameByte(c byte) bool {
	return isNameStart(c) || '0' <= c && c <= '9' || c == '.' || c == '-'
}
