package repair

import (
	"io"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"
)

// More formats, each read from its model's chat template or documentation.

// MiniMax M2's tags: <minimax:tool_call>, then one or more <invoke
// name="NAME"> blocks of <parameter name="KEY">VALUE</parameter>.
const (
	mmOpen  = "<minimax:tool_call>"
	mmClose = "</minimax:tool_call>"
)

// DeepSeek V3.2's DSML tags, written with the full-width bars of its
// tokenizer (and, by some templates, with ASCII bars):
// <｜DSML｜function_calls>, then <｜DSML｜invoke name="NAME"> blocks of
// <｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>.
const (
	dsmlWide  = "｜DSML｜"
	dsmlASCII = "|DSML|"
)

// Seed-OSS's wrapper around Qwen3-Coder's XML: <seed:tool_call><function=
// NAME><parameter=KEY>VALUE</parameter></function></seed:tool_call>.
const (
	seedOpen  = "<seed:tool_call>"
	seedClose = "</seed:tool_call>"
)

// InternLM2's plugin action: <|action_start|><|plugin|> and a JSON object
// {"name": ..., "parameters": {...}} up to <|action_end|>. Its other
// action, <|interpreter|>, is code to run, not a call, and stays text.
const (
	internOpen  = "<|action_start|><|plugin|>"
	internClose = "<|action_end|>"
)

// Command R7B's action: <|START_ACTION|> and a JSON list of
// {"tool_call_id": ..., "tool_name": ..., "parameters": {...}} up to
// <|END_ACTION|>.
const (
	cohereOpen  = "<|START_ACTION|>"
	cohereClose = "<|END_ACTION|>"
)

// Command R's action: "Action: " and a list of calls in a json code block.
const commandROpen = commandRAction + "```json"

// Gemma 4's call: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:15}<tool_call|>:
// keys bare, every string between <|"|> delimiters, the rest as in JSON.
const (
	gemmaOpen  = "<|tool_call>call:"
	gemmaClose = "<tool_call|>"
	gemmaQuote = `<|"|>`
)

// invokeBlock reads a block of invoke tags (MiniMax M2, DeepSeek V3.2's
// DSML) from the opening token at i to its closing token; p is the tags'
// prefix. Every invoke must be closed and hold only parameters; a closed
// block whose invoke names a tool but cannot be read is re-asked, one cut
// off leaves the text.
func (s *textScan) invokeBlock(i int, open, close, p, format string) (int, bool) {
	inner, end := s.block(i+len(open), close)
	closed := strings.HasSuffix(s.text[:end], close)
	body := strings.TrimSpace(inner)
	base := i + len(open) + leadingSpace(inner) + len(body) // body's end
	var calls []found
	for n := 0; body != "" && n <= maxTextCalls; n++ {
		start := base - len(body)
		header, rest, ok := between(body, "<"+p+"invoke", ">")
		name, named := attribute(header, "name")
		if !ok || !named || !validName(name) {
			return 0, false
		}
		params, after, ok := cutTag(rest, "</"+p+"invoke>")
		if !ok {
			if !closed {
				return 0, false // cut off
			}
			params, after = rest, ""
		}
		args, ok := invokeArgs(strings.TrimSpace(params), p)
		c := found{name: name, args: args}
		if !ok {
			if !closed {
				return 0, false
			}
			c = s.unread(name, strings.TrimSpace(params))
		}
		c.start = start
		calls = append(calls, c)
		body = strings.TrimSpace(after)
	}
	if len(calls) == 0 || body != "" {
		return 0, false
	}
	return end, s.add(i, end, format, calls...)
}

