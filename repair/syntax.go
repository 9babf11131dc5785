package repair

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"unicode/utf8"

	"github.com/kaptinlin/jsonrepair"
	"github.com/toolguard/toolguard/validate"
)

const (
	// maxPasses bounds the syntax step: each pass removes one layer (a
	// fence, tokens, prose, an encoding) and a model does not nest many.
	maxPasses = 8
	// maxNesting bounds the depth of brackets handed to the JSON repairer,
	// which recurses once per level and copies what it has written as it
	// closes each: 400 levels allocated 10 bytes for each byte squared.
	// Arguments nest a few levels deep; repairWork charges each level.
	maxNesting = 64
)

var (
	// errAmbiguous is the cause when mending would have to choose between
	// readings of the text.
	errAmbiguous = errors.New("ambiguous")

	// edgeToken matches one special token or tag at the start or the end of
	// the text: chat-template tokens (<|call|>, <|python_tag|>, DeepSeek's
	// full-width <｜tool▁call▁begin｜>), tool-call tags (<tool_call>,
	// </function>, <function=name>) and Mistral's [TOOL_CALLS]. Tokens are
	// only ever stripped at the edges: inside the JSON they may be data.
	edgeToken    = regexp.MustCompile(`^(?:<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>|</?[A-Za-z_][\w.-]{0,40}(?:=[^<>\s]{1,80})?>|\[/?(?:TOOL_CALLS|TOOL_RESULTS|ARGS|CALL_ID)\])`)
	edgeTokenEnd = regexp.MustCompile(`(?:<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>|</?[A-Za-z_][\w.-]{0,40}(?:=[^<>\s]{1,80})?>|\[/?(?:TOOL_CALLS|TOOL_RESULTS|ARGS|CALL_ID)\])$`)

	// fence matches a markdown code block; the closing fence may be missing
	// when the output was cut off.
	fence = regexp.MustCompile("(?s)```[\\w+-]*[ \\t]*\\r?\\n?(.*?)(?:```|$)")

	// bareText is unquoted text that can only be one string value: no
	// space, no JSON punctuation (myCoolButton, https://x.test/a?b=c). Its
	// length is bounded apart (bareToken): a counted repetition compiles
	// to a program of each of its steps, 119 KB held for the process's life.
	bareText = regexp.MustCompile(`^[^\s{}\[\]"',]+$`)
)

// maxBareToken is how many characters an unquoted value may have.
const maxBareToken = 200

// bareToken reports whether t is one unquoted string value (bareText) of
// at most maxBareToken characters. A character is at most 4 bytes: longer
// text is not counted.
func bareToken(t []byte) bool {
	return len(t) <= utf8.UTFMax*maxBareToken && utf8.RuneCount(t) <= maxBareToken && bareText.Match(t)
}

// mend is the syntax step: it peels what surrounds the JSON and repairs
// the JSON itself, one layer per pass, and returns the decoded value (not
// necessarily an object: a bare value is the schema-guided step's to
// place). nil with no error means there were no arguments at all.
//
// When the JSON was cut off and the repairer closed what was open, c
// records what it closed: whether that was a guess depends on the schema
// (see closable).
func mend(text []byte, c *cut) (any, []Edit, error) {
	var edits []Edit
	t := bytes.TrimSpace(text)
	for range maxPasses {
		if len(t) == 0 {
			return nil, edits, nil
		}
		if json.Valid(t) {
			v, err := validate.Decode(t)
			if err != nil {
				return nil, nil, err
			}
			str, isString := v.(string)
			if !isString || !encoded(str) {
				return v, edits, nil
			}
			inner := bytes.TrimSpace([]byte(str))
			edits = append(edits, Edit{Kind: KindDoubleEncoded, Before: clip(t), After: clip(inner)})
			t = inner
			continue
		}
		next, e, err := peel(t, c)
		if err != nil {
			return nil, nil, err
		}
		edits = append(edits, e)
		t = bytes.TrimSpace(next)
	}
	return nil, nil, errors.New("arguments are wrapped in too many layers")
}

// encoded reports whether a string decoded from the arguments is itself the
// arguments text rather than a bare string value: it then holds JSON (an
// object, an array or another encoded string) or a fence around it.
func encoded(s string) bool {
	b := bytes.TrimSpace([]byte(s))
	return len(b) > 0 && (b[0] == '{' || b[0] == '[' || b[0] == '"' || bytes.HasPrefix(b, []byte("```")))
}

