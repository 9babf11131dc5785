package repair

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
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
// tool code, not to a browser, and "<" must stay "<".
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
