package repair

import (
	"slices"
	"sort"
	"strings"
)

// TextFormats selects the written forms of a tool call that TextCalls
// recognises in a message's content.
type TextFormats struct {
	// Marked is the forms with explicit markers: <tool_call> (Hermes JSON,
	// Qwen3-Coder XML, GLM key-value pairs), <function=name>, Mistral's
	// [TOOL_CALLS], Llama's <|python_tag|>, LFM2's <|tool_call_start|>,
	// DeepSeek's tool-call tokens, and a pythonic call list that is the
	// whole content.
	Marked bool
	// BareJSON is a JSON call object (or a list of them) that is the whole
	// content, or a fenced one that is the content's only code block and
	// ends it.
	BareJSON bool
	// ReAct is "Action:" and "Action Input:" lines.
	ReAct bool
	// Quota, if not nil, is the JSON repair work that mending the calls'
	// arguments may draw on: the request's (see Quota).
	Quota *Quota
}

// TextCall is one tool call found written in text.
type TextCall struct {
	// Name is the declared tool the written name maps to (see ToolName).
	// A call behind an explicit marker (a <tool_call> block, [TOOL_CALLS],
	// a model's call tokens) whose name maps to no declared tool keeps its
	// name as written: the model plainly made a call, of a tool that may be
	// another word for a declared one (lock_door for unlock_door), and only
	// the model can say which it meant, when asked again.
	Name string
	// Arguments is the JSON text of the arguments: an object as written
	// (or as mended in form only, or built from XML-like pairs), or for
	// ReAct input that is no JSON, the trimmed input as a JSON string.
	Arguments []byte
	// Start and End are the byte span of text the call occupied, markers
	// included. The spans of a text's calls are ordered and do not overlap.
	Start, End int
	// Format names the written form: "hermes", "qwen3-coder-xml",
	// "function-tag", "glm", "mistral", "llama3-json", "json-list",
	// "pythonic", "deepseek", "harmony", "kimi-k2", "granite", "hunyuan",
	// "phi4", "minimax-m2", "deepseek-v3.2", "seed-oss", "internlm2",
	// "command-r7b", "command-r", "gemma4", "hunyuan-v4", "functionary",
	// "fenced-json" or "react".
	Format string
	// Unread is set for a call behind an explicit marker that names a tool
	// but whose arguments cannot be read (cut off, not an object, not
	// JSON): Arguments is then the text written, as a JSON string. The
	// call is invalid as it stands, and is re-asked; converting the other
	// calls of its text and leaving it as text would split one answer.
	Unread bool
	// InProse is set for an unmarked call (a pythonic list, a JSON call
	// object or list) that stands on lines of its own between prose, rather
	// than being the whole content: read only with TextFormats.BareJSON.
	InProse bool
}

const (
	// maxTextScan bounds the text TextCalls reads: a longer content is
	// left as it is.
	maxTextScan = 1 << 20
	// maxTextCalls bounds the calls taken from one text.
	maxTextCalls = 64
	// maxWrittenName bounds an undeclared name a call keeps (see
	// TextCall.Name): the longest name the OpenAI API accepts.
	maxWrittenName = 64
)

// TextCalls finds the tool calls written in text. It returns nil unless
// every call it finds has arguments that can be read without guessing, and
// names exactly one declared tool (see ToolName) or is behind an explicit
// marker (see TextCall.Name): all or nothing, since
// converting some calls and leaving others as text would split one answer
// in two. Text inside <think> blocks, inline code and code blocks is never
// read as a call, nor is a call introduced as an example; the text outside
// the calls' spans stays content (see TextContent).
func TextCalls(text string, declared []string, f TextFormats) []TextCall {
	if len(text) > maxTextScan || len(declared) == 0 {
		return nil
	}
	from := afterReasoning(text)
	if from >= len(text) {
		return nil
	}
	w := walker{text: text, i: from, open: -1, markers: f.Marked, keep: f.ReAct || f.BareJSON, lead: skipSpace(text, from)}
	if f.Marked && strings.HasPrefix(text[w.lead:], fnMarker) {
		s := &textScan{text: text, declared: declared, marked: true, quota: f.Quota, lead: w.lead}
		if s.functionary(w.lead) {
			return s.calls
		}
		return nil
	}
	if !w.anyStart(f) {
		return nil
	}
	s := &textScan{text: text, declared: declared, marked: true, quota: f.Quota, lead: skipSpace(text, from)}
	prev := from
	for {
		i, m := w.next()
		if i < 0 {
			break
		}
		if framedAsExample(text[prev:i]) {
			return nil
		}
		n := len(s.calls)
		end, ok := m.read(s, i)
		if !ok {
			return nil
		}
		if len(s.calls) > n && s.calls[len(s.calls)-1].End == end {
			end = skipEndToken(text, end)
			s.calls[len(s.calls)-1].End = end
		}
		w.i, prev = end, end
	}
	s.marked = false
	if len(s.calls) > 0 {
		// ReAct's Action lines outside the calls read (Command R's action
		// is one such line) would be a second family of call in one text:
		// which is meant is a guess.
		if f.ReAct && s.react(from, withCalls(w.quoted, s.calls, text)) != 0 {
			return nil
		}
		return s.calls
	}
	c := skipSpace(text, from)
	if c == len(text) {
		return nil
	}
	switch {
	case f.Marked && text[c] == '[' && s.pythonicList(c):
		return s.calls
	case f.BareJSON && (text[c] == '{' || text[c] == '['):
		if s.bareJSON(c) {
			return s.calls
		}
		return nil
	}
	if f.BareJSON {
		if _, r := s.inProse(from, w.quoted); r == proseFound {
			return s.calls
		}
	}
	if f.ReAct {
		switch s.react(from, w.quoted) {
		case reactFound:
			return s.calls
		case reactFailed:
			return nil
		}
	}
	if f.BareJSON && w.fences == 1 && w.lastClosed && s.fencedJSON(from, w.lastFence) {
		return s.calls
	}
	return nil
}

