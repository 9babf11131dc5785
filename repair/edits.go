package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/toolguard/toolguard/validate"
)

// Kind names one kind of edit. The names are stable: they are metric labels
// and log fields.
type Kind string

// The kinds of edit.
const (
	// Syntax (ladder step 2): the form of the JSON text, never its content.
	KindObjectArguments     Kind = "object-arguments"     // arguments sent as a JSON object, not a string
	KindEmptyArguments      Kind = "empty-arguments"      // "" (or null) where the schema accepts {}
	KindStripFence          Kind = "strip-fence"          // markdown code fence around the JSON
	KindStripTokens         Kind = "strip-tokens"         // special tokens such as <|call|> around the JSON
	KindStripProse          Kind = "strip-prose"          // prose before or after the JSON
	KindJSONRepair          Kind = "json-repair"          // quotes, commas, comments, literals, truncation
	KindDoubleEncoded       Kind = "double-encoded"       // a JSON string holding the JSON text
	KindConcatenatedObjects Kind = "concatenated-objects" // the same object sent more than once in a row

	// Schema-guided (ladder step 3): the shape the schema asks for.
	KindCoerceType     Kind = "coerce-type"     // "5" -> 5, 5 -> "5", "true" -> true, "[1]" -> [1]
	KindWrapValue      Kind = "wrap-value"      // a bare value put into the one property it can belong to
	KindRenameKey      Kind = "rename-key"      // a key renamed to the declared property it plainly means
	KindEnumCase       Kind = "enum-case"       // an enum value in the wrong case
	KindWrapArray      Kind = "wrap-array"      // a single value where an array is declared
	KindDropProperty   Kind = "drop-property"   // an undeclared property where none is allowed
	KindUnwrapEnvelope Kind = "unwrap-envelope" // {"arguments": {...}} and the like around the arguments

	// KindToolName is for a tool name mapped to the declared tool it plainly
	// means (see ToolName). Callers record these edits themselves.
	KindToolName Kind = "tool-name"
	// KindTextCall is for a call that the model wrote as text in the
	// message's content and that was made a tool call (see TextCalls).
	// Callers record these edits themselves.
	KindTextCall Kind = "text-call"
)

// Kinds lists every kind of edit, for callers that register metric labels
// up front.
func Kinds() []Kind {
	return []Kind{
		KindObjectArguments, KindEmptyArguments, KindStripFence, KindStripTokens,
		KindStripProse, KindJSONRepair, KindDoubleEncoded, KindConcatenatedObjects,
		KindCoerceType, KindWrapValue, KindRenameKey, KindEnumCase, KindWrapArray,
		KindDropProperty, KindUnwrapEnvelope, KindToolName, KindTextCall,
	}
}

// Edit is one change made to a call.
type Edit struct {
	Kind Kind `json:"kind"`
	// Path is the JSON pointer, inside the arguments, of the value changed;
	// "" is the arguments themselves.
	Path string `json:"path"`
	// Before and After are short JSON renderings of the value before and
	// after the edit (at most about 200 bytes each).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

const maxClip = 200

// clip bounds what an edit records of a value, cutting on a rune boundary so
// that log lines stay valid UTF-8.
func clip(b []byte) string {
	if len(b) <= maxClip {
		return string(b)
	}
	n := maxClip
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "..."
}

// render is clip for a decoded value.
func render(v any) string {
	b, err := encode(v)
	if err != nil {
		return ""
	}
	return clip(b)
}

// encode writes v as compact JSON without HTML escaping: arguments go to
// tool code, not to a browser, and "<" must stay "<". It writes what
// encoding/json's Encoder (SetEscapeHTML(false)) writes, byte for byte:
// decoded JSON (maps with their keys sorted, slices, strings, json.Number,
// bools, nil) without reflection, anything else through encoding/json.
func encode(v any) ([]byte, error) { return encodeSized(v, 0) }

// encodeSized is encode into a buffer made for size bytes (64 at least):
// for a value decoded from a text of that size, the one allocation it
// needs, where growing from a small buffer would allocate about three
// times the text's size for a large value.
func encodeSized(v any, size int) ([]byte, error) {
	return appendJSON(make([]byte, 0, max(size, 64)), v)
}

// appendJSON appends v to b as encode writes it.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendString(b, v)
	case json.Number:
		if v == "" {
			v = "0"
		}
		if !validate.ValidNumber(string(v)) {
			return nil, fmt.Errorf("json: invalid number literal %q", string(v))
		}
		return append(b, v...), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		var room [16]string
		keys := room[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJSON(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return appendEncoded(b, v)
}

// appendString appends s as a JSON string, as encoding/json writes it:
// jsontext writes the same for valid UTF-8 (it refuses any other) without
// U+2028 and U+2029, which encoding/json escapes (as it replaces invalid
// UTF-8).
func appendString(b []byte, s string) ([]byte, error) {
	if plainASCII(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), nil
	}
	if !strings.ContainsAny(s, "\u2028\u2029") {
		if out, err := jsontext.AppendQuote(b, s); err == nil {
			return out, nil
		}
	}
	return appendEncoded(b, s)
}

// appendEncoded appends v as encoding/json writes it.
func appendEncoded(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
