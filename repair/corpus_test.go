package repair

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/toolguard/toolguard/internal/bfcl"
	"github.com/toolguard/toolguard/validate"
)

// corpusCall is one ground truth of the corpus that validates as is.
type corpusCall struct {
	id     string
	tool   string
	schema *validate.Schema
	doc    map[string]any
	args   map[string]any // decoded with json.Number, as the validator sees it
	text   []byte         // compact JSON of args
}

// variant is one broken form of a ground truth.
type variant struct {
	kind string
	raw  []byte // the function.arguments field
	// schema, when set, replaces the call's schema (the closed form for
	// unknown-key).
	schema *validate.Schema
	// cutOff: the model stopped at its length limit (Options.CutOff).
	cutOff bool
}

// loadCorpus returns the ground truths of testdata/bfcl that validate
// against their declaration; the others are Python-flavoured answers that
// the validate package lists with their reason.
func loadCorpus(t testing.TB) []corpusCall {
	t.Helper()
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	cache := validate.NewCache(8192)
	var out []corpusCall
	for _, c := range cases {
		decls := map[string][]byte{}
		for _, fn := range c.Functions {
			decls[fn.Name] = fn.Parameters
		}
		for i, call := range c.GroundTruth {
			s, err := cache.Get(decls[call.Name])
			if err != nil {
				continue
			}
			text, err := encode(call.Arguments())
			if err != nil {
				t.Fatal(err)
			}
			v, errs := s.ValidateJSON(text)
			doc, ok := s.Doc().(map[string]any)
			if errs != nil || !ok {
				continue
			}
			out = append(out, corpusCall{
				id: fmt.Sprintf("%s#%d", c.ID, i), tool: call.Name, schema: s, doc: doc,
				args: v.(map[string]any), text: text,
			})
		}
	}
	return out
}

// mendableKinds are broken forms that carry all the information of the
// ground truth; the others lose some and must be left for a re-ask.
var mendableKinds = map[string]bool{
	"fence": true, "prose": true, "tokens": true, "truncated": true, "single-quotes": true,
	"python-literals": true, "trailing-comma": true, "double-encoded": true, "object-arguments": true,
	"concatenated": true, "stringified-number": true, "stringified-boolean": true,
	"number-for-string": true, "stringified-array": true, "stringified-object": true,
	"camel-case-key": true, "other-case-key": true, "bare-value": true,
	"bare-unquoted": true, "envelope": true, "named-envelope": true, "enum-case": true,
	"scalar-for-array": true, "unknown-key": true,
}

// showReasks lists the mendable cases that were left for a re-ask.
var showReasks = flag.Bool("corpus.reasks", false, "log each mendable corpus case left for a re-ask")

type tally struct{ cases, exact, reask, other int }

// TestCorpus breaks every ground truth of the corpus in each way that
// applies to its schema and checks what Arguments makes of it: mendable
// forms must come back as exactly the ground truth (at least 99% of them,
// and never as anything else), the others must be left invalid.
func TestCorpus(t *testing.T) {
	calls := loadCorpus(t)
	if len(calls) < 2900 {
		t.Fatalf("loaded %d valid ground truths, want the whole corpus", len(calls))
	}
	closed := validate.NewCache(8192)
	stats := map[string]*tally{}
	var failures []string
	for _, c := range calls {
		for _, v := range variants(t, c, closed) {
			s := c.schema
			if v.schema != nil {
				s = v.schema
			}
			if Arguments(v.raw, s, Options{CutOff: v.cutOff}).Valid() {
				continue // not broken: it is forwarded as is
			}
			st := stats[v.kind]
			if st == nil {
				st = &tally{}
				stats[v.kind] = st
			}
			st.cases++
			opts := mendAll
			opts.CutOff = v.cutOff
			got := Arguments(v.raw, s, opts)
			switch {
			case !got.Valid():
				st.reask++
				if mendableKinds[v.kind] && *showReasks {
					t.Logf("re-ask %s %s: %s -> %v", v.kind, c.id, v.raw, got.Errors)
				}
			case sameJSON(t, got.Args, c.text):
				st.exact++
			default:
				st.other++
			}
			if got.Valid() && (!mendableKinds[v.kind] || !sameJSON(t, got.Args, c.text)) && len(failures) < 30 {
				failures = append(failures, fmt.Sprintf("%s %s %s: %s -> %s (edits %v), want %s",
					v.kind, c.id, c.tool, v.raw, got.Args, got.Edits, c.text))
			}
		}
	}
	report(t, stats)
	for _, f := range failures {
		t.Error(f)
	}
	var total, exact int
	for k, st := range stats {
		if mendableKinds[k] {
			total += st.cases
			exact += st.exact
		} else if st.exact+st.other > 0 {
			t.Errorf("%s: %d cases that must be re-asked were mended", k, st.exact+st.other)
		}
		if st.other > 0 {
			t.Errorf("%s: %d cases mended to something else", k, st.other)
		}
	}
	if exact*100 < total*99 {
		t.Errorf("mended %d of %d mendable cases exactly (%.2f%%), want at least 99%%", exact, total, 100*float64(exact)/float64(total))
	}
}

func report(t *testing.T, stats map[string]*tally) {
	kinds := make([]string, 0, len(stats))
	for k := range stats {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if mendableKinds[kinds[i]] != mendableKinds[kinds[j]] {
			return mendableKinds[kinds[i]]
		}
		return kinds[i] < kinds[j]
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(w, "kind\tmendable\tcases\tmended exactly\tre-ask\tmended to something else\t")
	var sum [2]tally
	for _, k := range kinds {
		st := stats[k]
		m := "no"
		i := 1
		if mendableKinds[k] {
			m, i = "yes", 0
		}
		sum[i].cases += st.cases
		sum[i].exact += st.exact
		sum[i].reask += st.reask
		sum[i].other += st.other
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t\n", k, m, st.cases, st.exact, st.reask, st.other)
	}
	for i, name := range []string{"all mendable", "all non-mendable"} {
		fmt.Fprintf(w, "%s\t\t%d\t%d\t%d\t%d\t\n", name, sum[i].cases, sum[i].exact, sum[i].reask, sum[i].other)
	}
	w.Flush()
	t.Log("\n" + b.String())
}

// sameJSON compares two JSON texts as values, numbers as numbers.
func sameJSON(t testing.TB, a, b []byte) bool {
	x, err := validate.Decode(a)
	if err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	y, err := validate.Decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return sameValue(x, y)
}

func sameValue(x, y any) bool {
	switch x := x.(type) {
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := y.(json.Number)
		if !ok {
			return false
		}
		a, ok1 := new(big.Float).SetString(x.String())
		b, ok2 := new(big.Float).SetString(y.String())
		return ok1 && ok2 && a.Cmp(b) == 0
	}
	return x == y
}