// invokeArgs reads an invoke's parameters into a JSON object. A parameter
// marked string="true" is the text as written; string="false" must be
// JSON; unmarked, the value is JSON when it is valid JSON, else a string.
func invokeArgs(params, p string) ([]byte, bool) {
	var o objectText
	for params != "" {
		header, rest, ok := between(params, "<"+p+"parameter", ">")
		key, named := attribute(header, "name")
		if !ok || !named {
			return nil, false
		}
		value, after, ok := cutTag(rest, "</"+p+"parameter>")
		if !ok {
			return nil, false
		}
		switch str, marked := attribute(header, "string"); {
		case !marked:
			ok = o.add(key, value)
		case str == "true":
			v, _ := encode(value)
			ok = o.addJSON(strings.TrimSpace(key), v)
		case str == "false" && gjson.Valid(strings.TrimSpace(value)):
			ok = o.addJSON(strings.TrimSpace(key), compact([]byte(strings.TrimSpace(value))))
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
		params = strings.TrimSpace(after)
	}
	return o.close(), true
}

// attribute reads name="value" from a tag's attributes.
func attribute(header, name string) (string, bool) {
	for _, f := range strings.Fields(header) {
		if v, ok := strings.CutPrefix(f, name+`="`); ok && strings.HasSuffix(v, `"`) {
			return v[:len(v)-1], true
		}
	}
	// A value with spaces in it.
	k := strings.Index(header, " "+name+`="`)
	if k < 0 {
		return "", false
	}
	v := header[k+len(name)+3:]
	e := strings.IndexByte(v, '"')
	if e < 0 {
		return "", false
	}
	return v[:e], true
}

// seed reads Seed-OSS's <seed:tool_call> block: Qwen3-Coder's XML.
func (s *textScan) seed(i int) (int, bool) {
	inner, end := s.block(i+len(seedOpen), seedClose)
	t := strings.TrimSpace(inner)
	if !strings.HasPrefix(t, "<function=") {
		return 0, false
	}
	c, _, ok := s.readFunction(strings.TrimSpace(strings.TrimSuffix(t, "</function>")))
	return end, ok && s.add(i, end, "seed-oss", c)
}

// internLM reads InternLM2's plugin action: one JSON call object.
func (s *textScan) internLM(i int) (int, bool) {
	inner, end := s.block(i+len(internOpen), internClose)
	t := strings.TrimSpace(inner)
	c, ok := s.readEnvelope(t, false)
	if !ok && strings.HasSuffix(s.text[:end], internClose) {
		c, ok = s.unreadEnvelope(t)
	}
	return end, ok && s.add(i, end, "internlm2", c)
}

// cohere reads Command R7B's action: a JSON list of calls named by
// tool_name, with their parameters.
func (s *textScan) cohere(i int) (int, bool) {
	inner, end := s.block(i+len(cohereOpen), cohereClose)
	return s.cohereList(i, end, i+len(cohereOpen), inner, strings.HasSuffix(s.text[:end], cohereClose), "command-r7b")
}

// commandR reads Command R's action: "Action: " and a json code block
// holding a list of {"tool_name", "parameters"}. A list that only calls
// directly_answer, the tool Command R's own template adds for answering
// without one, is no call: the text stays.
func (s *textScan) commandR(i int) (int, bool) {
	inner, end := s.block(i+len(commandROpen), "```")
	list := gjson.Parse(inner)
	direct := list.IsArray()
	list.ForEach(func(_, e gjson.Result) bool {
		n := e.Get("tool_name").Str
		direct = n == "directly_answer" || n == "directly-answer"
		return direct
	})
	if direct {
		return 0, false
	}
	return s.cohereList(i, end, i+len(commandROpen), inner, strings.HasSuffix(s.text[:end], "```"), "command-r")
}

// cohereList reads the JSON list of calls of a Cohere action, the span
// from i to end; the list is inner, which starts at at.
func (s *textScan) cohereList(i, end, at int, inner string, closed bool, format string) (int, bool) {
	at += leadingSpace(inner)
	list := gjson.Parse(strings.TrimSpace(inner))
	if !gjson.Valid(strings.TrimSpace(inner)) || !list.IsArray() {
		return 0, false
	}
	var calls []found
	ok := true
	list.ForEach(func(_, e gjson.Result) bool {
		name := e.Get("tool_name")
		if name.Type != gjson.String || !validName(name.Str) || len(calls) == maxTextCalls {
			ok = false
			return false
		}
		c := found{name: name.Str, start: at + e.Index}
		known := true
		e.ForEach(func(k, _ gjson.Result) bool {
			known = k.Str == "tool_name" || k.Str == "parameters" || k.Str == "tool_call_id"
			return known
		})
		switch p := e.Get("parameters"); {
		case known && p.IsObject():
			c.args = []byte(p.Raw)
		case known && !p.Exists():
			c.args = []byte("{}")
		case closed:
			c = s.unread(name.Str, e.Raw)
			c.start = at + e.Index
		default:
			ok = false
			return false
		}
		calls = append(calls, c)
		return true
	})
	if !ok || len(calls) == 0 {
		return 0, false
	}
	return end, s.add(i, end, format, calls...)
}

// gemma reads Gemma 4's call: its object, written with bare keys and
// delimited strings, is read as JSON once its strings are quoted and its
// keys too.
func (s *textScan) gemma(i int) (int, bool) {
	inner, end := s.block(i+len(gemmaOpen), gemmaClose)
	closed := strings.HasSuffix(s.text[:end], gemmaClose)
	b := strings.IndexByte(inner, '{')
	if b < 0 || !validName(inner[:b]) {
		return 0, false
	}
	name := strings.TrimSpace(inner[:b])
	args, ok := gemmaObject(strings.TrimSpace(inner[b:]))
	c := found{name: name, args: args}
	if !ok {
		if !closed {
			return 0, false
		}
		c = s.unread(name, strings.TrimSpace(inner[b:]))
	}
	return end, s.add(i, end, "gemma4", c)
}

// gemmaObject turns Gemma 4's object notation into JSON: each <|"|>text<|"|>
// becomes a JSON string of the text as written, and each bare key a
// quoted one; numbers, true, false, null, braces and brackets are JSON's.
// Anything else is not read. One pass: the open brackets are kept to know
// that a key follows a comma in an object.
func gemmaObject(t string) ([]byte, bool) {
	if len(t) > MaxInput {
		return nil, false
	}
	var out []byte
	var open []byte
	expectKey := false
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case strings.HasPrefix(t[i:], gemmaQuote):
			e := strings.Index(t[i+len(gemmaQuote):], gemmaQuote)
			if e < 0 {
				return nil, false
			}
			q, _ := encode(t[i+len(gemmaQuote) : i+len(gemmaQuote)+e])
			out = append(out, q...)
			i += 2*len(gemmaQuote) + e
			expectKey = false
			continue
		case c == '{' || c == '[':
			open = append(open, c)
			expectKey = c == '{'
		case c == '}' || c == ']':
			if len(open) == 0 {
				return nil, false
			}
			open = open[:len(open)-1]
			expectKey = false
		case c == ',':
			expectKey = len(open) > 0 && open[len(open)-1] == '{'
		case c == ':':
			expectKey = false
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			i++
			continue
		case expectKey && isNameByte(c):
			k := i
			for k < len(t) && isNameByte(t[k]) {
				k++
			}
			if k >= len(t) || t[k] != ':' {
				return nil, false
			}
			q, _ := encode(t[i:k])
			out = append(out, q...)
			i = k
			expectKey = false
			continue
		default:
			k := i
			for k < len(t) && strings.IndexByte(",}] \n\t\r", t[k]) < 0 {
				k++
			}
			out = append(out, t[i:k]...)
			i = k
			expectKey = false
			continue
		}
		out = append(out, c)
		i++
	}
	if !gjson.ValidBytes(out) || !gjson.ParseBytes(out).IsObject() {
		return nil, false
	}
	return out, true
}

