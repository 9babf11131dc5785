package proxy

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

func TestApplySplices(t *testing.T) {
	body := []byte(`{"a":1,"b":[2,3]}`)
	got, err := wire.ApplySplices(body, []wire.Splice{{Start: 5, End: 6, With: []byte(`"x"`)}, {Start: 11, End: 16, With: []byte(`[]`)}})
	if err != nil || string(got) != `{"a":"x","b":[]}` {
		t.Fatalf("got %s, %v", got, err)
	}
	for _, bad := range [][]wire.Splice{
		{{Start: 5, End: 6}, {Start: 4, End: 5}}, // out of order
		{{Start: 6, End: 5}},                     // backwards
		{{Start: 5, End: 99}},                    // past the end
	} {
		if _, err := wire.ApplySplices(body, bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// TestSumUsageIsBounded: a usage object with thousands of numbers sums the
// first maxUsageFields and leaves the rest as the base has them, in one pass.
func TestSumUsageIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"usage":{"prompt_tokens":1`)
	for i := range 5000 {
		b.WriteString(`,"f` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString(`}}`)
	base := []byte(b.String())
	out, err := wire.SumUsage(base, "usage", [][]byte{base, []byte(`{"usage":{"prompt_tokens":2,"completion_tokens_details":{"reasoning_tokens":7}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	u := gjson.GetBytes(out, "usage")
	if got := u.Get("prompt_tokens").Int(); got != 4 {
		t.Errorf("prompt_tokens %d, want 4", got)
	}
	if got := u.Get("f0").Int(); got != 2 {
		t.Errorf("f0 %d, want 2 (summed)", got)
	}
	if got := u.Get("f4999").Int(); got != 1 {
		t.Errorf("f4999 %d, want 1 (past the bound, left as it was)", got)
	}
}
