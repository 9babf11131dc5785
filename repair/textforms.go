package repair

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// The readers of each written form. Each returns the end of the span it
// read and false when the text is a call that cannot be read without
// guessing, which leaves the whole text as content.

// toolCallTag reads <tool_call>...</tool_call>, which holds Hermes JSON,
// Qwen3-Coder XML or GLM's key-value pairs. A last block left open at the
// end of the text is read when what it holds is complete.
func (s *textScan) toolCallTag(i int) (int, bool) {
	inner, end := s.block(i+len("<tool_call>"), "</tool_call>")
	t := strings.TrimSpace(inner)
	switch {
	case strings.HasPrefix(t, "{"):
		c, ok := s.readEnvelope(t, true)
		if !ok && strings.HasSuffix(s.text[:end], "</tool_call>") {
			// A closed block: the model plainly made a call, and wrote it
			// so that it cannot be read.
			c, ok = s.unreadEnvelope(t)
		}
		return end, ok && s.add(i, end, "hermes", c)
	case strings.HasPrefix(t, "<function="):
		c, format, ok := s.readFunction(strings.TrimSuffix(t, "</function>"))
		return end, ok && s.add(i, end, format, c)
	}
	c, ok := s.readGLM(t)
	return end, ok && s.add(i, end, "glm", c)
}

// functionTag reads <function=name>...</function> without a <tool_call>
// around it: Qwen3-Coder's parameters, or Llama 3.1's JSON arguments.
func (s *textScan) functionTag(i int) (int, bool) {
	inner, end := s.block(i, "</function>")
	c, format, ok := s.readFunction(strings.TrimSpace(inner))
	return end, ok && s.add(i, end, format, c)
}

// block returns the text from i to the closing tag, and the end of that
// tag; an unclosed block runs to the end of the text.
func (s *textScan) block(i int, closing string) (string, int) {
	if k := strings.Index(s.text[i:], closing); k >= 0 {
		return s.text[i : i+k], i + k + len(closing)
	}
	return trimEndToken(s.text[i:]), len(s.text)
}

// readFunction reads "<function=name>" and the body up to where t ends:
// <parameter=key>value</parameter> pairs, or a JSON object.
func (s *textScan) readFunction(t string) (found, string, bool) {
	rest := strings.TrimPrefix(t, "<function=")
	k := strings.IndexByte(rest, '>')
	if k < 0 {
		return found{}, "", false
	}
	name, body := rest[:k], strings.TrimSpace(rest[k+1:])
	if strings.HasPrefix(body, "{") {
		args, ok := s.readObject(body)
		return found{name: name, args: args}, "function-tag", ok
	}
	var o objectText
	for body != "" {
		var key, value string
		var ok bool
		if key, body, ok = between(body, "<parameter=", ">"); !ok {
			return found{}, "", false
		}
		if value, body, ok = parameterValue(body); !ok || !o.add(key, value) {
			return found{}, "", false
		}
		body = strings.TrimSpace(body)
	}
	return found{name: name, args: o.close()}, "qwen3-coder-xml", validName(name)
}

// parameterValue reads a Qwen3-Coder parameter's value up to its
// </parameter>, or, when the model left it out, up to the next
// <parameter= or the end of the function: where the value ends is then
// still certain. When the lines of the value are indented (the model laid
// the tags out indented), the indentation they share is the layout's, and
// goes, as does the closing tag's.
func parameterValue(body string) (string, string, bool) {
	value, rest, ok := cutTag(body, "</parameter>")
	if next := strings.Index(body, "<parameter="); next >= 0 && (!ok || next < len(value)) {
		value, rest, ok = body[:next], body[next:], true
	}
	if !ok {
		value, rest = body, ""
	}
	return dedent(value), rest, true
}

// dedent removes the layout of a value written on lines of its own
// between indented tags: the indentation of the closing tag, and the
// indentation that every line of the value shares. A value between tags
// that are not indented keeps its indentation: it is the value's.
func dedent(v string) string {
	if !strings.HasPrefix(v, "\n") && !strings.HasPrefix(v, "\r\n") {
		return v
	}
	trimmed := strings.TrimRight(v, " \t")
	if len(trimmed) == len(v) || !strings.HasSuffix(trimmed, "\n") {
		return v
	}
	v = trimmed
	lines := strings.Split(v, "\n")
	common := -1
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	if common <= 0 {
		return v
	}
	for k := 1; k < len(lines); k++ {
		if len(lines[k]) >= common {
			lines[k] = lines[k][common:]
		} else {
			lines[k] = strings.TrimLeft(lines[k], " \t")
		}
	}
	return strings.Join(lines, "\n")
}

