package wire

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// knownSeeds are bodies whose items a later body starts with; knownTails
// are what such a later body has after a prefix of them (the rest of its
// items, and its other members), valid or not.
var (
	knownSeeds = []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a \"b\" \u00e9"},{"role":"user","content":"c"}],"tools":[{"type":"function"}]}`,
		" {\n \"model\" :\t\"x\" , \"messages\" : [ {\"role\":\"user\"} ,\n [2] ,\"s\", null , {\"content\":{\"a\":[1,{\"b\":2}]}} ] ,\"n\":1.5e3}\n",
		`{"tools":[{"type":"function"}],"messages":[{"role":"system"},{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"a","function":{"arguments":"{}"}}, 1 ,[{"id":"b"}],{"id":"c"}]},{"role":"assistant","function_call":{"name":"f"},"tool_c\u0061lls":[{}]},{"tool_calls":{"id":"d"},"function_call":[{"id":"e"}]},{"role":"assistant","tool_calls":[{"function":[{"arguments":"{}"}]},{"function":"{\"arguments\":1}"},{"f\u0075nction":{"name":"g","\u0061rguments":{"a":1}}},{"function":{"x":{"arguments":1},"arguments":null}}],"function_call":{"arguments":7}}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","input":{"a":[1]}},"s",[{"type":"x"}],{"t\u0079pe":"tool_use","input":"{}"},{"input":1,"type":2},{}]},{"type":"function_call","arguments":"{}","name":"f"},{"arguments":{"a":1},"type":"message"},3]}`,
	}
	knownTails = []string{
		`]}`,
		`,{"role":"user"}]}`,
		` , {"role":"user","content":"new"} ] , "tools" : [ ] }`,
		`]`,
		`,{"role":"user","role":"user"}]}`,
		`,{"role":"user","Content":"x"}]}`,
		`,{"role":"user","content":"` + "\xff" + `"}]}`,
		`]}trailing`,
		`],"messages":[]}`,
		`],"Messages":[]}`,
		`,]}`,
		`,,{"role":"user"}]}`,
		`,{"role":"assistant","tool_calls":[{"id":"n"}],"function_call":{}}]}`,
		`{"role":"user"}]}`,
		`2]}`,
		`.5]}`,
		` ]  , "model" : "m" , "model" : "n" }`,
		`,{"role":"user"}]`,
		`,{"role":"user"}],"tools":[{"type":"function","Type":"x"}]}`,
		// The seeds' tools, which a reading may skip (see checkKnown).
		`],"tools":[{"type":"function"}]}`,
		`],"tools":[{"type":"function"}],"tools":[{"type":"function"}]}`,
		`],"tools":[{"type":"function"}],"Tools":[]}`,
		`],"tools":[{"type":"function"}]`,
		`],"tools":[{"type":"function"}] ,"model":"m"}`,
		`],"tools":[{"type":"function"}],"messages":[]}`,
	}
)

// TestStrictMembersKnownAgrees: a body whose items start with a prefix read
// before is read the same with the prefix skipped as in full: the same
// verdict and error, the same members, the items after the prefix.
func TestStrictMembersKnownAgrees(t *testing.T) {
	cases := 0
	for _, seed := range knownSeeds {
		for _, tail := range knownTails {
			prefixes := knownPrefixes(t, []byte(seed))
			if len(prefixes) == 0 {
				t.Fatalf("%q: no prefix to skip", seed)
			}
			for _, end := range prefixes {
				cases++
				checkKnown(t, []byte(seed[:end]+tail), []byte(seed), end)
			}
		}
	}
	t.Logf("%d bodies", cases)
}

// knownPrefixes reads seed in full and returns the end of each of its
// items: the bodies that start with seed[:end] can skip seed's items up to
// there.
func knownPrefixes(t testing.TB, seed []byte) []int {
	m := NewMembers("messages")
	defer m.Release()
	if err := StrictMembers(seed, membersShape, m); err != nil {
		return nil
	}
	spans, ok := m.Items()
	if !ok {
		return nil
	}
	var ends []int
	for _, s := range spans {
		ends = append(ends, s.End)
	}
	return ends
}