// toolCallsTag reads what follows <tool_calls>: Hunyuan A13B's JSON list
// (also Jamba's and Apriel's), or Hunyuan V4's <tool_call> blocks, each a
// name and <arg_key>/<arg_value> pairs as GLM writes them.
func (s *textScan) toolCallsTag(i int) (int, bool) {
	const open, close = "<tool_calls>", "</tool_calls>"
	if j := skipSpace(s.text, i+len(open)); j < len(s.text) && s.text[j] == '[' {
		return s.listMarker(i, open, close, "hunyuan")
	}
	inner, end := s.block(i+len(open), close)
	closed := strings.HasSuffix(s.text[:end], close)
	body := strings.TrimSpace(inner)
	base := i + len(open) + leadingSpace(inner) + len(body) // body's end
	var calls []found
	for n := 0; body != "" && n <= maxTextCalls; n++ {
		start := base - len(body)
		call, rest, ok := between(body, "<tool_call>", "</tool_call>")
		if !ok {
			return 0, false // cut off, or not a call
		}
		c, ok := s.readGLM(strings.TrimSpace(call))
		if !ok {
			name, _, _ := strings.Cut(strings.TrimSpace(call), "<")
			if !closed || !validName(name) {
				return 0, false
			}
			c = s.unread(strings.TrimSpace(name), strings.TrimSpace(call))
		}
		c.start = start
		calls = append(calls, c)
		body = strings.TrimSpace(rest)
	}
	if len(calls) == 0 || body != "" {
		return 0, false
	}
	return end, s.add(i, end, "hunyuan-v4", calls...)
}

