package ladder

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// reading counts the reads of declarations that Declarations.Read asks for
// (n, and checks those without their tools), and reads members as one tool
// per name.
type reading struct{ n, checks int }

func (r *reading) read(members ...string) func(tools bool) (Declared, error) {
	return func(tools bool) (Declared, error) {
		r.n++
		if !tools {
			r.checks++
		}
		ts := &Tools{}
		for _, m := range members {
			if m == "refused" {
				return Declared{}, errors.New("refused")
			}
			// Names read in place, as wire.Parse reads them.
			ts.Add(m[:len(m)/2], []byte(`{"type":"object"}`))
		}
		return Declared{Tools: ts, Legacy: len(members) > 1}, nil
	}
}

func TestDeclarationsRemember(t *testing.T) {
	d := NewDeclarations()
	var r reading
	first, err := d.Read("chat", []string{"clickclick", ""}, r.read("clickclick"))
	if err != nil || first.Tools.Len() != 1 || r.n != 1 {
		t.Fatalf("first read: %v, %d tools, %d reads", err, first.Tools.Len(), r.n)
	}
	again, err := d.Read("chat", []string{"clickclick", ""}, r.read("clickclick"))
	if err != nil || again.Tools != first.Tools || r.n != 1 {
		t.Fatalf("the same declarations again: %v, read %d times, the same tools %v", err, r.n, again.Tools == first.Tools)
	}
	for _, other := range []struct {
		format  string
		members []string
	}{
		{"chat", []string{"clickclicK", ""}},      // a byte changed
		{"responses", []string{"clickclick", ""}}, // another format
		{"chat", []string{"clickclic", "k"}},      // the same bytes, cut elsewhere
		{"chat", []string{"", "clickclick"}},      // in the other member
		{"chat", []string{"clickclick"}},          // without the empty member
	} {
		before := r.n
		if _, err := d.Read(other.format, other.members, r.read(other.members...)); err != nil || r.n != before+1 {
			t.Errorf("%s %q: %v, read %d times, want once", other.format, other.members, err, r.n-before)
		}
	}

	// A request that declares nothing (every member missing) is checked
	// each time, without tools, and nothing is remembered of it.
	entries := d.lru.Len()
	for i := range 2 {
		before, checks := r.n, r.checks
		if _, err := d.Read("chat", []string{"", ""}, r.read()); err != nil || r.n != before+1 || r.checks != checks+1 {
			t.Errorf("no declarations, time %d: %v, read %d times, %d without tools", i+1, err, r.n-before, r.checks-checks)
		}
		if _, ok := d.Lookup("chat", []string{"", ""}); ok || d.lru.Len() != entries {
			t.Errorf("no declarations, time %d: remembered (%v, %d entries, were %d)", i+1, ok, d.lru.Len(), entries)
		}
	}

	// A refusal is not remembered: the same bytes are read, and refused,
	// again.
	for i := range 2 {
		before := r.n
		if _, err := d.Read("chat", []string{"refused"}, r.read("refused")); err == nil || r.n != before+1 {
			t.Errorf("refused declarations, time %d: %v, read %d times, want once", i+1, err, r.n-before)
		}
	}

	// Names read in place from a request's buffer are copied: the buffer
	// is reused once the request is done.
	buf := []byte("typetypetypetype")
	inPlace := unsafe.String(unsafe.SliceData(buf), len(buf))
	got, _ := d.Read("chat", []string{inPlace}, r.read(inPlace))
	copy(buf, "XXXXXXXXXXXXXXXX")
	if got.Tools.Names[0] != "typetype" || got.Tools.Lookup("typetype") == nil {
		t.Errorf("a remembered name changed with the request's buffer: %q", got.Tools.Names)
	}
}

func TestDeclarationsAreBounded(t *testing.T) {
	d := NewDeclarations()
	var r reading
	for i := range DeclarationsEntries + 10 {
		name := strings.Repeat("a", i%7+1) + string(rune('0'+i%10)) + strings.Repeat("b", i/10)
		d.Read("chat", []string{name + name}, r.read(name+name))
	}
	if d.Len() != DeclarationsEntries {
		t.Errorf("%d declarations remembered, want at most %d", d.Len(), DeclarationsEntries)
	}
	// Declarations too large are read every time, and not held.
	d = NewDeclarations()
	big := strings.Repeat("x", MaxDeclarationBytes/2)
	for range 2 {
		d.Read("chat", []string{big}, r.read(big))
	}
	if d.Len() != 0 {
		t.Errorf("declarations of %d bytes remembered", len(big))
	}
	// Declarations whose bytes alone are too large are only checked: their
	// tools are read when the request is opened.
	r = reading{}
	huge := strings.Repeat("x", MaxDeclarationBytes)
	if _, err := d.Read("chat", []string{huge}, r.read(huge)); err != nil || r.checks != 1 || d.Len() != 0 {
		t.Errorf("declarations of %d bytes: %v, %d checks without tools, %d remembered", len(huge), err, r.checks, d.Len())
	}
	if _, ok := d.Lookup("chat", []string{huge}); ok {
		t.Errorf("declarations of %d bytes found", len(huge))
	}
	// The bytes held stay under the bound: the oldest are forgotten. Each
	// entry weighs 2L+193 bytes, just under MaxDeclarationBytes: m's L
	// bytes, its name (half of m) twice, in the names and as a key, and
	// what the entry and its tool hold besides.
	l := MaxDeclarationBytes/2 - 1024
	for i := range 40 {
		m := fmt.Sprintf("%0*d", l, i)
		d.Read("chat", []string{m}, r.read(m))
		if b := d.bytes.Load(); b > DeclarationsBytes {
			t.Fatalf("%d bytes held, bound %d", b, DeclarationsBytes)
		}
	}
	if want := DeclarationsBytes / (2*l + 193); d.Len() != want {
		t.Errorf("%d declarations of %d bytes remembered, want %d", d.Len(), 2*l+193, want)
	}
}