// readGLM reads GLM's "name <arg_key>k</arg_key><arg_value>v</arg_value>...".
func (s *textScan) readGLM(t string) (found, bool) {
	k := strings.IndexByte(t, '<')
	if k < 0 {
		k = len(t)
	}
	name, body := strings.TrimSpace(t[:k]), t[k:]
	var o objectText
	for body != "" {
		var key, value string
		var ok bool
		if key, body, ok = between(body, "<arg_key>", "</arg_key>"); !ok {
			return found{}, false
		}
		if value, body, ok = between(strings.TrimSpace(body), "<arg_value>", "</arg_value>"); !ok || !o.add(key, value) {
			return found{}, false
		}
		body = strings.TrimSpace(body)
	}
	return found{name: name, args: o.close()}, validName(name)
}

// between reads open, then text up to close: what lies between, and what
// follows close.
func between(t, open, close string) (string, string, bool) {
	rest, ok := strings.CutPrefix(t, open)
	if !ok {
		return "", "", false
	}
	return cutTag(rest, close)
}

func cutTag(t, close string) (string, string, bool) {
	k := strings.Index(t, close)
	if k < 0 {
		return "", "", false
	}
	return t[:k], t[k+len(close):], true
}

// validName reports whether a name written before XML-like arguments is
// one word: prose after a tag is not a tool's name.
func validName(name string) bool {
	name = strings.TrimSpace(name)
	return name != "" && !strings.ContainsAny(name, " \t\r\n<>{}")
}

// objectText builds a JSON object from key-value pairs written as text.
type objectText struct {
	b    []byte
	keys map[string]bool
}

// add appends one pair. The value is text: it is JSON when it is valid
// JSON (a number, a boolean, an object), and a string otherwise; one line
// break at either end is the layout of the tags, not the value's. A key
// given twice is refused: which value was meant is a guess.
func (o *objectText) add(key, value string) bool {
	key = strings.TrimSpace(key)
	if key == "" {
		return false
	}
	value = strings.TrimPrefix(strings.TrimPrefix(value, "\r\n"), "\n")
	value = strings.TrimSuffix(strings.TrimSuffix(value, "\n"), "\r")
	if v := strings.TrimSpace(value); v != "" && json.Valid([]byte(v)) {
		return o.addJSON(key, compact([]byte(v)))
	}
	v, _ := encode(value)
	return o.addJSON(key, v)
}

// addJSON appends one pair whose value is JSON text.
func (o *objectText) addJSON(key string, value []byte) bool {
	if o.keys[key] {
		return false
	}
	if o.keys == nil {
		o.keys = map[string]bool{}
	}
	o.keys[key] = true
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	k, _ := encode(key)
	o.b = append(append(o.b, k...), ':')
	o.b = append(o.b, value...)
	return true
}

func (o *objectText) close() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// mistral reads [TOOL_CALLS] and a JSON list of calls, or the newer
// [TOOL_CALLS]name[ARGS]{...} (with an optional [CALL_ID]id before
// [ARGS], or nothing between the name and the object).
func (s *textScan) mistral(i int) (int, bool) {
	t := s.text
	j := skipSpace(t, i+len("[TOOL_CALLS]"))
	if j < len(t) && t[j] == '[' {
		return s.callList(i, j, "mistral")
	}
	k := j
	for k < len(t) && t[k] != '[' && t[k] != '{' && !strings.ContainsRune(spaces, rune(t[k])) {
		k++
	}
	name := t[j:k]
	if rest, ok := strings.CutPrefix(t[k:], "[CALL_ID]"); ok {
		a := strings.Index(rest, "[ARGS]")
		if a < 0 {
			return 0, false
		}
		k += len("[CALL_ID]") + a
	}
	if strings.HasPrefix(t[k:], "[ARGS]") {
		k += len("[ARGS]")
	}
	k = skipSpace(t, k)
	args, end, ok := s.objectAt(k, "[TOOL_CALLS]")
	return end, ok && validName(name) && s.add(i, end, "mistral", found{name: name, args: args})
}

