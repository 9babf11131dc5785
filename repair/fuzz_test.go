package repair

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolguard/toolguard/validate"
)

// fuzzSchemas are the schemas a fuzz input picks from by its first byte.
var fuzzSchemas = []string{clickSchema, searchSchema, twoSchema, openSchema, `{"type":"object"}`}

func schemaIndex(schema string) byte {
	for i, s := range fuzzSchemas {
		if s == schema {
			return byte(i)
		}
	}
	return 0
}

// FuzzArguments checks the promises of Arguments on any input: no panic; a
// result is either valid (an object that validates) or carries errors; and
// mending a mended call changes nothing.
func FuzzArguments(f *testing.F) {
	for _, tt := range argumentsCases {
		f.Add(schemaIndex(tt.schema), []byte(tt.give))
	}
	for _, tt := range syntaxCases {
		f.Add(byte(1), []byte(tt.give))
	}
	schemas := make([]*validate.Schema, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		schemas[i] = compile(f, s)
	}
	f.Fuzz(func(t *testing.T, which byte, raw []byte) {
		s := schemas[int(which)%len(schemas)]
		got := Arguments(raw, s, mendAll)
		if !got.Valid() {
			return
		}
		if _, errs := s.ValidateJSON(got.Args); errs != nil {
			t.Fatalf("Arguments(%q) = %s with no error, but it does not validate: %v", raw, got.Args, errs)
		}
		// Quoting replaces invalid UTF-8, so the bytes may differ; what
		// matters is that nothing more is mended.
		again := Arguments(quoteJSON(t, string(got.Args)), s, mendAll)
		if !again.Valid() || len(again.Edits) > 0 {
			t.Fatalf("mending %s again: %s, edits %v, errors %v", got.Args, again.Args, again.Edits, again.Errors)
		}
	})
}

// FuzzSyntax checks that Syntax never panics, returns an object text when
// it succeeds, and leaves its own output alone. What it mended must also pass
// the validator (numbers within a float64's range among its rules); an
// object text it returns as received need only be one, as Syntax promises
// (history is passed as the client wrote it: `{"a":1e700}` is JSON).
func FuzzSyntax(f *testing.F) {
	for _, tt := range syntaxCases {
		f.Add([]byte(tt.give))
	}
	for _, tt := range argumentsCases {
		f.Add([]byte(tt.give))
	}
	// Raw control characters in strings, the only fault, and beside others.
	f.Add([]byte(`"{\"a\":\"x\ny\tz\u0001\\\\\"}"`))
	f.Add([]byte(`"{\"a\":\"x\ny\", 'b': 1,}"`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, edits, err := Syntax(raw)
		if err != nil {
			return
		}
		if !json.Valid(got) || !gjson.ParseBytes(got).IsObject() {
			t.Fatalf("Syntax(%q) = %s, not an object text", raw, got)
		}
		if len(edits) > 0 {
			if errs := checkValue(mustDecode(t, got), nil, nil); errs != nil {
				t.Fatalf("Syntax(%q) mended to %s, which does not validate as an object: %v", raw, got, errs)
			}
		}
		again, edits, err := Syntax(quoteJSON(t, string(got)))
		if err != nil || len(edits) > 0 {
			t.Fatalf("Syntax on its own output %s: %s, edits %v, error %v", got, again, edits, err)
		}
	})
}

func mustDecode(t testing.TB, b []byte) any {
	v, err := validate.Decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// FuzzTextCalls checks the promises of TextCalls and TextCallHold on any
// text: no panic; either no call or calls that name declared tools, with
// ordered spans in range and JSON arguments; a hold offset in range.
func FuzzTextCalls(f *testing.F) {
	for _, tt := range textCallCases {
		f.Add(tt.give, byte(7))
	}
	f.Fuzz(func(t *testing.T, text string, formats byte) {
		tf := TextFormats{Marked: formats&1 != 0, BareJSON: formats&2 != 0, ReAct: formats&4 != 0}
		calls := TextCalls(text, textTools, tf)
		checkTextCalls(t, text, textTools, calls)
		if h := TextCallHold(text, textTools, tf); h < 0 || h > len(text) {
			t.Fatalf("TextCallHold(%q) = %d, out of range", text, h)
		}
		if calls != nil {
			TextContent(text, calls)
		}
	})
}
