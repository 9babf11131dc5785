package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/bfcl"
)

// fastCases feed the unit test and the fuzz seeds. fast says whether the
// schema gets a fast path; valid is the validator's answer; proven whether
// the fast path answers it itself (it must whenever it can, or it is slow
// for nothing).
var fastCases = []struct {
	name, schema, args  string
	fast, valid, proven bool
}{
	{"one-string", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":"x"}`, true, true, true},
	{"one-string-wrong-type", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":1}`, true, false, false},
	{"required-missing", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{}`, true, false, false},
	{"extra-allowed", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"b":[1,{"c":2.5}]}`, true, true, true},
	{"extra-refused", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"b":1}`, true, false, false},
	{"extra-true", `{"type":"object","additionalProperties":true}`, `{"b":1}`, true, true, true},
	{"extra-schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"b":1,"c":2.0}`, true, true, true},
	{"extra-schema-fails", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"b":1.5}`, true, false, false},
	{"integer-1.0", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1.0}`, true, true, true},
	{"integer-1e2", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1e2}`, true, true, true},
	{"integer-125e-1", `{"properties":{"n":{"type":"integer"}}}`, `{"n":125e-1}`, true, false, false},
	{"integer-1.5", `{"properties":{"n":{"type":"integer"}}}`, `{"n":1.5}`, true, false, false},
	{"integer-negative-zero", `{"properties":{"n":{"type":"integer"}}}`, `{"n":-0.0}`, true, true, true},
	{"number-accepts-integer", `{"properties":{"n":{"type":"number"}}}`, `{"n":3}`, true, true, true},
	{"nullable", `{"properties":{"n":{"type":["string","null"]}}}`, `{"n":null}`, true, true, true},
	{"nullable-wrong", `{"properties":{"n":{"type":["string","null"]}}}`, `{"n":false}`, true, false, false},
	{"type-list-integer", `{"properties":{"n":{"type":["boolean","integer"]}}}`, `{"n":10.000}`, true, true, true},
	{"enum-string", `{"properties":{"u":{"type":"string","enum":["celsius","fahrenheit"]}}}`, `{"u":"celsius"}`, true, true, true},
	{"enum-miss", `{"properties":{"u":{"type":"string","enum":["celsius","fahrenheit"]}}}`, `{"u":"kelvin"}`, true, false, false},
	{"enum-number-by-value", `{"properties":{"n":{"enum":[1,2.5]}}}`, `{"n":1.0}`, true, true, true},
	{"enum-number-by-value-exp", `{"properties":{"n":{"enum":[1,2.5]}}}`, `{"n":25e-1}`, true, true, true},
	{"enum-number-not-string", `{"properties":{"n":{"enum":[1]}}}`, `{"n":"1"}`, true, false, false},
	{"enum-null-and-bool", `{"properties":{"n":{"enum":[null,true]}}}`, `{"n":true}`, true, true, true},
	{"enum-of-objects", `{"properties":{"n":{"enum":[{"a":1}]}}}`, `{"n":{"a":1}}`, true, true, false},
	{"const", `{"properties":{"n":{"const":"x"}}}`, `{"n":"x"}`, true, true, true},
	{"const-number", `{"properties":{"n":{"const":10}}}`, `{"n":1e1}`, true, true, true},
	{"const-miss", `{"properties":{"n":{"const":"x"}}}`, `{"n":"y"}`, true, false, false},
	{"min-length-code-points", `{"properties":{"s":{"type":"string","minLength":3,"maxLength":3}}}`, `{"s":"añ€"}`, true, true, true},
	{"max-length-code-points", `{"properties":{"s":{"type":"string","maxLength":2}}}`, `{"s":"añ€"}`, true, false, false},
	{"min-length-float", `{"properties":{"s":{"minLength":2.0}}}`, `{"s":"ab"}`, true, true, true},
	{"length-ignores-numbers", `{"properties":{"s":{"maxLength":1}}}`, `{"s":12345}`, true, true, true},
	{"minimum", `{"properties":{"n":{"minimum":1,"maximum":14}}}`, `{"n":14.0}`, true, true, true},
	{"maximum-exceeded", `{"properties":{"n":{"minimum":1,"maximum":14}}}`, `{"n":14.0000000000000000001}`, true, false, false},
	{"exclusive-bounds", `{"properties":{"n":{"exclusiveMinimum":0,"exclusiveMaximum":1}}}`, `{"n":0.999}`, true, true, true},
	{"exclusive-bound-hit", `{"properties":{"n":{"exclusiveMinimum":0,"exclusiveMaximum":1}}}`, `{"n":1e0}`, true, false, false},
	{"bounds-ignore-strings", `{"properties":{"n":{"minimum":5}}}`, `{"n":"1"}`, true, true, true},
	{"items", `{"properties":{"l":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}}`, `{"l":["a","b"]}`, true, true, true},
	{"items-wrong", `{"properties":{"l":{"type":"array","items":{"type":"string"}}}}`, `{"l":["a",2]}`, true, false, false},
	{"max-items", `{"properties":{"l":{"type":"array","maxItems":1}}}`, `{"l":[1,2]}`, true, false, false},
	{"nested-object", `{"properties":{"o":{"type":"object","properties":{"h":{"type":"boolean"}},"required":["h"]}}}`, `{"o":{"h":true}}`, true, true, true},
	{"nested-object-missing", `{"properties":{"o":{"type":"object","properties":{"h":{"type":"boolean"}},"required":["h"]}}}`, `{"o":{}}`, true, false, false},
	{"boolean-subschemas", `{"properties":{"a":true,"b":false}}`, `{"a":{"x":[1]}}`, true, true, true},
	{"false-subschema-used", `{"properties":{"a":true,"b":false}}`, `{"b":1}`, true, false, false},
	{"property-counts", `{"minProperties":1,"maxProperties":1}`, `{"a":1}`, true, true, true},
	{"property-counts-over", `{"minProperties":1,"maxProperties":1}`, `{"a":1,"b":2}`, true, false, false},
	{"unique-items-false", `{"properties":{"l":{"uniqueItems":false}}}`, `{"l":[1,1]}`, true, true, true},
	{"annotations", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","$comment":"c","properties":{"a":{"default":1,"examples":["x"],"deprecated":true,"readOnly":false,"writeOnly":false}}}`, `{"a":"x"}`, true, true, true},
	{"format-asserted-without-schema", `{"properties":{"e":{"type":"string","format":"email"}}}`, `{"e":"not an address"}`, false, false, false},
	{"format-annotation-in-2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"e":{"type":"string","format":"email"}}}`, `{"e":"not an address"}`, true, true, true},
	{"format-annotation-in-2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema#","properties":{"e":{"type":"string","format":"email"}}}`, `{"e":"not an address"}`, true, true, true},
	{"format-annotation-in-latest", `{"$schema":"http://json-schema.org/schema","properties":{"e":{"type":"string","format":"email"}}}`, `{"e":"not an address"}`, true, true, true},
	{"format-asserted-in-draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"e":{"type":"string","format":"email"}}}`, `{"e":"not an address"}`, false, false, false},
	{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":"x"}`, true, true, true},
	{"draft-04-const-is-unknown", `{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"a":{"const":"x"}}}`, `{"a":"y"}`, true, true, false},
	{"draft-04-exclusive-boolean", `{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"maximum":5,"exclusiveMaximum":true}}}`, `{"n":5}`, false, false, false},
	{"root-not-object", `{"type":"object"}`, `[]`, true, false, false},
	{"huge-number", `{"properties":{"n":{}}}`, `{"n":1e999}`, true, false, false},
	{"huge-number-unchecked-property", `{"properties":{}}`, `{"x":[1e999]}`, true, false, false},
	{"pattern", `{"properties":{"s":{"type":"string","pattern":"^a"}}}`, `{"s":"a"}`, false, true, false},
	{"ref", `{"$defs":{"s":{"type":"string"}},"properties":{"s":{"$ref":"#/$defs/s"}}}`, `{"s":"a"}`, false, true, false},
	{"any-of", `{"properties":{"s":{"anyOf":[{"type":"string"}]}}}`, `{"s":"a"}`, false, true, false},
	{"unknown-keyword", `{"properties":{"s":{"type":"string","optional":true}}}`, `{"s":"a"}`, false, true, false},
	{"tuple-items", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"l":{"items":[{"type":"string"}]}}}`, `{"l":["a"]}`, false, true, false},
	{"nested-schema-keyword", `{"properties":{"s":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`, `{"s":"a"}`, false, true, false},
}

// fastAgrees runs the fast path and the validator on v: the fast path must
// not call valid what the validator does not, and must count the budget
// walk's steps. It returns the fast path's answer.
func fastAgrees(t testing.TB, s *Schema, v any) bool {
	t.Helper()
	steps, ok := s.fastValid(v, MaxSteps)
	if !ok {
		explainAgrees(t, s, v)
		return false
	}
	if errs := s.validateFull(v, nil, MaxSteps); errs != nil {
		t.Fatalf("the fast path calls valid what the validator does not: %v", errs)
	}
	if want, err := s.cost(v, MaxSteps); err != nil || steps != want {
		t.Fatalf("the fast path counted %d steps, the budget walk %d (%v)", steps, want, err)
	}
	return true
}

// explainAgrees checks explain's errors for v, where it answers, against
// the validator's: the same errors, the order of properties and of the
// names in an additionalProperties message aside (the validator's vary from
// run to run). It reports whether explain answered.
func explainAgrees(t testing.TB, s *Schema, v any) bool {
	t.Helper()
	if _, isObject := v.(map[string]any); !isObject || checkNumbers(v, "") != nil {
		return false // validateFull answers before either runs
	}
	if _, err := s.cost(v, MaxSteps); err != nil {
		return false
	}
	got, ok := s.explain(v)
	if !ok {
		return false
	}
	want := s.validator(v)
	if !slices.Equal(normalErrors(got), normalErrors(want)) {
		t.Fatalf("explain's errors differ from the validator's:\n got %q\nwant %q", got, want)
	}
	return true
}

// normalErrors sorts errors, and the names of an additionalProperties
// message.
func normalErrors(errs []Error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		msg := e.Message
		if names, ok := strings.CutPrefix(msg, "additionalProperties "); ok && e.Keyword == "additionalProperties" {
			if names, ok = strings.CutSuffix(names, " not allowed"); ok {
				list := strings.Split(names, ", ")
				slices.Sort(list)
				msg = strings.Join(list, ", ")
			}
		}
		out[i] = strings.Join([]string{e.Path, e.Keyword, e.SchemaPath, msg}, "\x00")
	}
	slices.Sort(out)
	return out
}

// rawAgrees runs the fast path on the bytes of arguments: where it proves
// them valid, they must decode, the fast path on the decoded value must
// prove them valid too, and both must count the same steps. It returns the
// answer on the bytes.
func rawAgrees(t testing.TB, s *Schema, args []byte) bool {
	t.Helper()
	b := NewBudget(RequestSteps)
	if !s.ValidJSON(args, b) {
		return false
	}
	v, err := Decode(args)
	if err != nil {
		t.Fatalf("the fast path on bytes calls valid what does not decode (%v): %q", err, args)
	}
	visits, ok := s.fastValid(v, MaxSteps*FastVisitsPerStep)
	if !ok {
		t.Fatalf("the fast path on bytes calls valid what it does not on the decoded value: %q", args)
	}
	if spent := RequestSteps - b.Left(); spent != fastSteps(visits) {
		t.Fatalf("the fast path on bytes charged %d steps, on the decoded value %d", spent, fastSteps(visits))
	}
	return true
}

func TestFastPath(t *testing.T) {
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if (s.fast != nil) != tc.fast {
				t.Fatalf("fast path %v, want %v", s.fast != nil, tc.fast)
			}
			v, err := Decode([]byte(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if errs := s.validateFull(v, nil, MaxSteps); (errs == nil) != tc.valid {
				t.Fatalf("validator: %v, want valid=%v", errs, tc.valid)
			}
			if proven := fastAgrees(t, s, v); proven != tc.proven {
				t.Errorf("fast path proves valid: %v, want %v", proven, tc.proven)
			}
			if raw := rawAgrees(t, s, []byte(tc.args)); raw && !tc.proven {
				t.Errorf("the fast path on bytes proves valid what it should not")
			}
			if errs := s.Validate(v); (errs == nil) != tc.valid {
				t.Errorf("Validate: %v, want valid=%v", errs, tc.valid)
			}
		})
	}
}

// TestFastPathChargesTheBudget: a call the fast path answers costs the
// shared budget a sixteenth of what the budget walk counts (its visits cost
// that much less than the validator's), and one over what is left is
// reported spent, as without the fast path.
func TestFastPathChargesTheBudget(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","enum":["a","b"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.fast == nil {
		t.Fatal("no fast path")
	}
	v, _ := Decode([]byte(`{"l":["a","b","a","b","a","b","a","b","a","b","a","b","a","b","a","b"]}`))
	visits, err := s.cost(v, MaxSteps)
	if err != nil {
		t.Fatal(err)
	}
	want := (visits + FastVisitsPerStep - 1) / FastVisitsPerStep
	if want < 2 {
		t.Fatalf("%d visits: too few to tell a discount", visits)
	}
	b := NewBudget(want)
	if errs := s.ValidateWithin(v, b); errs != nil || b.Left() != 0 {
		t.Fatalf("%v, %d steps left of %d, want valid and all spent", errs, b.Left(), want)
	}
	b = NewBudget(want - 1)
	if errs := s.ValidateWithin(v, b); !Spent(errs) {
		t.Errorf("one step short of a shared budget: %v, want spent", errs)
	}
}

// TestFastPathOverBFCL: over every declaration of the corpus and the
// arguments of its correct calls, the fast path agrees with the validator,
// and nearly every declaration has one.
func TestFastPathOverBFCL(t *testing.T) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	var decls, fast, calls, valid, proven, onBytes int
	for _, c := range cases {
		schemas := map[string]*Schema{}
		for _, fn := range c.Functions {
			s, err := Compile(fn.Parameters)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			decls++
			if s.fast != nil {
				fast++
			}
			schemas[fn.Name] = s
		}
		for _, call := range c.GroundTruth {
			s := schemas[call.Name]
			if s == nil || s.fast == nil {
				continue
			}
			raw, err := json.Marshal(call.Arguments())
			if err != nil {
				t.Fatal(err)
			}
			v, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			calls++
			ok := fastAgrees(t, s, v)
			if ok {
				proven++
			}
			if rawAgrees(t, s, raw) {
				onBytes++
			} else if ok {
				t.Errorf("%s %s: proven on the decoded value, not on its bytes: %s", c.ID, call.Name, raw)
			}
			if s.validateFull(v, nil, MaxSteps) == nil {
				valid++
				if !ok {
					t.Errorf("%s %s: valid, but not for the fast path", c.ID, call.Name)
				}
			}
		}
	}
	t.Logf("%d of %d declarations (%.1f%%) have a fast path; of their %d correct calls, %d validate and the fast path proves %d (%d on their bytes)",
		fast, decls, 100*float64(fast)/float64(decls), calls, valid, proven, onBytes)
	if fast*100 < decls*95 {
		t.Errorf("%d of %d declarations have a fast path, want at least 95%%", fast, decls)
	}
}

// TestExplainOverBFCL: the corpus's correct calls, broken as models break
// them (a required property left out, a key in another letter case, a
// value of another type, a member not declared), get from explain the
// validator's errors, and explain answers nearly all of them.
func TestExplainOverBFCL(t *testing.T) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	var broken, explained int
	for _, c := range cases {
		for _, call := range c.GroundTruth {
			var params []byte
			for _, fn := range c.Functions {
				if fn.Name == call.Name {
					params = fn.Parameters
				}
			}
			s, err := Compile(params)
			if err != nil || s.fast == nil {
				continue
			}
			raw, _ := json.Marshal(call.Arguments())
			for _, b := range breakings(raw) {
				v, err := Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := s.fastValid(v, MaxSteps); ok {
					continue
				}
				broken++
				if explainAgrees(t, s, v) {
					explained++
				}
			}
		}
	}
	t.Logf("%d broken calls the fast path did not prove valid; explain said the errors of %d", broken, explained)
	if broken < 5000 || explained*100 < broken*90 {
		t.Errorf("explain said the errors of %d of %d broken calls, want at least 90%%", explained, broken)
	}
}

// breakings are the arguments object raw broken in each of the ways
// TestExplainOverBFCL names, one member at a time.
func breakings(raw []byte) [][]byte {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out [][]byte
	add := func(v map[string]any) {
		b, _ := json.Marshal(v)
		out = append(out, b)
	}
	for k, val := range m {
		without := maps.Clone(m)
		delete(without, k)
		add(without)
		renamed := maps.Clone(without)
		renamed[strings.ToUpper(k[:1])+k[1:]] = val
		add(renamed)
		typed := maps.Clone(m)
		if _, isString := val.(string); isString {
			typed[k] = 5
		} else {
			typed[k] = "5"
		}
		add(typed)
	}
	extra := maps.Clone(m)
	extra["reason"] = "asked"
	add(extra)
	return out
}

// FuzzFastPath: for any schema and arguments, the fast path never calls
// valid what the validator does not, and counts the budget walk's steps.
// Each input is checked, and so is a schema and arguments generated from
// seed (see genSchema), which reach the fast path far more often than
// mutated bytes do.
func FuzzFastPath(f *testing.F) {
	for i, tc := range fastCases {
		f.Add([]byte(tc.schema), []byte(tc.args), uint64(i))
	}
	for i, c := range bfclSeeds(f) {
		f.Add(c.schema, c.args, uint64(i))
	}
	f.Fuzz(func(t *testing.T, schema, args []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 0))
		for _, c := range [][2][]byte{{schema, args}, {[]byte(genSchema(r, 0)), []byte(genValue(r, 0))}} {
			s, err := Compile(c[0])
			if err != nil || s.fast == nil {
				continue
			}
			if v, err := Decode(c[1]); err == nil {
				fastAgrees(t, s, v)
			}
			rawAgrees(t, s, c[1])
		}
	})
}

// bfclSeeds are fuzz seeds from the corpus: every fortieth case's first
// correct call, with the schema of its function.
func bfclSeeds(f *testing.F) (seeds []struct{ schema, args []byte }) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		f.Fatal(err)
	}
	for i, c := range cases {
		if i%40 != 0 || len(c.GroundTruth) == 0 {
			continue
		}
		for _, fn := range c.Functions {
			if fn.Name == c.GroundTruth[0].Name {
				args, _ := json.Marshal(c.GroundTruth[0].Arguments())
				seeds = append(seeds, struct{ schema, args []byte }{[]byte(fn.Parameters), args})
			}
		}
	}
	return seeds
}

// flatSchema is a one-property tool schema, the commonest shape of all.
const flatSchema = `{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}`

func BenchmarkValidateFlat(b *testing.B) {
	s, err := Compile([]byte(flatSchema))
	if err != nil {
		b.Fatal(err)
	}
	full := *s
	full.fast = nil
	v, err := Decode([]byte(`{"location":"Boston, MA"}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		s    *Schema
	}{{"full", &full}, {"fast", s}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if errs := bc.s.Validate(v); errs != nil {
					b.Fatal(errs)
				}
			}
		})
	}
}