// objectAt reads the JSON object at i: the first complete JSON value
// there, or else the text up to stop (or the end) mended in form.
func (s *textScan) objectAt(i int, stop string) ([]byte, int, bool) {
	t := s.text
	if i >= len(t) || t[i] != '{' {
		return nil, 0, false
	}
	if end, ok := jsonValueEnd(t, i); ok {
		return []byte(t[i:end]), end, true
	}
	end := len(t)
	if k := strings.Index(t[i:], stop); k >= 0 {
		end = i + k
	}
	args, ok := s.readObject(trimEndToken(t[i:end]))
	return args, end, ok
}

// callList reads a JSON list of call objects at j; the span runs from i.
func (s *textScan) callList(i, j int, format string) (int, bool) {
	elems, end, ok := jsonElements(s.text, j)
	if !ok {
		return 0, false
	}
	calls := make([]found, len(elems))
	for k, e := range elems {
		c, ok := s.readEnvelope(s.text[e.start:e.end], format != "json-list")
		if !ok && format != "json-list" {
			c, ok = s.unreadEnvelope(s.text[e.start:e.end])
		}
		if !ok {
			return 0, false
		}
		c.start, c.end = e.start, e.end
		calls[k] = c
	}
	return end, s.add(i, end, format, calls...)
}

// pythonTag reads Llama 3's <|python_tag|> and one or more JSON call
// objects separated by semicolons.
func (s *textScan) pythonTag(i int) (int, bool) {
	t := s.text
	var calls []found
	k := skipSpace(t, i+len("<|python_tag|>"))
	end := k
	for len(calls) <= maxTextCalls {
		e, ok := jsonValueEnd(t, k)
		if !ok || t[k] != '{' {
			return 0, false
		}
		c, ok := s.readEnvelope(t[k:e], false)
		if !ok {
			return 0, false
		}
		c.start, c.end = k, e
		calls = append(calls, c)
		end = e
		n := skipSpace(t, e)
		if n >= len(t) || t[n] != ';' {
			break
		}
		k = skipSpace(t, n+1)
	}
	return end, s.add(i, end, "llama3-json", calls...)
}

// pythonicBlock reads a pythonic call list between two markers.
func (s *textScan) pythonicBlock(i int, open, close string) (int, bool) {
	inner, end := s.block(i+len(open), close)
	start := skipSpace(s.text, i+len(open))
	stop := start + len(strings.TrimSpace(inner))
	calls, ok := readPythonic(s.text, start, stop)
	return end, ok && s.add(i, end, "pythonic", calls...)
}

// pythonicList reads the pythonic call list that is the text from c to
// the end.
func (s *textScan) pythonicList(c int) bool {
	stop := len(strings.TrimRight(s.text, spaces))
	calls, ok := readPythonic(s.text, c, stop)
	return ok && s.add(c, stop, "pythonic", calls...)
}

// deepSeek reads DeepSeek's tool-call tokens: V3 and R1 write
// "function<sep>name" and a fenced JSON object, V3.1 "name<sep>{...}".
func (s *textScan) deepSeek(i int) (int, bool) {
	return s.tokenCalls(i, callTokens{dsCallsBegin, dsCallsEnd, dsCallBegin, dsCallEnd, "deepseek"}, func(body string) (found, bool) {
		pre, post, ok := strings.Cut(body, dsSep)
		if !ok {
			return found{}, false
		}
		name, obj := strings.TrimSpace(pre), strings.TrimSpace(post)
		if name == "function" {
			// V3 and R1: the name on the line after the separator.
			name, obj, _ = strings.Cut(obj, "\n")
			name = strings.TrimSpace(name)
		}
		return s.tokenCall(name, obj)
	})
}

// callTokens are the tokens of a model's calls: an optional section
// around calls that each have their own begin and end tokens.
type callTokens struct {
	sectionBegin, sectionEnd, begin, end string
	format                               string
}

// tokenCalls reads calls written between tokens, from i: in a section or
// not. call reads what one call's tokens hold.
func (s *textScan) tokenCalls(i int, tok callTokens, call func(body string) (found, bool)) (int, bool) {
	t := s.text
	k := i
	outer := strings.HasPrefix(t[k:], tok.sectionBegin)
	if outer {
		k += len(tok.sectionBegin)
	}
	var calls []found
	for len(calls) <= maxTextCalls {
		k = skipSpace(t, k)
		if !strings.HasPrefix(t[k:], tok.begin) {
			break
		}
		body, rest, ok := between(t[k:], tok.begin, tok.end)
		if !ok {
			return 0, false
		}
		c, ok := call(body)
		if !ok {
			return 0, false
		}
		c.start, k = k, len(t)-len(rest)
		c.end = k
		calls = append(calls, c)
	}
	end := k
	if outer {
		switch {
		case strings.HasPrefix(t[k:], tok.sectionEnd):
			end = k + len(tok.sectionEnd)
		case strings.TrimSpace(trimEndToken(t[k:])) != "":
			return 0, false // left open, and not at the end of the text
		}
	}
	return end, s.add(i, end, tok.format, calls...)
}

