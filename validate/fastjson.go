package validate

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The fast path on the arguments' bytes: the same checks as fastSchema.valid
// (fast.go), read in place with gjson instead of on a decoded value, so a
// valid call of a flat schema is checked without building maps or strings.
// It answers "valid" only where decoding the bytes (Decode) and running the
// fast path on the value would: wherever the two readings could differ, it
// gives up and the caller decodes. It gives up on
//
//   - bytes that are not one valid JSON value, or nested deeper than the
//     decoder allows;
//   - an object with a member name that holds an escape, a name twice (the
//     decoder keeps the last), or more than maxRawMembers members;
//   - a string it must compare or measure that holds an escaped surrogate
//     or bytes that are not UTF-8 (the decoder replaces what does not
//     decode).
//
// It counts the steps the budget walk would count, as the fast path does.

// maxRawMembers bounds the members of an object read in place: names are
// compared with each other to find a repeated one.
const maxRawMembers = 64

// maxDecodeDepth is encoding/json's nesting limit: deeper, Decode fails.
const maxDecodeDepth = 10000

// ValidJSON reports whether the fast path proves the arguments data valid
// without decoding them, charging b (if not nil) what it spent. false means
// not proven, not invalid: ValidateJSONWithin must then decode and check
// them, and says what is wrong.
func (s *Schema) ValidJSON(data []byte, b *Budget) bool {
	if s.fast == nil || !rawReadable(data) {
		return false
	}
	max := MaxSteps
	if b != nil {
		max = min(max, b.left)
	}
	text := unsafe.String(unsafe.SliceData(data), len(data))
	v := gjson.Parse(text)
	if !v.IsObject() {
		return false
	}
	r := fastRun{max: max * FastVisitsPerStep}
	ok := s.fast.validRaw(v, &r)
	if b != nil {
		b.left -= min(fastSteps(min(r.steps, r.max)), b.left)
	}
	return ok
}

// rawReadable reports whether data is one JSON value that Decode would
// accept: valid, and nested no deeper than its limit.
func rawReadable(data []byte) bool {
	return !nestedDeeper(data, maxDecodeDepth) && gjson.ValidBytes(data)
}

func (f *fastSchema) validRaw(v gjson.Result, r *fastRun) bool {
	r.steps += 1 + f.compare
	switch {
	case r.steps > r.max || f.never:
		return false
	case f.always:
		return rawNumbersOK(v.Raw)
	case f.hasConst && !rawScalarEqual(v, f.constant):
		return false
	case f.hasEnum && !f.inEnumRaw(v):
		return false
	}
	switch v.Type {
	case gjson.Null:
		return f.allows(typeNull)
	case gjson.True, gjson.False:
		return f.allows(typeBoolean)
	case gjson.String:
		if !f.allows(typeString) {
			return false
		}
		if f.minLength >= 0 || f.maxLength >= 0 {
			str, ok := rawString(v)
			if !ok {
				return false
			}
			n := utf8.RuneCountInString(str)
			return (f.minLength < 0 || n >= f.minLength) && (f.maxLength < 0 || n <= f.maxLength)
		}
		return true
	case gjson.Number:
		return f.number(json.Number(v.Raw))
	}
	switch {
	case v.IsArray():
		return f.arrayRaw(v, r)
	case v.IsObject():
		return f.objectRaw(v, r)
	}
	return false
}

func (f *fastSchema) arrayRaw(v gjson.Result, r *fastRun) bool {
	if !f.allows(typeArray) {
		return false
	}
	n, ok := 0, true
	v.ForEach(func(_, item gjson.Result) bool {
		n++
		if f.items == nil {
			ok = rawNumbersOK(item.Raw)
		} else {
			ok = f.items.validRaw(item, r)
		}
		return ok
	})
	return ok && (f.minItems < 0 || n >= f.minItems) && (f.maxItems < 0 || n <= f.maxItems)
}

func (f *fastSchema) objectRaw(v gjson.Result, r *fastRun) bool {
	if !f.allows(typeObject) {
		return false
	}
	var names [maxRawMembers]string
	n, ok := 0, true
	v.ForEach(func(key, val gjson.Result) bool {
		if n == maxRawMembers || strings.IndexByte(key.Raw, '\\') >= 0 {
			ok = false
			return false
		}
		name := key.Str
		for _, seen := range names[:n] {
			if seen == name {
				ok = false // the decoder keeps the last: decode
				return false
			}
		}
		names[n] = name
		n++
		sub, declared := f.props[name]
		if !declared {
			sub = f.additional
		}
		if sub == nil {
			ok = rawNumbersOK(val.Raw)
		} else {
			ok = sub.validRaw(val, r)
		}
		return ok
	})
	if !ok || (f.minProps >= 0 && n < f.minProps) || (f.maxProps >= 0 && n > f.maxProps) {
		return false
	}
	for _, req := range f.required {
		found := false
		for _, name := range names[:n] {
			if name == req {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// rawString is the string v holds as Decode would read it, or false where
// the two readings could differ: an escaped surrogate (Decode replaces one
// that is not half of a pair), bytes that are not UTF-8.
func rawString(v gjson.Result) (string, bool) {
	if escapedSurrogate(v.Raw) || !utf8.ValidString(v.Str) {
		return "", false
	}
	return v.Str, true
}

// escapedSurrogate reports whether raw holds \u followed by a code in the
// surrogate range, D800 to DFFF.
func escapedSurrogate(raw string) bool {
	for {
		i := strings.Index(raw, `\u`)
		if i < 0 || i+6 > len(raw) {
			return false
		}
		if c := raw[i+2] | 0x20; c == 'd' && strings.IndexByte("89abcdefABCDEF", raw[i+3]) >= 0 {
			return true
		}
		raw = raw[i+2:]
	}
}

func (f *fastSchema) inEnumRaw(v gjson.Result) bool {
	for _, e := range f.enum {
		if rawScalarEqual(v, e) {
			return true
		}
	}
	return false
}

// rawScalarEqual is scalarEqual with v read in place: false for objects
// and arrays, and for a string that could read otherwise decoded.
func rawScalarEqual(v gjson.Result, e any) bool {
	switch v.Type {
	case gjson.Null:
		return e == nil
	case gjson.True, gjson.False:
		b, ok := e.(bool)
		return ok && b == (v.Type == gjson.True)
	case gjson.String:
		es, ok := e.(string)
		if !ok {
			return false
		}
		str, ok := rawString(v)
		return ok && str == es
	case gjson.Number:
		return scalarEqual(json.Number(v.Raw), e)
	}
	return false
}

// rawNumbersOK is numbersOK on the text of a valid JSON value: every number
// in it is one the validator takes. It scans the text once, without
// recursion.
func rawNumbersOK(raw string) bool {
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(raw) && strings.IndexByte("0123456789+-.eE", raw[j]) >= 0 {
				j++
			}
			if badNumber(raw[i:j]) != "" {
				return false
			}
			i = j - 1
		}
	}
	return true
}
