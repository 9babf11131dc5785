package repair

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// costKinds are the syntax kinds the syntax step mends, each as a text of
// about n bytes that needs it, many times over: the shapes whose repair
// cost grew with the square of their size.
var costKinds = []struct {
	name string
	give func(n int) string
}{
	{"array-missing-commas", func(n int) string { return `{"selector":"a","x":[` + strings.Repeat("1 ", n/2) + `1]}` }},
	{"object-missing-commas", func(n int) string { return repeatMembers(n, `"k%d":1 `, `"z":1}`) }},
	{"bare-keys", func(n int) string { return repeatMembers(n, `k%d:1,`, `z:1}`) }},
	{"single-quotes", func(n int) string { return `{'a':[` + strings.Repeat(`'x',`, n/4) + `'y']}` }},
	{"trailing-commas", func(n int) string { return `{"a":[` + strings.Repeat(`[1,],`, n/5) + `1]}` }},
	{"one-trailing-comma", func(n int) string { return repeatMembers(n, `"k%d":1,`, `"z":1,}`) }},
	{"python-literals", func(n int) string { return `{"a":[` + strings.Repeat(`True,None,`, n/10) + `False]}` }},
	{"comments", func(n int) string { return `{"a":[` + strings.Repeat(`1,/*c*/`, n/7) + `1]}` }},
	{"missing-colons", func(n int) string { return repeatMembers(n, `"k%d" 1,`, `"z" 1}`) }},
	{"unquoted-values", func(n int) string { return repeatMembers(n, `"k%d":abc,`, `"z":abc}`) }},
	{"cut-off", func(n int) string { return `{"a":[` + strings.Repeat(`{"b":[1,2],`, n/11) }},
	{"escaped-quotes", func(n int) string { return `{\"a\":[` + strings.Repeat(`\"x\",`, n/6) + `\"y\"]}` }},
	{"concatenated-strings", func(n int) string { return `{"a":"x"` + strings.Repeat(` + "x"`, n/6) + `}` }},
	{"fence", func(n int) string { return "```json\n" + repeatMembers(n, `"k%d":1 `, `"z":1}`) + "\n```" }},
	{"special-tokens", func(n int) string {
		return strings.Repeat("<|call|>", n/16) + `{"a":1}` + strings.Repeat("<|end|>", n/14)
	}},
	{"prose-around", func(n int) string {
		return "Here you go: " + repeatMembers(n, `"k%d":[1 2],`, `"z":1}`) + " Hope that helps."
	}},
	{"double-encoded", func(n int) string {
		b, _ := json.Marshal(repeatMembers(n, `'k%d':1,`, `'z':1}`))
		return string(b)
	}},
}

// repeatMembers writes an object of members written as format (with %d
// for a number) up to about n bytes, ending with last.
func repeatMembers(n int, format, last string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	b.WriteString(last)
	return b.String()
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSyntaxCostIsLinear doubles the size of each syntax kind and checks
// that the bytes allocated to mend it at most about double: the JSON
// repairer copies what it has written at every comma it moves, and 32 KiB
// of array items without commas allocated 1.3 GB (4.0x for 2x the text).
// Text past the repairer's bound is checked, not repaired; within it, a
// Quota bounds the request.
func TestSyntaxCostIsLinear(t *testing.T) {
	for _, k := range costKinds {
		t.Run(k.name, func(t *testing.T) {
			var cost [2]uint64
			var size [2]int
			for i, n := range []int{32 << 10, 64 << 10} {
				raw := quoteJSON(t, k.give(n))
				size[i] = len(raw)
				Syntax(raw) // warm up: compiled patterns, pools
				cost[i] = allocated(func() { SyntaxWithin(raw, NewQuota()) })
			}
			ratio := float64(cost[1]) / float64(cost[0])
			t.Logf("%d bytes: %d allocated; %d bytes: %d allocated (%.2fx)", size[0], cost[0], size[1], cost[1], ratio)
			if ratio > 3 {
				t.Errorf("twice the text allocated %.2fx the bytes (%d, then %d): not linear", ratio, cost[0], cost[1])
			}
			if per := cost[1] / uint64(size[1]); per > 64 && !raceEnabled {
				t.Errorf("%d bytes allocated per byte of text", per)
			}
		})
	}
}

// TestQuotaBoundsARequestsRepairs: calls small enough to repair, one after
// another on one Quota, are repaired until its work is spent, then refused;
// each alone is repaired.
func TestQuotaBoundsARequestsRepairs(t *testing.T) {
	raw := quoteJSON(t, `{"selector":"a","x":[`+strings.Repeat("1 ", 1000)+`1]}`)
	q := NewQuota()
	repaired := 0
	for range 200 {
		if _, _, err := SyntaxWithin(raw, q); err == nil {
			repaired++
		}
	}
	if want := int(QuotaWork / ((len(raw) - 2) * (len(raw) - 2))); repaired != want {
		t.Errorf("%d of 200 calls of %d bytes repaired on one quota, want %d", repaired, len(raw), want)
	}
	if _, _, err := SyntaxWithin(raw, NewQuota()); err != nil {
		t.Errorf("a call on a quota of its own: %v", err)
	}
	big := quoteJSON(t, `{"x":[`+strings.Repeat("1 ", maxRepairBytes/2)+`1]}`)
	if _, _, err := Syntax(big); err == nil {
		t.Errorf("a call of %d bytes of malformed JSON was repaired", len(big))
	}
}

// FuzzSyntaxCost fails when mending a text allocates more than a bound per
// byte of it: linear, plus, within the repairer's bound of maxRepairBytes,
// the square of what the repairer is handed (what it copies as it moves
// commas). A shape that escapes the bound, or costs more than the square
// within it, fails.
func FuzzSyntaxCost(f *testing.F) {
	for _, k := range costKinds {
		f.Add(k.give(256))
	}
	// Past the repairer's bound: quadratic, it allocated 1.3 GB.
	f.Add(costKinds[0].give(32 << 10))
	for _, tt := range syntaxCases {
		f.Add(tt.give)
	}
	f.Fuzz(func(t *testing.T, text string) {
		raw, err := json.Marshal(text)
		if err != nil {
			return
		}
		n := uint64(len(raw))
		Syntax(raw) // warm up
		got := allocated(func() { SyntaxWithin(raw, NewQuota()) })
		if bound := 64*n + 2*min(n, maxRepairBytes)*n + 64<<10; got > bound && !raceEnabled {
			t.Fatalf("mending %d bytes allocated %d, over %d (%d a byte): %.200q", n, got, bound, got/n, text)
		}
	})
}