// BenchmarkExplain is Validate on invalid arguments with explain, against
// the validator alone (-validator): a key in the wrong letter case for a
// one-property schema; and, by doubling, an array of n valid items whose
// last is of the wrong type (explained) or over a bound (which explain
// leaves to the validator, after walking the whole array).
func BenchmarkExplain(b *testing.B) {
	flat, err := Compile([]byte(flatSchema))
	if err != nil {
		b.Fatal(err)
	}
	list, err := Compile([]byte(`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"]}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	items := func(n int, last string) string {
		return `{"l":[` + strings.Repeat(`{"n":1},`, n-1) + `{"n":` + last + `}]}`
	}
	type arm struct {
		name string
		s    *Schema
		args string
	}
	arms := []arm{{"missing-key", flat, `{"Location":"Boston, MA"}`}}
	for _, n := range []int{1000, 2000, 4000, 8000} {
		arms = append(arms, arm{fmt.Sprintf("wrong-type-%d", n), list, items(n, `"x"`)},
			arm{fmt.Sprintf("over-bound-%d", n), list, items(n, `9`)})
	}
	for _, a := range arms {
		v, err := Decode([]byte(a.args))
		if err != nil {
			b.Fatal(err)
		}
		validator := *a.s
		validator.explains = false
		for _, s := range []*Schema{a.s, &validator} {
			name := a.name
			if !s.explains {
				name += "-validator"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if errs := s.Validate(v); len(errs) != 1 {
						b.Fatal(errs)
					}
				}
			})
		}
	}
}

// TestFastPathNeedsNoAllocations: the point of the fast path.
func TestFastPathNeedsNoAllocations(t *testing.T) {
	s, err := Compile([]byte(flatSchema))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := Decode([]byte(`{"location":"Boston, MA"}`))
	if n := testing.AllocsPerRun(100, func() { s.Validate(v) }); n != 0 {
		t.Errorf("%v allocations per validation", n)
	}
}

// Values for generated schemas and arguments: the edges of each keyword.
var (
	genNumbers = []string{"0", "-0", "1", "1.0", "1e0", "1e2", "100", "1.5", "15e-1", "-2", "2.50", "0.1e1",
		"14", "14.0000000000000000001", "1e-7", "9007199254740993", "9007199254740992.0"}
	genStrings = []string{`""`, `"a"`, `"añ"`, `"añ€"`, `"celsius"`, `"1"`, `"null"`, `"\u0000"`}
	genTypes   = []string{"null", "boolean", "number", "integer", "string", "array", "object"}
)

// genSchema writes a random subschema of the kinds the fast path reads,
// with now and then a keyword it does not.
func genSchema(r *rand.Rand, depth int) string {
	if r.IntN(12) == 0 {
		return []string{"true", "false"}[r.IntN(2)]
	}
	var kw []string
	add := func(k, v string) { kw = append(kw, fmt.Sprintf("%q:%s", k, v)) }
	pick := func(l []string) string { return l[r.IntN(len(l))] }
	if r.IntN(3) > 0 {
		if r.IntN(3) == 0 {
			add("type", fmt.Sprintf(`[%q,%q]`, pick(genTypes[:3]), pick(genTypes[3:])))
		} else {
			add("type", fmt.Sprintf("%q", pick(genTypes)))
		}
	}
	if r.IntN(4) == 0 {
		var vals []string
		for range 1 + r.IntN(3) {
			vals = append(vals, pick([]string{pick(genNumbers), pick(genStrings), "true", "null", `{"a":1}`}))
		}
		add("enum", "["+strings.Join(vals, ",")+"]")
	}
	if r.IntN(8) == 0 {
		add("const", pick([]string{pick(genNumbers), pick(genStrings), "false"}))
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if r.IntN(8) == 0 {
			add(k, pick(genNumbers))
		}
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"} {
		if r.IntN(10) == 0 {
			add(k, pick([]string{"0", "1", "2", "3", "2.0"}))
		}
	}
	if depth < 3 && r.IntN(3) == 0 {
		add("items", genSchema(r, depth+1))
	}
	if depth < 3 && r.IntN(2) == 0 {
		var props []string
		for _, name := range []string{"a", "b", "c"}[:r.IntN(4)] {
			props = append(props, fmt.Sprintf("%q:%s", name, genSchema(r, depth+1)))
		}
		add("properties", "{"+strings.Join(props, ",")+"}")
	}
	if r.IntN(4) == 0 {
		add("required", pick([]string{`[]`, `["a"]`, `["a","b"]`, `["c"]`}))
	}
	if r.IntN(4) == 0 {
		if depth < 3 && r.IntN(2) == 0 {
			add("additionalProperties", genSchema(r, depth+1))
		} else {
			add("additionalProperties", pick([]string{"true", "false"}))
		}
	}
	if r.IntN(20) == 0 {
		add(pick([]string{"format", "pattern", "uniqueItems", "description", "optional"}), pick([]string{`"date"`, `"^a"`, "true", "false"}))
	}
	r.Shuffle(len(kw), func(i, j int) { kw[i], kw[j] = kw[j], kw[i] })
	return "{" + strings.Join(kw, ",") + "}"
}

// genValue writes a random JSON value, often an object of the properties
// the schemas name.
func genValue(r *rand.Rand, depth int) string {
	pick := func(l []string) string { return l[r.IntN(len(l))] }
	switch n := r.IntN(10); {
	case depth < 3 && n < 3:
		var members []string
		for _, name := range []string{"a", "b", "c", "d"} {
			if r.IntN(2) == 0 {
				members = append(members, fmt.Sprintf("%q:%s", name, genValue(r, depth+1)))
			}
		}
		return "{" + strings.Join(members, ",") + "}"
	case depth < 3 && n < 4:
		var items []string
		for range r.IntN(4) {
			items = append(items, genValue(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	case n < 6:
		return pick(genNumbers)
	case n < 8:
		return pick(genStrings)
	}
	return pick([]string{"true", "false", "null"})
}

// TestFastPathAgreesOnGeneratedSchemas runs the fast path and the validator
// on random flat schemas and arguments built from the edges of each keyword.
func TestFastPathAgreesOnGeneratedSchemas(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var fast, proven, missed, invalid, explained, n int
	for range 5000 {
		s, err := Compile([]byte(genSchema(r, 0)))
		if err != nil || s.fast == nil {
			continue
		}
		fast++
		for range 4 {
			v, err := Decode([]byte(genValue(r, 0)))
			if err != nil {
				t.Fatal(err)
			}
			n++
			if fastAgrees(t, s, v) {
				proven++
			} else if s.validateFull(v, nil, MaxSteps) == nil {
				missed++
			} else if _, isObject := v.(map[string]any); isObject && checkNumbers(v, "") == nil {
				invalid++
				if explainAgrees(t, s, v) {
					explained++
				}
			}
		}
	}
	t.Logf("%d schemas with a fast path; the fast path proved %d of %d arguments valid, and left %d valid ones to the validator; "+
		"of %d invalid objects, explain said the errors of %d", fast, proven, n, missed, invalid, explained)
	if fast < 2500 || proven < n/20 || explained < invalid/2 {
		t.Errorf("the generator makes too few cases the fast path answers")
	}
}

// TestValidJSONGivesUp: where reading the bytes in place could differ from
// decoding them, the fast path on bytes does not answer; elsewhere it does.
func TestValidJSONGivesUp(t *testing.T) {
	deep := strings.Repeat("[", maxDecodeDepth+1) + strings.Repeat("]", maxDecodeDepth+1)
	for _, tc := range []struct {
		name, schema, args string
		proven             bool
	}{
		{"flat", `{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, `{"s":"a\nb"}`, true},
		{"escaped-name", `{"type":"object","required":["s"]}`, `{"\u0073":1}`, false},
		// Decoded, the object has one member: minProperties fails.
		{"repeated-name", `{"type":"object","minProperties":2}`, `{"a":1,"a":1}`, false},
		{"lone-surrogate", `{"type":"object","properties":{"s":{"enum":["\ufffd"]}}}`, `{"s":"\ud800"}`, false},
		{"not-utf8", `{"type":"object","properties":{"s":{"maxLength":1}}}`, "{\"s\":\"\xff\"}", false},
		// Deeper than the decoder goes: Decode fails.
		{"too-deep", `{"type":"object"}`, `{"a":` + deep + `}`, false},
		{"trailing-data", `{"type":"object"}`, `{} {}`, false},
		{"huge-exponent", `{"type":"object"}`, `{"n":1e999999}`, false},
		// Not JSON, though a lenient reader could take them.
		{"leading-zero", `{"type":"object"}`, `{"n":01}`, false},
		{"trailing-comma", `{"type":"object"}`, `{"n":[1,],}`, false},
		{"control-character", `{"type":"object"}`, "{\"s\":\"a\x01\"}", false},
		{"bad-escape", `{"type":"object"}`, `{"s":"\q"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil || s.fast == nil {
				t.Fatalf("no fast path: %v", err)
			}
			if got := rawAgrees(t, s, []byte(tc.args)); got != tc.proven {
				t.Errorf("proven on bytes: %v, want %v", got, tc.proven)
			}
		})
	}
}

// TestExplain: for each kind of failure explain says, and for names that
// need escaping or quoting, its errors are the validator's; where it cannot
// say them exactly, it leaves them to the validator.
func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		name, schema, args string
		explained          bool
	}{
		{"required", `{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`, `{"Selector":"#a"}`, true},
		{"names-to-escape", `{"type":"object","properties":{"a/b~c":{"type":"string"},"d e%f":{"type":"integer"},"it's \"x\"\\":{"type":"boolean"}},"required":["a/b~c","é\n","it's \"x\"\\"]}`,
			`{"a/b~c":1,"d e%f":1.5,"it's \"x\"\\":"no"}`, true},
		{"additional-false", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":"x","z":1,"y":2,"x y":3}`, true},
		{"additional-schema", `{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string","maxLength":2}}`, `{"a":1,"b":"long","c":5}`, true},
		{"enum-few", `{"type":"object","properties":{"u":{"enum":["c","f",null]}}}`, `{"u":"k"}`, true},
		{"enum-many", `{"type":"object","properties":{"u":{"type":"string","enum":["a","b","c","d","e"]}}}`, `{"u":"z"}`, true},
		{"enum-numbers", `{"type":"object","properties":{"n":{"enum":[1,2.5,1e2]}}}`, `{"n":3}`, true},
		{"integer", `{"type":"object","properties":{"n":{"type":["integer","null"]}}}`, `{"n":2.5}`, true},
		{"items", `{"type":"object","properties":{"l":{"type":"array","minItems":4,"items":{"type":"object","required":["k"]}}}}`, `{"l":[{},{"k":1},3]}`, true},
		{"sizes", `{"type":"object","minProperties":3,"properties":{"s":{"minLength":3},"t":{"maxLength":1}}}`, `{"s":"é","t":"ab"}`, true},
		{"const", `{"type":"object","properties":{"c":{"const":"on"}}}`, `{"c":"off"}`, true},
		{"draft-07-items", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"items":{"type":"integer"}},"c":{"const":null}}}`, `{"l":[1,"2",3.5],"c":0}`, true},
		{"const-draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"c":{"const":"on"},"d":{"type":"string"}}}`, `{"c":"off","d":1}`, true},
		{"enum-percent", `{"type":"object","properties":{"u":{"enum":["%","100%d"]}}}`, `{"u":""}`, true},
		{"enum-empty", `{"type":"object","properties":{"e":{"enum":[],"type":"string"}},"required":["r"]}`, `{"e":"x"}`, true},
		{"const-object", `{"type":"object","properties":{"c":{"const":{"a":1}}}}`, `{"c":{"a":2}}`, false},
		{"enum-of-arrays", `{"type":"object","properties":{"e":{"enum":[[1],"a"]}}}`, `{"e":"b"}`, false},
		{"bound", `{"type":"object","properties":{"n":{"type":"number","minimum":3}}}`, `{"n":2}`, false},
		{"false-schema", `{"type":"object","properties":{"n":false}}`, `{"n":2}`, false},
		{"many-declared", `{"type":"object","properties":{"a":{},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{},"i":{},"j":{},"m":{},"n":{},"k":{"type":"string"},"l":{"type":"string"}}}`, `{"l":1,"k":2}`, true},
		{"too-many", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if !s.explains {
				t.Fatal("explain does not read this schema")
			}
			v, err := Decode([]byte(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if got := explainAgrees(t, s, v); got != tc.explained {
				t.Errorf("explained: %v, want %v (validator: %q)", got, tc.explained, s.validator(v))
			}
			// Validate returns what explain or the validator says (which of
			// more than MaxErrors errors the validator keeps varies).
			if errs, want := s.Validate(v), s.validator(v); len(errs) != len(want) ||
				len(want) < MaxErrors && !slices.Equal(normalErrors(errs), normalErrors(want)) {
				t.Errorf("Validate: %q, want %q", errs, want)
			}
		})
	}
}

// TestQuote: appendQuoted is the validator's quoting, for any name.
func TestQuote(t *testing.T) {
	for _, name := range []string{"a", "", "it's", `"x"`, `a\b`, "é", "a\nb", "\x00", "\xff", "\u2028", "a b~/%"} {
		s := fmt.Sprintf("%q", name)
		s = strings.ReplaceAll(s, `\"`, `"`)
		s = strings.ReplaceAll(s, `'`, `\'`)
		if want, got := "'"+s[1:len(s)-1]+"'", string(appendQuoted(nil, name)); got != want {
			t.Errorf("appendQuoted(%q) = %s, want %s", name, got, want)
		}
	}
}
