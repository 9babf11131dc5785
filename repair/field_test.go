package repair

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// checkField fails unless field reads raw as fieldRead, gjson's reading,
// does: the same text (nil or not), edits and error.
func checkField(t *testing.T, raw []byte) {
	t.Helper()
	for _, mending := range []bool{false, true} {
		text, edits, ferr := field(raw, mending)
		want, wantEdits, wantErr := fieldRead(raw, mending)
		if !bytes.Equal(text, want) || (text == nil) != (want == nil) || !reflect.DeepEqual(edits, wantEdits) || !reflect.DeepEqual(ferr, wantErr) {
			t.Fatalf("field(%q, %v) = %q, %v, %v; gjson reads %q, %v, %v", raw, mending, text, edits, ferr, want, wantEdits, wantErr)
		}
	}
}

// TestFieldAsGJSON: a string read in one pass with jsontext is what gjson
// reads: the arguments of the BFCL corpus quoted, escapes of every kind,
// surrogates paired and not, invalid UTF-8, control characters, white space
// around, and values that are not strings.
func TestFieldAsGJSON(t *testing.T) {
	raws := []string{
		`""`, `"{}"`, `"{\"selector\":\"#a\"}"`, `"\u00e9\u4e2d\ud83d\ude00"`, `"\/\b\f\n\r\t\\\""`,
		`"\ud83d"`, `"\ude00"`, `"\ud83d\u0041"`, `"\ud83dx"`, `"\uD83D\uDE00"`, `"\u0000"`, `"\x"`, `"\u12"`,
		"\"\xff\"", "\"\xc3\"", "\"a\x01b\"", "\"\x7f\"", ` "{}"`, `"{}" `, "\"{}\"\n", `"a"b"`, `"a`, `"`,
		`{"a":1}`, `[]`, `1`, `null`, `true`, ``, ` `, `"é"`, `"\u2028"`,
	}
	for _, c := range loadCorpus(t) {
		q, err := json.Marshal(string(c.text))
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(q))
	}
	for _, raw := range raws {
		checkField(t, []byte(raw))
	}
	if len(raws) < 1000 {
		t.Fatalf("%d arguments read", len(raws))
	}
}

// FuzzField: any bytes are read by field as gjson reads them.
func FuzzField(f *testing.F) {
	for _, s := range []string{`"{\"a\":1}"`, `"\ud83d\ude00"`, "\"\xff\"", `{"a":1}`, `" "`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkField(t, raw) })
}