// leadingSpace is the length of the space t starts with, as TrimSpace
// removes it.
func leadingSpace(t string) int {
	return len(t) - len(strings.TrimLeftFunc(t, unicode.IsSpace))
}

// Functionary v3.2's recipient marker: ">>>NAME\n" and the arguments, a
// JSON object; ">>>all\n" starts text for the user.
const fnMarker = ">>>"

// functionary reads a content that is Functionary v3.2's segments from c
// (the content's start) to its end: each ">>>NAME" on its own line, then a
// JSON object. It is read only when every segment is a call: a segment
// for "all" is the model's words to the user, and a content that mixes
// them with calls is left as text.
func (s *textScan) functionary(c int) bool {
	t := s.text
	for k, n := c, 0; k < len(t); n++ {
		if n == maxTextCalls || !strings.HasPrefix(t[k:], fnMarker) {
			return false
		}
		h := k + len(fnMarker)
		nl := strings.IndexByte(t[h:], '\n')
		if nl < 0 {
			return false
		}
		name := t[h : h+nl]
		j := skipSpace(t, h+nl+1)
		if name == "all" || !fnName(name) || j >= len(t) || t[j] != '{' {
			return false
		}
		end, ok := jsonValueEnd(t, j)
		if !ok {
			return false
		}
		next := skipSpace(t, end)
		if !s.add(k, next, "functionary", found{name: name, args: []byte(t[j:end])}) {
			return false
		}
		k = next
	}
	return len(s.calls) > 0
}

// functionaryHold returns c while the content from c may still become
// Functionary segments that are all calls, and len(t) once it cannot: a
// segment for "all", a name that is none, arguments that are no object,
// or text after a call that opens no segment.
func functionaryHold(t string, c int) int {
	for k, n := c, 0; n <= maxTextCalls; n++ {
		switch {
		case k == len(t), strings.HasPrefix(fnMarker, t[k:]):
			return c // the next segment may yet come
		case !strings.HasPrefix(t[k:], fnMarker):
			return len(t)
		}
		h := k + len(fnMarker)
		nl := strings.IndexByte(t[h:], '\n')
		if nl < 0 {
			if name := t[h:]; name == "" || strings.HasPrefix("all", name) || fnName(name) {
				return c
			}
			return len(t)
		}
		name := t[h : h+nl]
		j := skipSpace(t, h+nl+1)
		switch {
		case name == "all" || !fnName(name):
			return len(t)
		case j == len(t):
			return c
		case t[j] != '{':
			return len(t)
		}
		end, ok := jsonValueEnd(t, j)
		if !ok {
			if _, err := jsonEnd(t, j); err == io.ErrUnexpectedEOF {
				return c // cut off so far
			}
			return len(t)
		}
		k = skipSpace(t, end)
	}
	return len(t)
}

// fnName reports whether a Functionary header names a recipient: a name
// right after ">>>", with no space in it (">>> print(1)" is a prompt).
func fnName(name string) bool {
	return validName(name) && !strings.ContainsAny(name, " \t\r")
}