// TextCallHold is TextCalls' partner for streaming: given the content
// received so far, it returns the offset from which text must be held back
// because it may be the start of a call, or len(text) when nothing need be.
// Text is released as soon as it can no longer be a call: "<tool_" is held,
// "<tool_x" is not. Text without any marker's first byte costs one scan.
func TextCallHold(text string, declared []string, f TextFormats) int {
	n := len(text)
	if n > maxTextScan || len(declared) == 0 {
		return n
	}
	from := afterReasoning(text)
	if from >= n {
		return n
	}
	c := skipSpace(text, from)
	if f.Marked && c < n && (strings.HasPrefix(text[c:], fnMarker) || strings.HasPrefix(fnMarker, text[c:])) {
		// Functionary's segments are read whole, at the end.
		return functionaryHold(text, c)
	}
	w := walker{text: text, i: from, open: -1, markers: f.Marked, keep: f.ReAct || f.BareJSON, lead: c}
	if !w.anyStart(f) {
		if f.Marked && c < n && (glmLeadMayCall(text[c:], declared) || strings.HasPrefix(functools+"[", text[c:])) {
			return c
		}
		if f.Marked {
			return commandRHold(text, from)
		}
		return n
	}
	hold := n
	if i, m := w.next(); i >= 0 {
		hold = markerHold(text, from, i, m, declared)
		if !readable(&w, declared, from, i, m, f.Quota) {
			return n // a call that TextCalls refuses, and with it the text
		}
	}
	held := hold // from here, the text is held as a marked call
	if f.Marked || f.BareJSON {
		hold = min(hold, w.partialMarker(f.Marked, f.BareJSON))
	}
	if f.Marked {
		hold = min(hold, commandRHold(text, from))
	}
	if f.Marked && c < n && (glmLeadMayCall(text[c:], declared) || strings.HasPrefix(functools+"[", text[c:])) {
		hold = min(hold, c)
	}
	if f.BareJSON && hold == n {
		s := textScan{text: text, declared: declared, quota: f.Quota}
		if at, r := s.inProse(from, w.quoted); r == proseFound || r == proseMaybe {
			hold = min(hold, at)
		}
	}
	if c < n && (f.BareJSON && text[c] == '{' || (f.BareJSON || f.Marked) && text[c] == '[') && couldBeWhole(text[c:], f, true) {
		hold = min(hold, c)
	}
	if f.BareJSON && w.fences == 1 && w.i == n && fenceMayCall(text, from, w.lastFence, w.lastClosed) {
		hold = min(hold, w.lastFence.start)
	}
	if f.ReAct {
		// ReAct reads the prose before what is held as a call (Command R's
		// action is an "Action:" line).
		a, failed := reactHold(text[:held], from, w.quoted, declared)
		if failed {
			return n
		}
		hold = min(hold, a)
	}
	return hold
}

// withCalls returns the quoted spans and the spans of calls read, in
// order: text a call was read from is no prose for ReAct to read (Command
// R's action is an "Action:" line). Calls whose text holds no "Action"
// leave the spans as they are, without a copy.
func withCalls(quoted []span, calls []TextCall, text string) []span {
	if !slices.ContainsFunc(calls, func(c TextCall) bool { return strings.Contains(text[c.Start:c.End], "Action") }) {
		return quoted
	}
	out := append([]span(nil), quoted...)
	for _, c := range calls {
		out = append(out, span{c.Start, c.End})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].start < out[b].start })
	return out
}

// readable reads the closed blocks from the marker m at i on, as far as
// they are closed, and reports false when one of them is certain to be
// refused: then TextCalls refuses the whole text.
func readable(w *walker, declared []string, prev, i int, m *textMarker, q *Quota) bool {
	s := textScan{text: w.text, declared: declared, marked: true, quota: q, lead: skipSpace(w.text, prev)}
	for ; i >= 0; i, m = w.next() {
		if framedAsExample(w.text[prev:i]) {
			return false
		}
		if m.closing == "" || !strings.Contains(w.text[i+len(m.token):], m.closing) {
			return true
		}
		end, ok := m.read(&s, i)
		if !ok {
			return openAtEnd(w.text, i, m) // cut off, or certain to be refused
		}
		w.i, prev = end, end
	}
	return true
}

