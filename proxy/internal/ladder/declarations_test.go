package ladder

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// reading counts the reads of declarations that Declarations.Read asks for,
// and reads members as one tool per name.
type reading struct{ n int }

func (r *reading) read(members ...string) func() (Declared, error) {
	return func() (Declared, error) {
		r.n++
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
	first, err := d.Read("chat", []string{"clickclick", ""}, false, r.read("clickclick"))
	if err != nil || first.Tools.Len() != 1 || r.n != 1 {
		t.Fatalf("first read: %v, %d tools, %d reads", err, first.Tools.Len(), r.n)
	}
	again, err := d.Read("chat", []string{"clickclick", ""}, false, r.read("clickclick"))
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
		if _, err := d.Read(other.format, other.members, false, r.read(other.members...)); err != nil || r.n != before+1 {
			t.Errorf("%s %q: %v, read %d times, want once", other.format, other.members, err, r.n-before)
		}
	}

	// A refusal is not remembered: the same bytes are read, and refused,
	// again.
	for i := range 2 {
		before := r.n
		if _, err := d.Read("chat", []string{"refused"}, false, r.read("refused")); err == nil || r.n != before+1 {
			t.Errorf("refused declarations, time %d: %v, read %d times, want once", i+1, err, r.n-before)
		}
	}

	// Names read in place from a request's buffer are copied: the buffer
	// is reused once the request is done.
	buf := []byte("typetypetypetype")
	inPlace := unsafe.String(unsafe.SliceData(buf), len(buf))
	got, _ := d.Read("chat", []string{inPlace}, false, r.read(inPlace))
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
		d.Read("chat", []string{name + name}, false, r.read(name+name))
	}
	if d.Len() != DeclarationsEntries {
		t.Errorf("%d declarations remembered, want at most %d", d.Len(), DeclarationsEntries)
	}
	// Declarations too large are read every time, and not held.
	d = NewDeclarations()
	big := strings.Repeat("x", DeclarationsBytes/2)
	for range 2 {
		d.Read("chat", []string{big}, false, r.read(big))
	}
	if d.Len() != 0 {
		t.Errorf("declarations of %d bytes remembered", len(big))
	}
	// The bytes held stay under the bound: the oldest are forgotten.
	// Each entry weighs a little more than a tenth of the bound: m's
	// bytes, and its name (half of m) twice, in the names and as a key.
	half := strings.Repeat("y", DeclarationsBytes/40)
	for i := range 12 {
		m := half + string(rune('a'+i)) + half + string(rune('a'+i))
		d.Read("chat", []string{m}, false, r.read(m))
		if b := d.bytes.Load(); b > DeclarationsBytes {
			t.Fatalf("%d bytes held, bound %d", b, DeclarationsBytes)
		}
	}
	if d.Len() != 9 {
		t.Errorf("%d declarations of a tenth of the bound remembered, want 9", d.Len())
	}
}

func TestNilDeclarationsRead(t *testing.T) {
	var d *Declarations
	var r reading
	for range 2 {
		d.Read("chat", []string{"aa"}, false, r.read("aa"))
	}
	if r.n != 2 {
		t.Errorf("a nil cache read the declarations %d times, want 2", r.n)
	}
}

// TestDeclarationsCompareTheBytes: an entry under the hash of a request's
// declarations is used only if its bytes are theirs.
func TestDeclarationsCompareTheBytes(t *testing.T) {
	d := NewDeclarations()
	var r reading
	other, _ := r.read("yyyy")()
	for _, e := range []*declEntry{
		{format: "chat", members: []string{"yyyy"}, d: other},
		{format: "responses", members: []string{"xxxx"}, d: other},
		{format: "chat", members: []string{"xxxx", ""}, d: other},
	} {
		d.lru.Add(d.hash("chat", []string{"xxxx"}), e)
		r.n = 0
		got, err := d.Read("chat", []string{"xxxx"}, false, r.read("xxxx"))
		if err != nil || r.n != 1 || got.Tools.Lookup("xx") == nil {
			t.Errorf("an entry of %s %q under the hash of chat [\"xxxx\"]: read %d times, tools %q", e.format, e.members, r.n, got.Tools.Names)
		}
	}
	r.n = 0
	if got, _ := d.Read("chat", []string{"xxxx"}, false, r.read("xxxx")); r.n != 0 || got.Tools.Lookup("xx") == nil {
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
	d.Read("chat", []string{tools, ""}, false, r.read(tools))
	if offered("chat", "tools", body) {
		t.Errorf("tools read, but not strictly, are offered")
	}
	d.Read("chat", []string{tools, ""}, true, r.read(tools))
	if r.n != 1 {
		t.Errorf("read %d times, want once", r.n)
	}
	if !offered("chat", "tools", body) {
		t.Errorf("tools read strictly are not offered")
	}
	// Found among those offered, without hashing them: still the same.
	got, err := d.Read("chat", []string{tools, ""}, false, r.read(tools))
	if err != nil || r.n != 1 || got.Tools.Names[0] != tools[:len(tools)/2] {
		t.Errorf("tools offered, read again: %v, read %d times, tools %.20q", err, r.n, got.Tools.Names)
	}
	if _, err := d.Read("chat", []string{tools, "x"}, false, r.read(tools, "x")); err != nil || r.n != 2 {
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
	d.Read("chat", []string{short}, true, r.read(short))
	if d.KnownValue("chat")("tools", []byte(short), 0) != 0 {
		t.Errorf("tools shorter than %d bytes are offered", MinKnownTools)
	}
	for i := range DeclarationsEntries {
		m := fmt.Sprintf("%d%d", i, i)
		d.Read("chat", []string{m}, false, r.read(m))
	}
	if offered("chat", "tools", body) {
		t.Errorf("tools the cache forgot are offered")
	}
}
