package wire

import (
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
		`{"role":"user"}]}`,
		`2]}`,
		`.5]}`,
		` ]  , "model" : "m" , "model" : "n" }`,
		`,{"role":"user"}]`,
		`,{"role":"user"}],"tools":[{"type":"function","Type":"x"}]}`,
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

// checkKnown reads body in full and with the prefix body[at:end] known
// (at: where seed's items begin, body[:end] being seed[:end]), and
// compares the two readings.
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
	m := NewMembers("messages")
	defer m.Release()
	err := StrictMembersKnown(body, membersShape, m, known)
	if fmt.Sprint(err) != fmt.Sprint(ferr) {
		t.Fatalf("%q with %d bytes known: error %v, in full %v", body, end-start, err, ferr)
	}
	if err != nil {
		return
	}
	if asked != 1 {
		t.Fatalf("%q: the known prefix was asked for %d times, want once", body, asked)
	}
	if !slices.Equal(m.top, full.top) || m.Object() != full.Object() {
		t.Fatalf("%q with %d bytes known: members %+v, in full %+v", body, end-start, m.top, full.top)
	}
	spans, ok := m.Items()
	fspans, fok := full.Items()
	skipped := 0
	if m.Known() > 0 {
		if m.Known() != end-start {
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
	if err := StrictMembersKnown(body, membersShape, m, func([]byte, int) int { return len(prefix) - start }); err != nil {
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
	if err := StrictMembersKnown(body, membersShape, m, nil); err == nil {
		t.Fatal("a duplicate name was read")
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
// read with them skipped (the next turn), and the same body with a last
// item the reading refuses (the costliest skip: read without the prefix,
// then again in full for the error), beside the full reading, at two
// sizes: each must cost at most about what the full reading does, and
// double with the body.
func BenchmarkStrictMembersKnown(b *testing.B) {
	item := `{"role":"user","content":"` + strings.Repeat(`a \"b\" `, 8) + `"}`
	for _, n := range []int{500, 1000} {
		known := `{"model":"m","messages":[` + strings.Repeat(item+",", n-1) + item
		start := strings.Index(known, "[")
		vouch := func([]byte, int) int { return len(known) - start }
		for _, c := range []struct {
			name, tail string
			known      KnownPrefix
			ok         bool
		}{
			{"next-turn", `,{"role":"user"}]}`, vouch, true},
			{"refused-after", `,{"role":"user","role":"x"}]}`, vouch, false},
			{"full", `,{"role":"user"}]}`, nil, true},
		} {
			body := []byte(known + c.tail)
			b.Run(fmt.Sprintf("%dKB/%s", len(body)>>10, c.name), func(b *testing.B) {
				m := NewMembers("messages")
				defer m.Release()
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := StrictMembersKnown(body, membersShape, m, c.known); (err == nil) != c.ok {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
