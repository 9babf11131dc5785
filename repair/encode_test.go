package repair

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/bfcl"
	"github.com/toolguard/toolguard/validate"
)

// encodingJSON is what encode must write: encoding/json's Encoder without
// HTML escaping, its newline taken off.
func encodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sameAsEncodingJSON fails t unless encode writes v as encoding/json does,
// or fails where it fails.
func sameAsEncodingJSON(t *testing.T, v any) {
	t.Helper()
	got, gerr := encode(v)
	want, werr := encodingJSON(v)
	if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("encode(%#v) = %q, %v; encoding/json writes %q, %v", v, got, gerr, want, werr)
	}
}

func TestEncodeWritesWhatEncodingJSONWrites(t *testing.T) {
	var strs []string
	for c := range 256 {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	strs = append(strs, "", "plain", `say "hi"`, `back\slash`, "<a href='x'>&amp;</a>", "line\u2028sep\u2029par",
		"tab\there", "nul\x00", "del\x7f", "caf\u00e9", "\U0001F600 grin", "\ufffd", "bad \xff\xfe utf-8", "\xed\xa0\x80",
		"cut \xe2\x82", strings.Repeat("long ", 100))
	for _, s := range strs {
		sameAsEncodingJSON(t, s)
		sameAsEncodingJSON(t, map[string]any{s: s})
	}
	values := []any{
		nil, true, false,
		json.Number("0"), json.Number("-1.5e-3"), json.Number("12345678901234567890"), json.Number(""),
		json.Number("1x"), json.Number(" 1"), json.Number("1 "), json.Number("01"), json.Number("-"), json.Number("1."),
		json.Number("true"), json.Number("\"1\""), json.Number("1e"), json.Number("+1"),
		map[string]any{}, []any{}, map[string]any(nil), []any(nil),
		map[string]any{"b": 1.5, "a": []any{"x", json.Number("2"), nil, map[string]any{"z": true, "y": false}}, "é": "e", "E": "E", "": 0},
		map[string]any{"n": json.Number("1x")},
		[]any{float64(1e21), float64(0.000001), int(3), int64(-4), uint8(5), []string{"s"}, map[string]int{"b": 2, "a": 1}},
		float64(3), 1e-7, []byte("bytes"), struct{ A int }{1},
	}
	many := map[string]any{}
	for i := range 40 { // more keys than the room on the stack
		many[string(rune('z'-i%26))+strings.Repeat("k", i)] = i
	}
	values = append(values, many)
	for _, v := range values {
		sameAsEncodingJSON(t, v)
	}
}

// TestEncodeCorpus: every ground truth's arguments of the BFCL corpus, as
// the validator decodes them and as the corpus holds them.
func TestEncodeCorpus(t *testing.T) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		for _, call := range c.GroundTruth {
			sameAsEncodingJSON(t, call.Arguments())
			text, err := encodingJSON(call.Arguments())
			if err != nil {
				t.Fatal(err)
			}
			v, err := validate.Decode(text)
			if err != nil {
				t.Fatal(err)
			}
			sameAsEncodingJSON(t, v)
			n++
		}
	}
	if n < 1000 {
		t.Fatalf("only %d ground truths", n)
	}
}

// FuzzEncode: any JSON text, decoded as the validator decodes it, any
// string, and any json.Number, valid or not, are written as encoding/json
// writes them (or refused where it refuses them).
func FuzzEncode(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x\u2028"]}`, `"\ud800"`, "\"\xff\"", `{"é":{"":-0.5e+3}}`, `[]`} {
		f.Add([]byte(s))
	}
	for _, tt := range argumentsCases {
		f.Add([]byte(tt.give))
	}
	for _, n := range []string{"-0.5e+3", "01", "1.e5", "-", "1E-0"} {
		f.Add([]byte(n))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameAsEncodingJSON(t, string(raw))
		sameAsEncodingJSON(t, json.Number(raw))
		if v, err := validate.Decode(raw); err == nil {
			sameAsEncodingJSON(t, v)
		}
	})
}

// BenchmarkEncode writes decoded arguments with encodeSized and with
// encoding/json: a repaired call's one member, objects of small objects of
// about 8 and 16 KB, and arrays of numbers of 1 and 2 MB, whose cost must
// double with their size.
func BenchmarkEncode(b *testing.B) {
	objects := func(n int) any {
		m := map[string]any{}
		for i := range n {
			m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = map[string]any{
				"name": "item", "count": json.Number("12"), "ok": true, "tags": []any{"a", "b"}}
		}
		return m
	}
	numbers := func(n int) any { // as the hostile suite's fenced arrays decode
		a := make([]any, n)
		for i := range a {
			a[i] = json.Number("1")
		}
		return map[string]any{"a": a}
	}
	for _, c := range []struct {
		name string
		v    any
	}{
		{"one-member", map[string]any{"selector": "#login-button"}},
		{"8KB", objects(128)},
		{"16KB", objects(256)},
		{"1MB-numbers", numbers(1 << 19)},
		{"2MB-numbers", numbers(1 << 20)},
	} {
		// As the mended arguments are written: into a buffer of the size
		// of the text they were decoded from.
		text, err := encodingJSON(c.v)
		if err != nil {
			b.Fatal(err)
		}
		sized := func(v any) ([]byte, error) { return encodeSized(v, len(text)) }
		for _, enc := range []struct {
			name string
			f    func(any) ([]byte, error)
		}{{"encode", sized}, {"encoding-json", encodingJSON}} {
			b.Run(c.name+"/"+enc.name, func(b *testing.B) {
				out, _ := enc.f(c.v)
				b.SetBytes(int64(len(out)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := enc.f(c.v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