// checkKnown reads body in full, and with the prefix body[at:end] known
// (at: where seed's items begin, body[:end] being seed[:end]), seed's tools
// known (as body's tools, wherever they are), or both, and compares the
// readings.
func checkKnown(t *testing.T, body, seed []byte, end int) {
	t.Helper()
	full := NewMembers("messages")
	defer full.Release()
	ferr := StrictMembers(body, membersShape, full)

	at := NewMembers("messages")
	defer at.Release()
	if err := StrictMembers(seed, membersShape, at); err != nil {
		t.Fatalf("%q: %v", seed, err)
	}
	start := at.ItemsValue().Index
	asked := 0
	known := func(b []byte, from int) int {
		asked++
		if from != start || !slices.Equal(b[:end], seed[:end]) {
			return 0
		}
		return end - from
	}
	tools := []byte(at.Get("tools").Raw)
	value := func(name string, b []byte, from int) int {
		if name != "tools" || len(tools) == 0 || !bytes.HasPrefix(b[from:], tools) {
			return 0
		}
		return len(tools)
	}
	for _, c := range []struct {
		known KnownPrefix
		value KnownValue
	}{{known, nil}, {known, value}, {nil, value}} {
		asked = 0
		m := NewMembers("messages")
		defer m.Release()
		err := StrictMembersKnown(body, membersShape, m, c.known, c.value)
		if fmt.Sprint(err) != fmt.Sprint(ferr) {
			t.Fatalf("%q with %d bytes known (and tools %v): error %v, in full %v", body, end-start, c.value != nil, err, ferr)
		}
		if err != nil {
			continue
		}
		if c.known != nil && asked != 1 {
			t.Fatalf("%q: the known prefix was asked for %d times, want once", body, asked)
		}
		if !slices.Equal(m.top, full.top) || m.Object() != full.Object() {
			t.Fatalf("%q with %d bytes known (and tools %v): members %+v, in full %+v", body, end-start, c.value != nil, m.top, full.top)
		}
		spans, ok := m.Items()
		fspans, fok := full.Items()
		skipped := 0
		if m.Known() > 0 {
			if c.known == nil || m.Known() != end-start {
				t.Fatalf("%q: Known() = %d, want %d", body, m.Known(), end-start)
			}
			for skipped < len(fspans) && fspans[skipped].End <= end {
				skipped++
			}
		}
		if ok != fok || !slices.Equal(spans, fspans[skipped:]) {
			t.Fatalf("%q with %d bytes known: items %v (%v), in full %v (%v), %d skipped", body, m.Known(), spans, ok, fspans, fok, skipped)
		}
	}
}

// TestStrictMembersKnownSkips: a known prefix is skipped, not read again:
// bytes that the reading would refuse are not looked at when they are in
// a prefix the caller vouches for. (A caller vouches only for bytes read
// before: this shows the skip, not a use.)
func TestStrictMembersKnownSkips(t *testing.T) {
	prefix := `{"model":"m","messages":[{"role":"user","role":"user"}`
	body := []byte(prefix + `,{"role":"user"}]}`)
	start := strings.Index(prefix, "[")
	m := NewMembers("messages")
	defer m.Release()
	if err := StrictMembersKnown(body, membersShape, m, func([]byte, int) int { return len(prefix) - start }, nil); err != nil {
		t.Fatalf("the known prefix was read: %v", err)
	}
	if m.Known() != len(prefix)-start {
		t.Fatalf("Known() = %d, want %d", m.Known(), len(prefix)-start)
	}
	spans, ok := m.Items()
	if !ok || len(spans) != 1 || string(body[spans[0].Start:spans[0].End]) != `{"role":"user"}` {
		t.Fatalf("items after the prefix: %v (%v)", spans, ok)
	}
	if got := m.Get("messages").Raw; got != string(body[start:len(body)-1]) {
		t.Fatalf("messages = %s", got)
	}
	// Without the prefix known, the body is refused.
	if err := StrictMembersKnown(body, membersShape, m, nil, nil); err == nil {
		t.Fatal("a duplicate name was read")
	}
}

