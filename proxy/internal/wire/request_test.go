package wire

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// readRequestKnown reads body with ReadRequest through r, with known
// skipping seed's items up to end (where body repeats them) and value
// skipping seed's tools (where body holds them), and compares the reading
// with ReadRequest's in full, without templates or known parts: the same
// error, the same members, and the items after what it skipped.
// The calls recorded are checked for testItems and, without templates, for
// itemCalls.
func readRequestKnown(t *testing.T, r Repeats, body, seed []byte, end int) {
	t.Helper()
	readRequestItems(t, r, testItems, body, seed, end)
	readRequestItems(t, Repeats{}, itemCalls, body, seed, end)
}

func readRequestItems(t *testing.T, r Repeats, items Items, body, seed []byte, end int) {
	t.Helper()
	full, ferr := ReadRequest(body, membersShape, items, nil, nil, Repeats{})
	defer full.Release()
	var known KnownPrefix
	var value KnownValue
	at := NewMembers("messages")
	defer at.Release()
	if StrictMembers(seed, membersShape, at) == nil && at.Object() {
		start := at.ItemsValue().Index
		known = func(b []byte, from int) int {
			if end <= start || from != start || len(b) < end || !slices.Equal(b[:end], seed[:end]) {
				return 0
			}
			return end - from
		}
		tools := []byte(at.Get("tools").Raw)
		value = func(name string, b []byte, from int) int {
			if name != "tools" || len(tools) == 0 || !bytes.HasPrefix(b[from:], tools) {
				return 0
			}
			return len(tools)
		}
	}
	m, err := ReadRequest(body, membersShape, items, known, value, r)
	defer m.Release()
	if fmt.Sprint(err) != fmt.Sprint(ferr) {
		t.Fatalf("%q (seed %q): error %v, in full %v", body, seed, err, ferr)
	}
	if err != nil {
		return
	}
	if !slices.Equal(m.top, full.top) || m.Object() != full.Object() {
		t.Fatalf("%q: members %+v, in full %+v", body, m.top, full.top)
	}
	spans, ok := m.Items()
	fspans, fok := full.Items()
	skipped := 0
	for m.Known() > 0 && skipped < len(fspans) && fspans[skipped].End-full.ItemsValue().Index <= m.Known() {
		skipped++
	}
	if ok != fok || !slices.Equal(spans, fspans[skipped:]) {
		t.Fatalf("%q with %d bytes known: items %v (%v), in full %v (%v)", body, m.Known(), spans, ok, fspans, fok)
	}
	checkCalls(t, full, items)
	// The calls of the items read, as the full reading records them; none
	// recorded for a request read as a template it repeats.
	calls, cok := m.Calls()
	fcalls, fcok := full.Calls()
	var want []Call
	for _, c := range fcalls {
		if c.Item >= skipped {
			c.Item -= skipped
			want = append(want, c)
		}
	}
	if cok && (!fcok || !slices.Equal(calls, want)) || !cok && fcok && (m.rep.tp == nil || m.rep.full) {
		t.Fatalf("%q with %d bytes known: calls %v (%v), in full %v (%v)", body, m.Known(), calls, cok, want, fcok)
	}
}

// testItems are the items readRequestKnown reads: messages, whose calls
// are the values of their tool_calls arrays and their function_call (as
// chat's), and the values of their content arrays with their type (as
// Messages' blocks).
var testItems = Items{Name: "messages", Calls: []CallMember{
	{Name: "tool_calls", Args: []string{"function", "arguments"}},
	{Name: "function_call", One: true, Args: []string{"arguments"}},
	{Name: "content", Args: []string{"input"}, Type: "type"},
}}

// itemCalls are the items readRequestKnown reads again: messages that are
// calls themselves (as Responses' input items).
var itemCalls = Items{Name: "messages", Calls: []CallMember{{Args: []string{"arguments"}, Type: "type"}}}