// tokenCall is the call of the tool name with the arguments written as
// obj (a JSON object, fenced or not); a call whose arguments cannot be
// read is kept as unread.
func (s *textScan) tokenCall(name, obj string) (found, bool) {
	if !validName(name) {
		return found{}, false
	}
	if inner, plain := codeBlock(obj); plain {
		if args, ok := s.readObject(inner); ok {
			return found{name: name, args: args}, true
		}
	}
	return s.unread(name, strings.TrimSpace(obj)), true
}

// codeBlock returns what a code block holds, when t is one (with no info
// string, or "json"), or t.
func codeBlock(t string) (string, bool) {
	t = strings.TrimSpace(t)
	rest, ok := strings.CutPrefix(t, "```")
	if !ok {
		return t, true
	}
	info, body, ok := strings.Cut(rest, "\n")
	if !ok {
		return "", false
	}
	if i := strings.ToLower(strings.TrimSpace(info)); i != "" && i != "json" {
		return "", false
	}
	body, ok = strings.CutSuffix(strings.TrimSpace(body), "```")
	return body, ok
}

// unreadEnvelope is a call object behind an explicit marker that cannot be
// read as a call, but whose name can: a call the model plainly made. It is
// kept as a call that the ladder re-asks, with the object as written, so
// that a list holding it is never converted in part.
func (s *textScan) unreadEnvelope(t string) (found, bool) {
	name := gjson.Get(t, "name")
	if name.Type != gjson.String || !validName(name.Str) {
		return found{}, false
	}
	return s.unread(name.Str, t), true
}

// unread is a call of the tool name whose arguments, written as raw,
// cannot be read.
func (s *textScan) unread(name, raw string) found {
	args, _ := encode(raw)
	return found{name: name, args: args, unread: true}
}

// bareJSON reads a JSON call object, objects separated by semicolons, or
// a list of call objects, that is the whole content from c.
func (s *textScan) bareJSON(c int) bool {
	t := s.text
	stop := len(strings.TrimRight(trimEndToken(t), spaces))
	if t[c] == '[' {
		end, ok := s.callList(c, c, "json-list")
		return ok && end == stop
	}
	if list, ok := xlamList(t[c:stop]); ok {
		// xLAM's {"tool_calls": [...]}: the list is the calls, the object
		// their span.
		end, ok := s.callList(c, c+list, "json-list")
		return ok && skipSpace(t, end) < stop && t[skipSpace(t, end)] == '}' && skipSpace(t, skipSpace(t, end)+1) >= stop &&
			s.extendLast(stop)
	}
	var calls []found
	for k := c; ; {
		e, ok := jsonValueEnd(t, k)
		if !ok {
			if len(calls) > 0 {
				return false
			}
			// One object that is not valid JSON: mended in form, or not at all.
			e = stop
		}
		f, ok := s.readEnvelope(t[k:e], false)
		if !ok || len(calls) >= maxTextCalls {
			return false
		}
		f.start, f.end = k, e
		calls = append(calls, f)
		n := skipSpace(t, e)
		if n >= stop {
			return s.add(c, stop, "llama3-json", calls...)
		}
		if t[n] != ';' {
			return false
		}
		if k = skipSpace(t, n+1); k >= len(t) || t[k] != '{' {
			return false
		}
	}
}

// xlamList returns where the list of t starts when t is xLAM's object
// {"tool_calls": [...]}, whose only member is that list.
func xlamList(t string) (int, bool) {
	r := gjson.Parse(t)
	if !gjson.Valid(t) || !r.IsObject() {
		return 0, false
	}
	n, list := 0, gjson.Result{}
	r.ForEach(func(k, v gjson.Result) bool {
		n++
		if k.Str == "tool_calls" {
			list = v
		}
		return n == 1
	})
	if n != 1 || !list.IsArray() || list.Index <= 0 {
		return 0, false
	}
	return list.Index, true
}