// TestStrictMembersKnownSkipsValues: a known value is skipped, not read
// again, before the items or after them, with a known prefix of the items
// or without: bytes that the reading would refuse are not looked at when
// they are in a value the caller vouches for, and the value is recorded
// where it is.
func TestStrictMembersKnownSkipsValues(t *testing.T) {
	tools := `[{"type":"function","type":"x"}]`
	prefix := `{"role":"user","role":"user"}`
	vouch := func(name string, b []byte, at int) int {
		if name == "tools" && strings.HasPrefix(string(b[at:]), tools) {
			return len(tools)
		}
		return 0
	}
	for _, body := range []string{
		`{"model":"m","tools":` + tools + `,"messages":[` + prefix + `,{"role":"user"}]}`,
		`{"model":"m","messages":[` + prefix + `,{"role":"user"}],"tools":` + tools + `}`,
	} {
		items := strings.Index(body, `[{"role"`)
		for _, known := range []KnownPrefix{nil, func(b []byte, at int) int {
			if at != items {
				t.Errorf("%s: the prefix asked for at %d, the items are at %d", body, at, items)
			}
			return len(prefix) + 1
		}} {
			m := NewMembers("messages")
			err := StrictMembersKnown([]byte(body), membersShape, m, known, vouch)
			if known == nil {
				// The prefix is read: its duplicate name is refused.
				if err == nil {
					t.Errorf("%s: a duplicate name in the items was read", body)
				}
				m.Release()
				continue
			}
			if err != nil {
				t.Fatalf("%s: the known value was read: %v", body, err)
			}
			if got := m.Get("tools"); got.Raw != tools || got.Index != strings.Index(body, tools) {
				t.Errorf("%s: tools = %s at %d", body, got.Raw, got.Index)
			}
			if got := m.Get("model").Str; got != "m" {
				t.Errorf("%s: model = %q", body, got)
			}
			if spans, ok := m.Items(); !ok || len(spans) != 1 || body[spans[0].Start:spans[0].End] != `{"role":"user"}` {
				t.Errorf("%s: items after the prefix: %v (%v)", body, spans, ok)
			}
			m.Release()
		}
		// Without the value known, the body is refused.
		m := NewMembers("messages")
		if err := StrictMembersKnown([]byte(body), membersShape, m, nil, nil); err == nil {
			t.Errorf("%s: a duplicate name was read", body)
		}
		m.Release()
	}
}

// FuzzStrictMembersKnown: whatever follows a prefix of items read before,
// the reading that skips the prefix agrees with the reading in full.
func FuzzStrictMembersKnown(f *testing.F) {
	for i, seed := range knownSeeds {
		for j, tail := range knownTails {
			f.Add(seed, uint8(i+j), tail)
		}
	}
	f.Fuzz(func(t *testing.T, seed string, pick uint8, tail string) {
		prefixes := knownPrefixes(t, []byte(seed))
		if len(prefixes) == 0 {
			return
		}
		end := prefixes[int(pick)%len(prefixes)]
		checkKnown(t, []byte(seed[:end]+tail), []byte(seed), end)
	})
}

// BenchmarkStrictMembersKnown: a body of n items whose first n-1 are known,
// and tools of about as many bytes before them, read with the items or the
// tools or both skipped (the next turn, or a conversation's first turn
// with tools read before), and the same body with a last item the reading
// refuses (the costliest skip: read without the known parts, then again
// in full for the error), beside the full reading, at two sizes: each must
// cost at most about what the full reading does, and double with the body.
func BenchmarkStrictMembersKnown(b *testing.B) {
	item := `{"role":"user","content":"` + strings.Repeat(`a \"b\" `, 8) + `"}`
	for _, n := range []int{500, 1000} {
		tools := "[" + strings.Repeat(`{"type":"function","d":"`+strings.Repeat("x", 60)+`"},`, n-1) + `{"type":"function"}]`
		known := `{"model":"m","tools":` + tools + `,"messages":[` + strings.Repeat(item+",", n-1) + item
		start := strings.Index(known, `[{"role"`)
		vouch := func([]byte, int) int { return len(known) - start }
		vouchTools := func(name string, b []byte, at int) int {
			if name == "tools" && strings.HasPrefix(string(b[at:]), tools) {
				return len(tools)
			}
			return 0
		}
		for _, c := range []struct {
			name, tail string
			known      KnownPrefix
			value      KnownValue
			ok         bool
		}{
			{"next-turn", `,{"role":"user"}]}`, vouch, nil, true},
			{"refused-after", `,{"role":"user","role":"x"}]}`, vouch, nil, false},
			{"tools", `,{"role":"user"}]}`, nil, vouchTools, true},
			{"next-turn-tools", `,{"role":"user"}]}`, vouch, vouchTools, true},
			{"refused-after-tools", `,{"role":"user","role":"x"}]}`, vouch, vouchTools, false},
			{"full", `,{"role":"user"}]}`, nil, nil, true},
		} {
			body := []byte(known + c.tail)
			b.Run(fmt.Sprintf("%dKB/%s", len(body)>>10, c.name), func(b *testing.B) {
				m := NewMembers("messages")
				defer m.Release()
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := StrictMembersKnown(body, membersShape, m, c.known, c.value); (err == nil) != c.ok {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