// checkCalls checks that the calls m recorded are those gjson finds in its
// items, in the body's order, with their arguments and type where gjson
// finds them: for testItems, each value of an item's tool_calls and content
// arrays, and its function_call object; for itemCalls, each item that is an
// object.
func checkCalls(t *testing.T, m *Members, items Items) {
	t.Helper()
	spans, ok := m.Items()
	calls, cok := m.Calls()
	if cok != ok {
		t.Fatalf("%q: calls recorded %v, items %v", m.Body(), cok, ok)
	}
	if !ok {
		return
	}
	call := func(i, member int, c gjson.Result, args string) Call {
		return Call{Item: i, Member: member, Span: Span{c.Index, c.Index + len(c.Raw)}, Args: spanOf(c.Get(args)), Type: spanOf(c.Get("type"))}
	}
	var want []Call
	for i, s := range spans {
		item := m.Item(s)
		if items.Calls[0].Name == "" {
			if item.IsObject() {
				want = append(want, call(i, 0, item, "arguments"))
			}
			continue
		}
		var found []Call
		item.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
			if item.Get("tool_calls").IsArray() {
				c := call(i, 0, c, "function.arguments")
				c.Type = Span{}
				found = append(found, c)
			}
			return true
		})
		if fc := item.Get("function_call"); fc.IsObject() {
			c := call(i, 1, fc, "arguments")
			c.Type = Span{}
			found = append(found, c)
		}
		item.Get("content").ForEach(func(_, c gjson.Result) bool {
			if item.Get("content").IsArray() {
				found = append(found, call(i, 2, c, "input"))
			}
			return true
		})
		slices.SortFunc(found, func(a, b Call) int { return a.Start - b.Start })
		want = append(want, found...)
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("%q: calls %v, gjson finds %v", m.Body(), calls, want)
	}
	// A call's type as gjson reads it at its place.
	for _, c := range calls {
		got, want := m.TypeOf(c), gjson.Result{}
		if c.Type.End > 0 {
			want = m.Item(c.Type)
		}
		if got.Type != want.Type || got.Str != want.Str || got.Raw != want.Raw || got.Index != want.Index {
			t.Fatalf("%q: type %+v, gjson reads %+v", m.Body(), got, want)
		}
	}
}