// extendLast makes the last call's span end at end: the object around a
// list of calls is theirs too.
func (s *textScan) extendLast(end int) bool {
	s.calls[len(s.calls)-1].End = end
	return true
}

// fencedJSON reads the one code block of the text when it ends the text,
// holds a call object and is not presented as an example.
func (s *textScan) fencedJSON(from int, f span) bool {
	if !fenceMayCall(s.text, from, f, true) {
		return false
	}
	body, _ := fenceParts(s.text, f, true)
	c, ok := s.readEnvelope(strings.TrimSpace(body), false)
	return ok && s.add(f.start, f.end, "fenced-json", c)
}

// readEnvelope reads a call object: {"name": ..., "arguments": {...}}
// or "parameters" for "arguments", with an optional "id" and "type":
// "function". Any other key makes it something else than a call, and
// arguments that are a JSON string must hold an object.
func (s *textScan) readEnvelope(t string, argsOptional bool) (found, bool) {
	if !gjson.Valid(t) {
		b, ok := s.readObject(t)
		if !ok {
			return found{}, false
		}
		t = string(b)
	}
	r := gjson.Parse(t)
	if !r.IsObject() {
		return found{}, false
	}
	var c found
	var args gjson.Result
	seen := map[string]bool{}
	ok := true
	r.ForEach(func(k, v gjson.Result) bool {
		key := k.Str
		if key == "parameters" {
			key = "arguments"
		}
		if seen[key] {
			ok = false
			return false
		}
		seen[key] = true
		switch key {
		case "name":
			c.name, ok = v.Str, v.Type == gjson.String
		case "arguments":
			args = v
		case "id", "call_id":
			ok = v.Type == gjson.String
		case "type":
			ok = v.Str == "function"
		default:
			ok = false
		}
		return ok
	})
	if !ok || !seen["name"] {
		return found{}, false
	}
	switch {
	case !seen["arguments"]:
		if argsOptional {
			c.args = []byte("{}")
		}
	case args.IsObject():
		c.args = []byte(args.Raw)
	case args.Type == gjson.String:
		c.args, ok = s.readObject(args.Str)
		if !ok && s.marked {
			// A marked call whose arguments are a plain string: plainly a
			// call; the ladder reads the string as it reads any value
			// given for the arguments (a bare value, or a re-ask).
			var err error
			c.args, err = encode(args.Str)
			ok = err == nil
		}
	}
	return c, ok && c.args != nil
}

// readObject reads arguments written as a JSON object: as written when
// valid, or mended in form only (quotes, commas, Python literals, an
// encoded string); never closed when cut off, never cut from prose.
func (s *textScan) readObject(t string) ([]byte, bool) {
	t = strings.TrimSpace(t)
	if t == "" || t[0] != '{' {
		return nil, false
	}
	if json.Valid([]byte(t)) {
		return []byte(t), true
	}
	if len(t) > MaxInput {
		return nil, false
	}
	c := cut{quota: s.quota}
	v, edits, err := mend([]byte(t), &c)
	if err != nil || len(c.open) > 0 {
		return nil, false
	}
	for _, e := range edits {
		if e.Kind != KindJSONRepair && e.Kind != KindDoubleEncoded {
			return nil, false
		}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, false
	}
	out, err := encode(v)
	return out, err == nil
}

// jsonValueEnd returns the end of the complete JSON value that starts at i.
func jsonValueEnd(t string, i int) (int, bool) {
	if i >= len(t) {
		return 0, false
	}
	d := json.NewDecoder(strings.NewReader(t[i:]))
	var raw json.RawMessage
	if d.Decode(&raw) != nil {
		return 0, false
	}
	return i + int(d.InputOffset()), true
}

// jsonElements returns the spans of the elements of the JSON list at i,
// and the end of the list.
func jsonElements(t string, i int) ([]span, int, bool) {
	d := json.NewDecoder(strings.NewReader(t[i:]))
	if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
		return nil, 0, false
	}
	var elems []span
	for d.More() {
		var raw json.RawMessage
		if d.Decode(&raw) != nil || len(elems) >= maxTextCalls {
			return nil, 0, false
		}
		e := i + int(d.InputOffset())
		elems = append(elems, span{e - len(raw), e})
	}
	if tok, err := d.Token(); err != nil || tok != json.Delim(']') {
		return nil, 0, false
	}
	return elems, i + int(d.InputOffset()), true
}
