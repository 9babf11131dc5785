package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fanOut is the schema of the exponential-validation report: each level
// refers to the next twice, so the validator would visit 2^levels schemas.
func fanOut(levels int, allOf bool) string {
	var defs []string
	for i := range levels {
		next := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, i+1)
		if allOf {
			defs = append(defs, fmt.Sprintf(`"l%d":{"allOf":[%s,%s]}`, i, next, next))
		} else {
			defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[%s,{"allOf":[%s]}]}`, i, next, next))
		}
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object"}`, levels))
	return `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// TestExponentialSchemaIsNotRun: the cost of validating one call is bounded
// whatever the schema's references fan out to. A schema whose expanded size
// is over MaxExpandedNodes does not compile, so its calls pass unchecked
// without any walk.
func TestExponentialSchemaIsNotRun(t *testing.T) {
	for _, allOf := range []bool{false, true} {
		_, err := Compile([]byte(fanOut(22, allOf)))
		var tooLarge ErrSchemaTooLarge
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "expanded") {
			t.Errorf("allOf=%v: compile error %v, want the schema refused for its expanded size", allOf, err)
		}
	}
	// Under the expanded limit, the walk still bounds a call: 10 levels
	// expand to about 2^12 subschemas, counted against the budget.
	s, err := Compile([]byte(fanOut(10, true)))
	if err != nil {
		t.Fatal(err)
	}
	if s.Expanded() < 1<<11 || s.Expanded() > MaxExpandedNodes {
		t.Errorf("10 levels: expanded size %d", s.Expanded())
	}
	if steps, err := s.cost(map[string]any{"a": "5"}, 1000); !errors.Is(err, ErrOverBudget) || steps > 1001 {
		t.Errorf("10 levels: cost %d, %v: want the walk stopped at a budget of 1000", steps, err)
	}
	// A handful of levels is cheap and validated as usual.
	s, err = Compile([]byte(fanOut(4, true)))
	if err != nil {
		t.Fatal(err)
	}
	if steps, err := s.cost(map[string]any{}, MaxSteps); err != nil || steps > 100 {
		t.Errorf("4 levels: cost %d, %v", steps, err)
	}
	if errs := s.Validate(map[string]any{}); errs != nil {
		t.Errorf("4 levels: %v", errs)
	}
}

// TestRecursiveSchemaFanOutIsBounded: a schema that refers to itself twice
// per level fans out with the depth of the arguments, not of the schema.
func TestRecursiveSchemaFanOutIsBounded(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","anyOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	deep, _ := Decode([]byte(strings.Repeat(`{"a":`, 40) + `{}` + strings.Repeat(`}`, 40)))
	if errs := s.Validate(deep); !Unchecked(errs) {
		t.Errorf("40 levels, two branches each: %v, want unchecked", errs)
	}
	shallow, _ := Decode([]byte(`{"a":{"a":{}}}`))
	if errs := s.Validate(shallow); errs != nil {
		t.Errorf("3 levels: %v", errs)
	}
}

// TestHugeNumbers: numbers the validator would compare as enormous exact
// rationals are invalid arguments, and make a schema not compile.
func TestHugeNumbers(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"n":{"type":"number","minimum":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1e999999", "-1e400", "1e-999999", strings.Repeat("9", 1000)} {
		_, errs := s.ValidateJSON([]byte(`{"n":` + n + `}`))
		if len(errs) != 1 || errs[0].Keyword != "number" || errs[0].Path != "/n" || len(errs[0].Message) > 120 {
			t.Errorf("%.20s: %v, want one number error at /n", n, errs)
		}
	}
	// Deeper, the path is the number's.
	if _, errs := s.ValidateJSON([]byte(`{"a":[1,{"b/c":1e999999}]}`)); len(errs) != 1 || errs[0].Keyword != "number" || errs[0].Path != "/a/1/b~1c" {
		t.Errorf("a nested huge number: %v, want one number error at /a/1/b~1c", errs)
	}
	if _, errs := s.ValidateJSON([]byte(`{"n":1.7976931348623157e308}`)); errs != nil {
		t.Errorf("the largest float64: %v", errs)
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"n":{"enum":[1e999999]}}}`,
		`{"type":"object","properties":{"n":{"const":1e999999}}}`,
		`{"type":"object","properties":{"n":{"minimum":-1e999999}}}`,
	} {
		if _, err := Compile([]byte(schema)); err == nil {
			t.Errorf("%s compiled", schema)
		}
	}
}