func TestNilDeclarationsRead(t *testing.T) {
	var d *Declarations
	var r reading
	for range 2 {
		d.Read("chat", []string{"aa"}, r.read("aa"))
	}
	if r.n != 2 || r.checks != 2 {
		t.Errorf("a nil cache read the declarations %d times, %d without their tools, want 2 and 2", r.n, r.checks)
	}
	if _, ok := d.Lookup("chat", []string{"aa"}); ok {
		t.Errorf("a nil cache found declarations")
	}
}

// TestDeclarationsCompareTheBytes: an entry under the hash of a request's
// declarations is used only if its bytes are theirs.
func TestDeclarationsCompareTheBytes(t *testing.T) {
	d := NewDeclarations()
	var r reading
	other, _ := r.read("yyyy")(true)
	for _, e := range []*declEntry{
		{format: "chat", members: []string{"yyyy"}, d: other},
		{format: "responses", members: []string{"xxxx"}, d: other},
		{format: "chat", members: []string{"xxxx", ""}, d: other},
	} {
		d.lru.Add(d.hash("chat", []string{"xxxx"}), e)
		r.n = 0
		got, err := d.Read("chat", []string{"xxxx"}, r.read("xxxx"))
		if err != nil || r.n != 1 || got.Tools.Lookup("xx") == nil {
			t.Errorf("an entry of %s %q under the hash of chat [\"xxxx\"]: read %d times, tools %q", e.format, e.members, r.n, got.Tools.Names)
		}
	}
	r.n = 0
	if got, _ := d.Read("chat", []string{"xxxx"}, r.read("xxxx")); r.n != 0 || got.Tools.Lookup("xx") == nil {
		t.Errorf("the entry that replaced it: read %d times, tools %q", r.n, got.Tools.Names)
	}
}

// TestDeclarationsKnownValue: the strict reading is offered the tools of
// declarations read strictly, long enough to skip, of its format, as the
// member tools, byte for byte; and no longer once they leave the cache.
func TestDeclarationsKnownValue(t *testing.T) {
	d := NewDeclarations()
	var r reading
	tools := "[" + strings.Repeat("t", MinKnownTools) + "]"
	body := []byte(`{"tools":` + tools + `}`)
	at := len(`{"tools":`)
	offered := func(format, name string, body []byte) bool {
		return d.KnownValue(format)(name, body, at) == len(tools)
	}
	if offered("chat", "tools", body) {
		t.Errorf("tools offered before they were read")
	}
	if _, ok := d.Lookup("chat", []string{tools, ""}); ok {
		t.Errorf("tools found before they were read")
	}
	d.Read("chat", []string{tools, ""}, r.read(tools))
	if !offered("chat", "tools", body) {
		t.Errorf("tools read strictly are not offered")
	}
	// Found among those offered, without hashing them: still the same.
	got, err := d.Read("chat", []string{tools, ""}, r.read(tools))
	if err != nil || r.n != 1 || got.Tools.Names[0] != tools[:len(tools)/2] {
		t.Errorf("tools offered, read again: %v, read %d times, tools %.20q", err, r.n, got.Tools.Names)
	}
	if looked, ok := d.Lookup("chat", []string{tools, ""}); !ok || looked.Tools != got.Tools {
		t.Errorf("tools offered, looked up: %v", ok)
	}
	if _, err := d.Read("chat", []string{tools, "x"}, r.read(tools, "x")); err != nil || r.n != 2 {
		t.Errorf("other members after tools offered: %v, read %d times, want twice", err, r.n)
	}
	changed := []byte(string(body))
	changed[at+MinKnownTools/2] = 'x'
	for _, c := range []struct {
		format, name string
		body         []byte
	}{
		{"responses", "tools", body},
		{"chat", "functions", body},
		{"chat", "tools", changed},
		{"chat", "tools", body[:len(body)-2]},
	} {
		if offered(c.format, c.name, c.body) {
			t.Errorf("offered to %s's %s in %.20q…", c.format, c.name, c.body[at:])
		}
	}
	short := "[" + strings.Repeat("s", MinKnownTools-3) + "]"
	d.Read("chat", []string{short}, r.read(short))
	if d.KnownValue("chat")("tools", []byte(short), 0) != 0 {
		t.Errorf("tools shorter than %d bytes are offered", MinKnownTools)
	}
	for i := range DeclarationsEntries {
		m := fmt.Sprintf("%d%d", i, i)
		d.Read("chat", []string{m}, r.read(m))
	}
	if offered("chat", "tools", body) {
		t.Errorf("tools the cache forgot are offered")
	}
}