// peel removes one layer around or inside invalid JSON text t.
func peel(t []byte, c *cut) ([]byte, Edit, error) {
	if out, ok := stripTokens(t); ok {
		return out, Edit{Kind: KindStripTokens, Before: clip(t), After: clip(out)}, nil
	}
	if bytes.Contains(t, []byte("```")) {
		out, err := unfence(t)
		if err != nil {
			return nil, Edit{}, err
		}
		return out, Edit{Kind: KindStripFence, Before: clip(t), After: clip(out)}, nil
	}
	switch t[0] {
	case '{', '[':
		if out, kind, ok, err := splitValues(t); err != nil {
			return nil, Edit{}, err
		} else if ok {
			return out, Edit{Kind: kind, Before: clip(t), After: clip(out)}, nil
		}
		if out, ok := trailingProse(t); ok {
			return out, Edit{Kind: KindStripProse, Before: clip(t), After: clip(out)}, nil
		}
	case '"', '\'':
	default:
		if i := bytes.IndexByte(t, '{'); i > 0 {
			// Prose before the object ("Here are the arguments: {...").
			return t[i:], Edit{Kind: KindStripProse, Before: clip(t), After: clip(t[i:])}, nil
		}
		if !bareToken(t) {
			return nil, Edit{}, errors.New("arguments are not JSON")
		}
		if !pythonLiteral(t) {
			// One unquoted value: quoting it is the whole repair.
			out, err := encode(string(t))
			if err != nil {
				return nil, Edit{}, err
			}
			return out, Edit{Kind: KindJSONRepair, Before: clip(t), After: clip(out)}, nil
		}
	}
	var q *Quota
	if c != nil {
		q = c.quota
	}
	out, open, err := repairJSON(t, q)
	if err != nil {
		return nil, Edit{}, err
	}
	if len(open) > 0 && c != nil {
		c.open = open
	}
	return out, Edit{Kind: KindJSONRepair, Before: clip(t), After: clip(out)}, nil
}

// maxTokenBytes is longer than any text edgeToken or edgeTokenEnd matches
// (80 characters of a tag's value, 40 of its name, four bytes a character).
const maxTokenBytes = 512

// stripTokens removes special tokens at both edges. edgeTokenEnd is matched
// against the last maxTokenBytes only: matched against the whole text, each
// token cost a pass over it, and thousands of tokens took seconds.
func stripTokens(t []byte) ([]byte, bool) {
	out := t
	for {
		n := len(out)
		if loc := edgeToken.FindIndex(out); loc != nil {
			out = bytes.TrimSpace(out[loc[1]:])
		}
		from := max(0, len(out)-maxTokenBytes)
		if loc := edgeTokenEnd.FindIndex(out[from:]); loc != nil {
			out = bytes.TrimSpace(out[:from+loc[0]])
		}
		if len(out) == n {
			return out, len(out) != len(t)
		}
	}
}

// unfence returns the content of the one code block in t. Several blocks
// with different contents are several answers: which one the model meant is
// a guess.
func unfence(t []byte) ([]byte, error) {
	blocks := fence.FindAllSubmatch(t, -1)
	var out []byte
	for i, b := range blocks {
		c := bytes.TrimSpace(b[1])
		if len(c) == 0 {
			continue
		}
		if i > 0 && out != nil && !bytes.Equal(out, c) {
			return nil, fmt.Errorf("arguments hold %d different code blocks: %w", len(blocks), errAmbiguous)
		}
		out = c
	}
	if out == nil {
		return nil, errors.New("arguments hold an empty code block")
	}
	return out, nil
}

// splitValues handles text that starts with a complete JSON value followed
// by more text. Prose after the value is dropped. Further JSON values are
// concatenated objects: when they are all equal to the first (a model that
// repeated itself) one is kept; when they differ, which one was meant is a
// guess, and merging them would be an invention, so the call is left for a
// re-ask. ok is false when the first value is itself incomplete.
func splitValues(t []byte) ([]byte, Kind, bool, error) {
	d := json.NewDecoder(bytes.NewReader(t))
	d.UseNumber()
	var first json.RawMessage
	if err := d.Decode(&first); err != nil {
		return nil, "", false, nil
	}
	firstEnd := d.InputOffset()
	rest := bytes.TrimSpace(t[firstEnd:])
	if len(rest) > 0 && rest[0] != '{' && rest[0] != '[' {
		if bytes.ContainsAny(rest, "{[") {
			return nil, "", false, fmt.Errorf("arguments are followed by text holding more JSON: %w", errAmbiguous)
		}
		return t[:firstEnd], KindStripProse, true, nil
	}
	want, err := validate.Decode(first)
	if err != nil {
		return nil, "", false, err
	}
	// next is reused, and a value written as the first was is not decoded:
	// a text of many short values costs a few bytes a byte.
	var next json.RawMessage
	for {
		err := d.Decode(&next)
		if err == io.EOF {
			return t[:firstEnd], KindConcatenatedObjects, true, nil
		}
		if err != nil {
			return nil, "", false, fmt.Errorf("arguments are several JSON values, not all complete: %w", errAmbiguous)
		}
		if bytes.Equal(next, first) {
			continue
		}
		got, err := validate.Decode(next)
		if err != nil || !reflect.DeepEqual(got, want) {
			return nil, "", false, fmt.Errorf("arguments are several different JSON values: %w", errAmbiguous)
		}
	}
}