// TestReadRequestRepeats: a client's request that repeats the shape of its
// last one, with other strings and numbers, is read as it was, no template
// made; one that hides a duplicate name, a name in another letter case or
// invalid UTF-8 in a value's place is refused as the full reading refuses
// it; a request whose known parts were skipped makes no template (what it
// recorded is not of every byte); another client's request repeats nothing.
func TestReadRequestRepeats(t *testing.T) {
	c := NewTemplates()
	r := c.For(1)
	first := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`)
	readRequestKnown(t, r, first, nil, 0)
	tp := c.by[1][0]
	if tp == nil {
		t.Fatal("the first request made no template")
	}
	again := []byte(`{"model":"another-model","messages":[{"role":"user","content":"what \"now\"? \u00e9"}],"tools":[{"type":"function"}]}`)
	readRequestKnown(t, r, again, nil, 0)
	if c.by[1][0] != tp || c.by[1][1] != nil {
		t.Fatal("a request of the same shape made a template")
	}
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi","content":"x"}],"tools":[{"type":"function"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi","Content":"x"}],"tools":[{"type":"function"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}],"tools":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"h` + "\xff" + `"}],"tools":[{"type":"function"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}x`,
		`{"model":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`,
	} {
		readRequestKnown(t, r, []byte(body), nil, 0)
	}

	// A request whose known prefix, or tools, were skipped.
	c = NewTemplates()
	r = c.For(1)
	seed := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"}],"tools":[{"type":"function"}]}`)
	next := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"},{"role":"user","content":"b"}],"tools":[{"type":"function"}]}`)
	end := bytes.Index(seed, []byte(`]`))
	readRequestKnown(t, r, next, seed, end)
	if c.by[1][0] != nil {
		t.Fatal("a request read without its known parts made a template")
	}
	readRequestKnown(t, r, next, nil, 0)
	if c.by[1][0] == nil {
		t.Fatal("a request read in full made no template")
	}
	// The template serves the same shape with its known parts offered.
	tp = c.by[1][0]
	readRequestKnown(t, r, next, seed, end)
	if c.by[1][0] != tp {
		t.Fatal("a request that repeats a template was read again")
	}

	// Another client's.
	readRequestKnown(t, c.For(2), next, nil, 0)
	if c.by[2][0] == nil || c.by[2][0] == tp {
		t.Fatal("another client's request was read as the first client's")
	}

	// A request larger than a template is read, and kept as none.
	large := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", maxTemplateBytes) + `"}]}`)
	readRequestKnown(t, c.For(3), large, nil, 0)
	if _, ok := c.by[3]; ok {
		t.Fatal("a request larger than a template was kept as one")
	}
}

// FuzzReadRequest: a client's requests read through its templates, in the
// order a, b, a, c, b, each with a known prefix of a's items and a's tools
// offered, agree with the reading of each in full.
func FuzzReadRequest(f *testing.F) {
	for i, seed := range knownSeeds {
		for j, tail := range knownTails {
			f.Add(seed, uint8(i+j), tail, knownSeeds[(i+1)%len(knownSeeds)])
		}
	}
	f.Fuzz(func(t *testing.T, a string, pick uint8, tail, c string) {
		end := 0
		if prefixes := knownPrefixes(t, []byte(a)); len(prefixes) > 0 {
			end = prefixes[int(pick)%len(prefixes)]
		}
		b := a[:end] + tail
		r := NewTemplates().For(1)
		for _, body := range []string{a, b, a, c, b} {
			readRequestKnown(t, r, []byte(body), []byte(a), end)
		}
	})
}

// BenchmarkReadRequest reads a client's requests through its templates
// ("templates") and without ("strict"): requests that repeat one shape with
// another question; and, the dearest case, requests of three shapes in turn
// that share a text of 1 to 8 KB and differ only after it, so that each is
// compared with both templates to its end in vain, then read in full and
// kept. Its cost must double with the text, at most a few times what the
// strict reading alone costs.
func BenchmarkReadRequest(b *testing.B) {
	ask := func(q string) []byte {
		return []byte(`{"model":"m","messages":[{"role":"user","content":"` + q + `"}],"tools":[{"type":"function"}]}`)
	}
	type bench struct {
		name   string
		bodies [][]byte
	}
	cases := []bench{{"repeats", [][]byte{ask("Click the button."), ask("Click the other button, now.")}}}
	for _, kb := range []int{1, 2, 4, 8} {
		text := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", kb<<10) + `"}]`
		cases = append(cases, bench{fmt.Sprintf("three-shapes-%dKB", kb),
			[][]byte{[]byte(text + `}`), []byte(text + `,"tools":null}`), []byte(text + `,"user":null}`)}})
	}
	for _, c := range cases {
		for _, arm := range []string{"templates", "strict"} {
			b.Run(c.name+"/"+arm, func(b *testing.B) {
				r := Repeats{}
				if arm == "templates" {
					r = NewTemplates().For(1)
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					m, err := ReadRequest(c.bodies[i%len(c.bodies)], membersShape, Items{Name: "messages"}, nil, nil, r)
					if err != nil {
						b.Fatal(err)
					}
					m.Release()
				}
			})
		}
	}
}

// spanOf is where v is, an empty Span when it is missing.
func spanOf(v gjson.Result) Span {
	if !v.Exists() {
		return Span{}
	}
	return Span{v.Index, v.Index + len(v.Raw)}
}

// TestCallsPastMaxCalls: up to MaxCalls calls are recorded; past it none
// is, and their readers walk the items.
func TestCallsPastMaxCalls(t *testing.T) {
	for _, n := range []int{MaxCalls, MaxCalls + 1} {
		body := []byte(`{"messages":[{"role":"assistant","tool_calls":[` + strings.Repeat(`{},`, n-1) + `{}]}]}`)
		m, err := ReadRequest(body, membersShape, testItems, nil, nil, Repeats{})
		if err != nil {
			t.Fatal(err)
		}
		calls, ok := m.Calls()
		if want := n <= MaxCalls; ok != want || ok && len(calls) != n || !ok && len(calls) != 0 {
			t.Errorf("%d calls: %d recorded (%v)", n, len(calls), ok)
		}
		m.Release()
	}
}
