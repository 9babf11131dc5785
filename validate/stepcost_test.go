package validate

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// A stepShape is a schema whose array items cost the validator a known
// number of budget steps each, and an item to fill the array with.
type stepShape struct {
	name, items string
	item        func(i int) string
}

func one(int) string { return "1" }

// stepShapes are the dearest kinds of visit measured, per step, and the
// ones that make the most steps per byte of arguments.
var stepShapes = []stepShape{
	{"allOf-8", `{"allOf":[{},{},{},{},{},{},{},{}]}`, one},
	{"anyOf-5-failing", `{"anyOf":[{"type":"string"},{"type":"boolean"},{"type":"null"},{"type":"array"},{"type":"object"}]}`, one},
	{"oneOf-4", `{"oneOf":[{"type":"integer"},{"type":"string"},{"type":"boolean"},{"type":"null"}]}`, one},
	{"not-4", `{"not":{"not":{"not":{"not":{}}}}}`, one},
	{"ref-chain", `{"$ref":"#/$defs/a"}`, one},
	{"minimum-failing", `{"type":"integer","minimum":2}`, one},
	{"uniqueItems", `{"type":"integer"}`, strconv.Itoa},
}

// shapeSchema is the schema of a tool whose one property "a" is an array of
// the shape's items.
func shapeSchema(sh stepShape) string {
	arr := `{"type":"array","items":` + sh.items
	if sh.name == "uniqueItems" {
		arr += `,"uniqueItems":true`
	}
	return `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/c"},"c":{"type":"integer"}},"properties":{"a":` + arr + `}}}`
}

// shapeArgs are arguments of n items of the shape.
func shapeArgs(sh stepShape, n int) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = sh.item(i)
	}
	return []byte(`{"a":[` + strings.Join(items, ",") + `]}`)
}

// spendRequest validates calls of the shape, each just under MaxSteps, with
// one request's shared budget until it is spent, as the ladder does with a
// reply of many such calls, and returns the calls it took.
func spendRequest(t testing.TB, sh stepShape) int {
	s, err := Compile([]byte(shapeSchema(sh)))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Decode(shapeArgs(sh, 1000))
	if err != nil {
		t.Fatal(err)
	}
	per, err := s.cost(v, MaxSteps)
	if err != nil {
		t.Fatal(err)
	}
	n := 1000 * (MaxSteps - 10) / per
	args := shapeArgs(sh, n)
	b := NewBudget(RequestSteps)
	for calls := 1; ; calls++ {
		_, errs := s.ValidateJSONWithin(args, b)
		if Spent(errs) {
			return calls
		}
		if Unchecked(errs) {
			t.Fatalf("%s: a call of %d items is over the per-call bound", sh.name, n)
		}
		if calls > RequestSteps {
			t.Fatalf("%s: the budget is never spent", sh.name)
		}
	}
}

// maxRequestAllocs bounds the allocations of one request's validation work
// spent to the last step: allocating is most of what the validator costs
// (6 to 25 allocations a step, 30 to 45 ns each with the collection they
// cause), so this bounds its CPU, about 0.45 s at the dearest rate, without
// timing anything.
const maxRequestAllocs = 12_000_000

// TestRequestBudgetBoundsValidatorWork: the request's budget is counted in
// steps of a walk that costs some 64 ns a step, and the validator costs
// 3 to 17 times that, so the budget was calibrated to the walk and not to
// what it bounds: five calls of 100,000 items under an eight-way allOf
// took 1.7 to 2.0 s of CPU on a loaded machine, for a 1 MB reply. Spending a
// request's whole budget, with calls of the dearest kinds of step, now
// allocates at most maxRequestAllocs (it allocated 25 to 100 million).
func TestRequestBudgetBoundsValidatorWork(t *testing.T) {
	for _, sh := range stepShapes {
		t.Run(sh.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			calls := spendRequest(t, sh)
			runtime.ReadMemStats(&after)
			allocs := after.Mallocs - before.Mallocs
			t.Logf("%d calls, %d allocations, %d MB allocated", calls, allocs, (after.TotalAlloc-before.TotalAlloc)>>20)
			if allocs > maxRequestAllocs {
				t.Errorf("spending one request's budget made %d allocations, want at most %d", allocs, maxRequestAllocs)
			}
		})
	}
}

// BenchmarkStepCost is what one budget step costs the validator, by kind of
// visit (ns/step, allocs/step), the figures MaxSteps and RequestSteps are
// calibrated on: go test ./validate -run '^$' -bench StepCost -benchmem.
func BenchmarkStepCost(b *testing.B) {
	for _, sh := range stepShapes {
		b.Run(sh.name, func(b *testing.B) {
			s, err := Compile([]byte(shapeSchema(sh)))
			if err != nil {
				b.Fatal(err)
			}
			v, err := Decode(shapeArgs(sh, 10_000))
			if err != nil {
				b.Fatal(err)
			}
			steps, err := s.cost(v, MaxSteps)
			if err != nil {
				b.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				validateValue(s.compiled, v)
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(steps), "allocs/step")
			b.ReportMetric(0, "ns/op")
		})
	}
}