// TextContent returns text without the spans of calls: what stays the
// message's content. The whitespace around each span goes with it, and
// the pieces left are joined by a newline where one surrounded the span,
// by a space otherwise.
func TextContent(text string, calls []TextCall) string {
	if len(calls) == 0 {
		return text
	}
	var b strings.Builder
	prev, newline := 0, false
	for k := 0; k <= len(calls); k++ {
		start, next := len(text), len(text)
		if k < len(calls) {
			start, next = calls[k].Start, calls[k].End
			if start < prev || next < start || next > len(text) {
				return text
			}
		}
		piece := text[prev:start]
		if trimmed := strings.TrimSpace(piece); trimmed != "" {
			if b.Len() > 0 {
				if newline || strings.Contains(piece[:len(piece)-len(strings.TrimLeft(piece, spaces))], "\n") {
					b.WriteByte('\n')
				} else {
					b.WriteByte(' ')
				}
			}
			b.WriteString(trimmed)
			newline = false
		}
		newline = newline || strings.Contains(piece[len(strings.TrimRight(piece, spaces)):], "\n")
		prev = next
	}
	return b.String()
}

const spaces = " \t\r\n"

// textScan collects the calls of one text.
type textScan struct {
	text     string
	declared []string
	calls    []TextCall
	// marked is set while calls behind explicit markers are read: their
	// names need not be declared (see TextCall.Name).
	marked bool
	quota  *Quota
	// lead is where the content starts, after reasoning and space.
	lead int
}

// found is one call read from text, before its name is mapped.
type found struct {
	name       string
	args       []byte
	start, end int
	// unread is set for a call that cannot be read (see TextCall.Unread).
	unread bool
	// prose is set for an unmarked call on lines of its own in prose (see
	// TextCall.InProse).
	prose bool
}

// add maps each call's name to a declared tool and records it; a marked
// call whose name maps to none keeps its name as written, when it is a
// plausible name (no spaces or brackets, at most maxWrittenName bytes).
// The calls
// of one block share its span: the first starts where the block does, each
// ends where the next starts, and the last ends with the block.
func (s *textScan) add(start, end int, format string, calls ...found) bool {
	if len(calls) == 0 || len(s.calls)+len(calls) > maxTextCalls {
		return false
	}
	for k, c := range calls {
		written := strings.TrimSpace(c.name)
		name, ok := ToolName(written, s.declared)
		if !ok && s.marked && len(written) <= maxWrittenName && validName(written) {
			name, ok = written, true
		}
		if !ok || c.args == nil {
			return false
		}
		cs, ce := c.start, end
		if k == 0 {
			cs = start
		}
		if k < len(calls)-1 {
			ce = calls[k+1].start
		}
		s.calls = append(s.calls, TextCall{Name: name, Arguments: c.args, Start: cs, End: ce, Format: format, Unread: c.unread, InProse: c.prose})
	}
	return true
}

// afterReasoning returns where the text after a leading reasoning block
// starts: after "<think>...</think>" at the start, after a "</think>"
// that no "<think>" opened (the chat template opened it), or len(text)
// when a <think> at the start is still open.
func afterReasoning(text string) int {
	lead := skipSpace(text, 0)
	if strings.HasPrefix(text[lead:], "<think>") {
		k := strings.Index(text[lead:], "</think>")
		if k < 0 {
			return len(text)
		}
		return lead + k + len("</think>")
	}
	if strings.IndexByte(text, '<') < 0 {
		return 0
	}
	if k := strings.Index(text, "</think>"); k >= 0 && !strings.Contains(text[:k], "<think>") {
		return k + len("</think>")
	}
	return 0
}

// exampleWords introduce a quoted call rather than make one.
var exampleWords = []string{"example", "e.g.", "like this", "such as", "for instance", "looks like", "format", "syntax"}

// framedAsExample reports whether the prose before a call presents it as
// an example. Only the last few hundred bytes are read: the sentences that
// lead into the call.
func framedAsExample(prose string) bool {
	if len(prose) > 300 {
		prose = prose[len(prose)-300:]
	}
	if strings.TrimSpace(prose) == "" {
		return false
	}
	low := strings.ToLower(prose)
	for _, w := range exampleWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

func skipSpace(t string, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n') {
		i++
	}
	return i
}

// endTokens are end-of-turn tokens that may follow a call; they go with
// its span rather than stay content.
var endTokens = []string{"<|eom_id|>", "<|eot_id|>", "<|im_end|>", "<|call|>", "</s>", "<｜end▁of▁sentence｜>"}

func skipEndToken(t string, end int) int {
	k := skipSpace(t, end)
	for _, tok := range endTokens {
		if strings.HasPrefix(t[k:], tok) {
			return k + len(tok)
		}
	}
	return end
}

// trimEndToken removes an end-of-turn token that ends t.
func trimEndToken(t string) string {
	t = strings.TrimRight(t, spaces)
	for _, tok := range endTokens {
		if rest, ok := strings.CutSuffix(t, tok); ok {
			return rest
		}
	}
	return t
}
