package validate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decodeCases are documents where a reading in place could part from
// encoding/json's: each valid one must decode to the same value, and each
// invalid one be left to encoding/json.
var decodeCases = []string{
	`{"a":"x"}`, `{}`, `[]`, `{"a":[]}`, `{"a":{}}`, `[[],{}]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-300`,
	`1e400`, `123456789012345678901234567890`, `"x"`, ` {"a" : 1 } `, "\t[1,\r\n2]\n",
	`{"a":1,"a":2}`, `{"a":{"b":1},"a":[2]}`, `{"a":"\u00e9","\u0062":"\n\t\\\/\""}`, `{"a":"\u0000"}`, `{"a":"é"}`,
	`{"a":1}x`, `{"a":1`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`,
	`{"a":NaN}`, `{'a':1}`, `{"a":"x",}`, `[1,]`, "", " ", "\ufeff{}", "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12"}`,
	`[1 2]`, `{"a" 1}`, `{"a":1}{}`, `""`, `"\""`,
	strings.Repeat("[", maxRawDecodeDepth) + strings.Repeat("]", maxRawDecodeDepth),
}

// decodeDeclined are valid documents that only encoding/json reads:
// escaped surrogates, bytes that are not UTF-8, deeper or larger than the
// bounds.
var decodeDeclined = []string{
	`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `{"\udc00":1}`, `{"a":"\ud800x"}`, "{\"a\":\"\xff\"}", "{\"\xc3\":1}",
	"{\"a\":\"\xed\xa0\x80\"}",
	strings.Repeat("[", maxRawDecodeDepth+1) + strings.Repeat("]", maxRawDecodeDepth+1),
	`{"s":"` + strings.Repeat("x", maxRawDecode) + `"}`,
}

// TestDecodeRawAgrees: where decodeRaw answers, encoding/json decodes the
// same value; it answers for every valid document of decodeCases, declines
// every one of decodeDeclined, and leaves the invalid ones to encoding/json.
func TestDecodeRawAgrees(t *testing.T) {
	for _, c := range []struct {
		docs     []string
		declined bool
	}{{decodeCases, false}, {decodeDeclined, true}} {
		for _, doc := range c.docs {
			_, jerr := decodeJSON([]byte(doc))
			if jerr != nil && c.declined {
				t.Fatalf("%.40q is not valid for encoding/json: %v", doc, jerr)
			}
			_, ok := decodeRaw([]byte(doc))
			if want := jerr == nil && !c.declined; ok != want {
				t.Errorf("decodeRaw(%.40q) answered %v, want %v (encoding/json: %v)", doc, ok, want, jerr)
			}
			decodeAgrees(t, []byte(doc))
		}
	}
}

// decodeAgrees fails t when decodeRaw answers for data with a value
// encoding/json does not give.
func decodeAgrees(t *testing.T, data []byte) {
	t.Helper()
	got, ok := decodeRaw(data)
	if !ok {
		return
	}
	want, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("decodeRaw(%.80q) = %v, but encoding/json refuses it: %v", data, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeRaw(%.80q) = %#v, encoding/json %#v", data, got, want)
	}
}

// FuzzDecode: for any bytes, decodeRaw gives encoding/json's value or
// declines.
func FuzzDecode(f *testing.F) {
	for _, doc := range append(decodeCases, decodeDeclined...) {
		f.Add([]byte(doc))
	}
	for _, tc := range fastCases {
		f.Add([]byte(tc.args))
		f.Add([]byte(tc.schema))
	}
	for _, c := range bfclSeeds(f) {
		f.Add(c.args)
		f.Add(c.schema)
	}
	f.Fuzz(decodeAgrees)
}

// BenchmarkDecode is decode against encoding/json alone (-json): a repaired
// call's one-member object, and two documents at decodeRaw's bounds, 16 KB
// of small objects and 16 KB nested 32 deep (read again at each level), by
// doubling from 8 KB.
func BenchmarkDecode(b *testing.B) {
	docs := []struct {
		name string
		doc  string
	}{{"small", `{"Selector":"#login"}`}}
	for _, n := range []int{maxRawDecode / 2, maxRawDecode} {
		d := maxRawDecodeDepth
		docs = append(docs,
			struct{ name, doc string }{fmt.Sprintf("many-%dKB", n>>10), "[" + strings.Repeat(`{"a":[1,{"b":"c"}]},`, (n-3)/20) + "1]"},
			struct{ name, doc string }{fmt.Sprintf("deep-%dKB", n>>10), strings.Repeat("[", d) + `"` + strings.Repeat("x", n-2*d-2) + `"` + strings.Repeat("]", d)})
	}
	for _, c := range docs {
		if _, ok := decodeRaw([]byte(c.doc)); !ok {
			b.Fatalf("%s (%d bytes) is not read in place", c.name, len(c.doc))
		}
		for _, arm := range []struct {
			name   string
			decode func([]byte) (any, error)
		}{{"", decode}, {"-json", decodeJSON}} {
			b.Run(c.name+arm.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := arm.decode([]byte(c.doc)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
