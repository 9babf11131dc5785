package wire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var membersShape = Shape{"model": nil, "messages": Shape{"role": nil, "content": nil}, "tools": Shape{"type": nil}}

var membersSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[]}`,
	" {\n \"m\\u006fdel\" :\t\"x\" , \"messages\" : [ {\"role\":\"user\"} , [2] ,\"s\", null ] ,\"n\":1.5e3}\n",
	`{"messages":"not an array","model":{"a":[1,2,{"b":"}"}]}}`,
	`{"messages":[],"tools":[{"type":"function"}],"other":true}`,
	`{}`,
	`[1,2]`, `{"0":[null]}`,
	`"text"`,
	`{"a":"\u00e9\ud83d\ude00","messages":[{"content":"line\nbreak \"quoted\""}]}`,
}

// TestMembersAgree: the members and items that StrictMembers records as it
// reads a body are those gjson finds walking it (ReadMembers, and Get).
func TestMembersAgree(t *testing.T) {
	for _, body := range membersSeeds {
		checkMembers(t, []byte(body))
	}
	// Past MaxItems, no items are recorded.
	many := `{"messages":[` + strings.Repeat(`{"role":"user"},`, MaxItems) + `{"role":"user"}]}`
	m := NewMembers("messages")
	if err := StrictMembers([]byte(many), membersShape, m); err != nil {
		t.Fatal(err)
	}
	if spans, ok := m.Items(); ok || len(spans) != 0 {
		t.Errorf("%d items recorded (ok %v) for %d items, over MaxItems", len(spans), ok, MaxItems+1)
	}
	checkMembers(t, []byte(many))
}

func checkMembers(t *testing.T, body []byte) {
	t.Helper()
	m := NewMembers("messages")
	if err := StrictMembers(body, membersShape, m); err != nil {
		return // what Strict refuses is never read further
	}
	loose := ReadMembers(body, "messages")
	if m.Object() != loose.Object() || m.Object() != gjson.ParseBytes(body).IsObject() {
		t.Fatalf("%q: an object to the strict reading: %v; to gjson: %v", body, m.Object(), loose.Object())
	}
	if len(m.top) != len(loose.top) {
		t.Fatalf("%q: %d members recorded, gjson finds %d", body, len(m.top), len(loose.top))
	}
	for i, mb := range m.top {
		if mb != loose.top[i] {
			t.Fatalf("%q: member %d recorded as %+v, gjson finds %+v", body, i, mb, loose.top[i])
		}
		want := gjson.ParseBytes(body[mb.v.Start:mb.v.End])
		got := m.Get(mb.name)
		if got.Raw != want.Raw || got.Type != want.Type || got.Str != want.Str || got.Index != mb.v.Start {
			t.Fatalf("%q: Get(%q) = %+v, want %+v at %d", body, mb.name, got, want, mb.v.Start)
		}
	}
	// A Value finds what gjson finds, from the recorded members.
	paths := []string{"model", "messages", "messages.0", "messages.0.role", "tools.0.type", "a", "n", "other",
		"model.a.2.b", "missing", "missing.x", "", ".", "Model", "mess*", "messages.#", "model.a|@reverse"}
	for _, mb := range m.top {
		paths = append(paths, mb.name, mb.name+".role", mb.name+".0")
	}
	whole := Parse(body)
	for _, p := range paths {
		got, want := (Value{Result: whole, M: m}).Get(p), whole.Get(p)
		// (gjson gives a value not found the index of what it looked in.)
		if got.Raw != want.Raw || got.Type != want.Type || got.Str != want.Str || got.Num != want.Num || want.Exists() && got.Index != want.Index {
			t.Fatalf("%q: Value.Get(%q) = %#v, gjson finds %#v", body, p, got, want)
		}
	}
	// Fields finds in one pass what gjson finds member by member, in the
	// body and in each of its objects one level down.
	names := []string{"messages", "role", "content", "missing", "a", "b", "model"}
	for _, mb := range m.top {
		if plainPath(mb.name) == len(mb.name) && !slices.Contains(names, mb.name) {
			names = append(names, mb.name)
		}
	}
	checkFields(t, whole, names)
	whole.ForEach(func(_, v gjson.Result) bool {
		checkFields(t, v, names)
		v.ForEach(func(_, w gjson.Result) bool { checkFields(t, w, names); return true })
		return true
	})
	spans, ok := m.Items()
	lspans, lok := loose.Items()
	if ok != lok || len(spans) != len(lspans) {
		t.Fatalf("%q: items %v (%v), gjson finds %v (%v)", body, spans, ok, lspans, lok)
	}
	for i := range spans {
		if spans[i] != lspans[i] {
			t.Fatalf("%q: item %d at %v, gjson finds it at %v", body, i, spans[i], lspans[i])
		}
		if it := m.Item(spans[i]); it.Raw != string(body[spans[i].Start:spans[i].End]) || it.Index != spans[i].Start {
			t.Fatalf("%q: Item(%v) = %+v", body, spans[i], it)
		}
	}
}

func FuzzMembers(f *testing.F) {
	for _, s := range membersSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkMembers(t, body)
	})
}

// TestMembersLetGoOfManyMembers: a body of many top-level members (an
// upstream's event, read with the Members its stream keeps) leaves no room
// for them held once the next body is read.
func TestMembersLetGoOfManyMembers(t *testing.T) {
	m := NewMembers("")
	if err := StrictMembers(manyMembers(1000), nil, m); err != nil {
		t.Fatal(err)
	}
	if len(m.top) != 1000 {
		t.Fatalf("%d members recorded, want 1000", len(m.top))
	}
	if err := StrictMembers([]byte(`{"type":"x"}`), nil, m); err != nil {
		t.Fatal(err)
	}
	if len(m.top) != 1 || cap(m.top) > maxPooledMembers {
		t.Errorf("after a small body: %d members, room for %d (at most %d kept)", len(m.top), cap(m.top), maxPooledMembers)
	}
}

// TestMembersPastMaxMembers: a body of more than MaxMembers top-level
// members has none recorded, and Get still finds each as gjson does.
func TestMembersPastMaxMembers(t *testing.T) {
	body := manyMembers(MaxMembers + 1)
	m := NewMembers("")
	if err := StrictMembers(body, nil, m); err != nil {
		t.Fatal(err)
	}
	if len(m.top) != 0 || !m.overflow {
		t.Fatalf("%d members recorded past MaxMembers", len(m.top))
	}
	whole := Parse(body)
	for _, name := range []string{"m0", "m2048", fmt.Sprintf("m%d", MaxMembers), "absent"} {
		got, want := m.Get(name), whole.Get(name)
		if got.Raw != want.Raw || want.Exists() && got.Index != want.Index {
			t.Errorf("Get(%q) = %+v, gjson finds %+v", name, got, want)
		}
	}
	checkMembers(t, body)
}

// manyMembers is an object of n members, m0 to m(n-1).
func manyMembers(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"m0":0`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,"m%d":%d`, i, i)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// checkFields fails t when Fields, for names (distinct, none empty) and for
// each of its names alone, does not find in obj what obj.Get finds.
func checkFields(t *testing.T, obj gjson.Result, names []string) {
	t.Helper()
	out := make([]gjson.Result, len(names))
	Fields(obj, names, out)
	for i, n := range names {
		var one [1]gjson.Result
		Fields(obj, names[i:i+1], one[:])
		want := obj.Get(n)
		for _, got := range []gjson.Result{out[i], one[0]} {
			if got.Raw != want.Raw || got.Type != want.Type || got.Str != want.Str || got.Num != want.Num || want.Exists() && got.Index != want.Index {
				t.Fatalf("%q: Fields finds %q as %#v, gjson finds %#v", obj.Raw, n, got, want)
			}
		}
	}
}

// TestFields: Fields reads members as gjson's Get does, in the cases where
// a reading of its own could differ: a name escaped, a name twice, a value
// that is not an object, and an object within a body (its Index).
func TestFields(t *testing.T) {
	names := []string{"id", "function", "name", "arguments", "absent"}
	for _, body := range []string{
		`{"id":"call_1","type":"function","function":{"name":"click","arguments":"{\"a\":1}"}}`,
		`{"\u0069d":"escaped name","function":null}`,
		`{"id":"first","id":"second","name":{"x":[1,{"id":2}]}}`,
		`{"arguments":"x","name":1.5e3,"id":true}`,
		`[{"id":1}]`, `"id"`, `null`, `{}`, ``,
	} {
		checkFields(t, gjson.Parse(body), names)
		checkFields(t, gjson.Get(`{"x": `+body+`}`, "x"), names) // Index past 0
	}
	// The first of two members of one name is kept, as gjson keeps it.
	var out [1]gjson.Result
	if Fields(gjson.Parse(`{"id":"first","id":"second"}`), []string{"id"}, out[:]); out[0].Str != "first" {
		t.Errorf("Fields kept %q of two ids, want the first", out[0].Str)
	}
}

// TestSpanOf: a value's place is given only when the body holds its bytes
// there.
func TestSpanOf(t *testing.T) {
	body := []byte(`{"a":{"b":"x"},"c":1}`)
	b := gjson.GetBytes(body, "a").Get("b")
	if sp, ok := SpanOf(body, b); !ok || string(body[sp.Start:sp.End]) != `"x"` {
		t.Errorf("a.b: %v %v", sp, ok)
	}
	moved := b
	moved.Index++
	past := b
	past.Index = len(body) - 1
	for name, v := range map[string]gjson.Result{"absent": gjson.GetBytes(body, "d"), "moved": moved, "past the end": past, "unknown": {Type: gjson.String, Raw: `"x"`, Str: "x"}} {
		if sp, ok := SpanOf(body, v); ok || sp != (Span{}) {
			t.Errorf("%s: %v %v, want none", name, sp, ok)
		}
	}
}

// TestReadMembersOfACutString: a body cut short inside a string, read
// loosely (ReadMembers), gives what gjson gives (nothing): Get reads a
// string without escapes in place by taking off its quotes, which a string
// cut short does not have.
func TestReadMembersOfACutString(t *testing.T) {
	for _, body := range []string{`{"model":"abc`, `{"model":"a"`, `{"model":"`, `{"a":1,"model":"x\"y`} {
		got, want := ReadMembers([]byte(body), "messages").Get("model"), gjson.Get(body, "model")
		if got.Raw != want.Raw || got.Str != want.Str || got.Type != want.Type {
			t.Errorf("%q: Get = %q %q %v, gjson finds %q %q %v", body, got.Raw, got.Str, got.Type, want.Raw, want.Str, want.Type)
		}
	}
}