// TestPatternProgramSize: a pattern whose program is over the limit makes
// the schema not compile; one under it costs steps in proportion to the text.
func TestPatternProgramSize(t *testing.T) {
	if _, err := Compile([]byte(`{"type":"object","properties":{"s":{"pattern":"(\\p{L}|\\p{N}){500}z"}}}`)); err == nil {
		t.Error(`(\p{L}|\p{N}){500}z compiled`)
	}
	if _, err := Compile([]byte(`{"type":"object","patternProperties":{"(\\p{L}|\\p{N}){500}z":{}}}`)); err == nil {
		t.Error(`the pattern as a patternProperties key compiled`)
	}
	s, err := Compile([]byte(`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+@[a-z]+\\.[a-z]{2,}$"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	long := map[string]any{"s": strings.Repeat("a", 1<<20)}
	steps, _ := s.cost(long, MaxSteps)
	if steps < 1<<20/patternCostDivisor {
		t.Errorf("a 1 MB string against a pattern cost %d steps", steps)
	}
}

// TestRegexFormatCostsSteps: where the format "regex" is asserted, the
// validator compiles the string, about 1 µs a byte: a megabyte of it goes
// over the budget instead of costing a second; a real one costs little;
// where the format is an annotation it costs nothing.
func TestRegexFormatCostsSteps(t *testing.T) {
	long := map[string]any{"s": strings.Repeat("a.", 1<<19)}
	for _, tt := range []struct {
		name, schema string
		charged      bool
	}{
		{"no $schema", `{"type":"object","properties":{"s":{"type":"string","format":"regex"}}}`, true},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"s":{"format":"regex"}}}`, true},
		{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"s":{"format":"regex"}}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.cost(long, MaxSteps)
			if got := errors.Is(err, ErrOverBudget); got != tt.charged {
				t.Errorf("a 1 MB regex: over the budget %v, want %v", got, tt.charged)
			}
			if steps, err := s.cost(map[string]any{"s": "^[a-z]+$"}, MaxSteps); err != nil || steps > 100 {
				t.Errorf("a short regex cost %d steps (%v)", steps, err)
			}
			if tt.charged {
				errs := s.Validate(long)
				if len(errs) != 1 || !strings.Contains(errs[0].Message, "budget") {
					t.Errorf("a 1 MB regex validated to %v, want it unchecked", errs)
				}
			}
		})
	}
}

// TestErrorsAreBounded: an enum of hundreds of values failing for
// thousands of properties makes at most MaxErrors errors, none quoting the enum.
func TestErrorsAreBounded(t *testing.T) {
	var enum []string
	for i := range 300 {
		enum = append(enum, fmt.Sprintf(`"value-%d"`, i))
	}
	s, err := Compile([]byte(`{"type":"object","additionalProperties":{"enum":[` + strings.Join(enum, ",") + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, 500)
	for i := range items {
		items[i] = fmt.Sprintf(`"k%d":"nope"`, i)
	}
	_, errs := s.ValidateJSON([]byte(`{` + strings.Join(items, ",") + `}`))
	if len(errs) != MaxErrors {
		t.Fatalf("%d errors, want %d", len(errs), MaxErrors)
	}
	total := 0
	for _, e := range errs {
		total += len(e.Message)
		if len(e.Message) > maxMessage+60 {
			t.Errorf("a %d-byte message: %.200s", len(e.Message), e.Message)
		}
	}
	if !strings.Contains(errs[0].Message, "one of the 300 values") || !strings.Contains(errs[len(errs)-1].Message, "484 more errors") {
		t.Errorf("messages: %q ... %q", errs[0].Message, errs[len(errs)-1].Message)
	}
	if total > 8<<10 {
		t.Errorf("%d bytes of messages", total)
	}
}

// TestCacheIsBoundedByBytes: the cache evicts by the estimated memory of
// what it holds, not only by count.
func TestCacheIsBoundedByBytes(t *testing.T) {
	c := NewCache(1024)
	const max = 4 << 20
	c.SetMaxBytes(max)
	for i := range 50 {
		raw := fmt.Sprintf(`{"type":"object","description":%q}`, strings.Repeat(fmt.Sprint(i), 20000))
		if _, err := c.Get([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Bytes > max {
			t.Fatalf("after %d schemas the cache holds an estimated %d bytes, over %d", i+1, st.Bytes, max)
		}
	}
	if st := c.Stats(); st.Size >= 50 || st.Size == 0 {
		t.Errorf("%d schemas kept", st.Size)
	}
}

// TestDecodeRefusesTrailingData: Decode takes one JSON value with JSON's
// white space around it, and nothing else after it, as json.Valid reads
// a document.
func TestDecodeRefusesTrailingData(t *testing.T) {
	for _, in := range []string{`{}`, "{} \t\r\n", ` {"a":1}`, `{} {}`, `{} x`, "{}\v", "{}\u00a0", "{}\x00", `1 2`, `"a"`, `[] ]`, `{}/`, "{}\n\n"} {
		_, err := Decode([]byte(in))
		if (err == nil) != json.Valid([]byte(in)) {
			t.Errorf("Decode(%q): %v, json.Valid says %v", in, err, json.Valid([]byte(in)))
		}
	}
}