// trailingProse cuts prose after an incomplete object or array: what
// follows its last closing bracket when that is plain words. A bracket
// inside a string that was cut off may be taken for the last one; the
// truncation check then refuses the rest.
func trailingProse(t []byte) ([]byte, bool) {
	closing := byte('}')
	if t[0] == '[' {
		closing = ']'
	}
	k := bytes.LastIndexByte(t, closing)
	if k <= 0 || k == len(t)-1 {
		return nil, false
	}
	tail := bytes.TrimSpace(t[k+1:])
	if len(tail) == 0 || bytes.ContainsAny(tail, "\"'{}[]") {
		return nil, false
	}
	return t[:k+1], true
}

// repairJSON runs the JSON repairer on t when that cannot change meaning,
// and checks that it kept the kind of value t starts with. The repairer's
// work is drawn from q (see Quota).
func repairJSON(t []byte, q *Quota) ([]byte, []byte, error) {
	// The strings are kept for the check after a repair, which only a
	// text within maxRepairBytes reaches (q.take refuses a longer one): a
	// longer text's would cost a slice of them, grown, for nothing.
	quoted, open, err := scan(t, len(t) <= maxRepairBytes)
	if err != nil {
		return nil, nil, err
	}
	if fixed, ok := escapeControls(t); ok && json.Valid(fixed) {
		// Raw control characters in strings were the only fault (code
		// written with its line breaks, say): escaping them is the whole
		// repair, in linear time however many quotes the text has.
		return compact(fixed), nil, nil
	}
	if err := q.take(t); err != nil {
		return nil, nil, err
	}
	out, err := safeRepair(string(t))
	if err != nil {
		return nil, nil, fmt.Errorf("arguments are not JSON and cannot be repaired: %w", err)
	}
	b := []byte(out)
	if !json.Valid(b) {
		return nil, nil, errors.New("arguments cannot be repaired into JSON")
	}
	b = compact(b)
	switch t[0] {
	case '{':
		if b[0] != '{' {
			return nil, nil, errors.New("arguments cannot be repaired into an object")
		}
	case '[':
		if b[0] != '[' {
			return nil, nil, errors.New("arguments cannot be repaired into an array")
		}
	case '"', '\'':
		if b[0] != '"' {
			return nil, nil, errors.New("arguments cannot be repaired into a string")
		}
	}
	if err := keptStrings(quoted, b); err != nil {
		return nil, nil, err
	}
	return b, open, nil
}

// escapeControls escapes the raw control characters inside the
// double-quoted strings of t, which JSON does not allow there. ok is false
// when there are none.
func escapeControls(t []byte) (out []byte, ok bool) {
	in := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case in && c == '\\':
			if out != nil {
				out = append(out, c)
				if i+1 < len(t) {
					out = append(out, t[i+1])
				}
			}
			i++
			continue
		case c == '"':
			in = !in
		case in && c < 0x20:
			if out == nil {
				out = append(make([]byte, 0, len(t)+16), t[:i]...)
			}
			switch c {
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	return out, out != nil
}

const hex = "0123456789abcdef"

// keptStrings checks that each string that was already valid JSON in the
// text is a key or a value of the repaired JSON: the repairer's heuristics
// for quotes (around backslashes, say) must not rewrite data.
func keptStrings(quoted [][]byte, repaired []byte) error {
	if len(quoted) == 0 {
		return nil
	}
	v, err := validate.Decode(repaired)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	collectStrings(v, have)
	for _, q := range quoted {
		var s string
		if json.Unmarshal(q, &s) != nil {
			continue // not valid as it was: the repair had to change it
		}
		if !have[s] {
			return fmt.Errorf("repairing the JSON would change the string %s", clip(q))
		}
	}
	return nil
}

func collectStrings(v any, into map[string]bool) {
	switch v := v.(type) {
	case string:
		into[v] = true
	case map[string]any:
		for k, e := range v {
			into[k] = true
			collectStrings(e, into)
		}
	case []any:
		for _, e := range v {
			collectStrings(e, into)
		}
	}
}

func pythonLiteral(t []byte) bool {
	switch string(t) {
	case "True", "False", "None":
		return true
	}
	return false
}

// safeRepair shields the caller from a panic in the repairer: the text comes
// from a model and a crafted input must cost that call its repair, not the
// process.
func safeRepair(s string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("repairer panic: %v", r)
		}
	}()
	return jsonrepair.Repair(s)
}
