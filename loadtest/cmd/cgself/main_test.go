package main

import (
	"bytes"
	"strings"
	"testing"
)

// profileText is a callgrind file in little: names compressed (a file and a
// function share a number, which must not be taken for each other), a
// call's inclusive cost, positions relative and repeated, a recursion's
// depth marked on a name.
const profileText = `# callgrind format
version: 1
positions: line
events: Ir
summary: 160

fl=(1) a.go
fn=(1) main.f
10 5
+1 5
cfl=(1)
cfn=(2) main.g
calls=2 20
12 100
fn=(2)
20 30
fn=(3) main.h'2
* 20
fn=(1)
13 0
fn=(3)
-1 100
`

func TestReadSumsEachFunctionsOwnLines(t *testing.T) {
	p, err := read(strings.NewReader(profileText))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"main.f": 10, "main.g": 30, "main.h'2": 0, "main.h": 120}
	for fn, n := range want {
		if p.self[fn] != n {
			t.Errorf("%s: %d, want %d", fn, p.self[fn], n)
		}
	}
	if p.total != 160 || len(p.self) != 3 {
		t.Errorf("total %d over %d functions, want 160 over 3: %v", p.total, len(p.self), p.self)
	}
}

func TestReadRefusesWhatItCannotSum(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"summary differs", strings.Replace(profileText, "summary: 160", "summary: 161", 1)},
		{"no summary", strings.Replace(profileText, "summary: 160\n", "", 1)},
		{"two events", strings.Replace(profileText, "events: Ir", "events: Ir Dr", 1)},
		{"cost not a number", strings.Replace(profileText, "20 30", "20 x", 1)},
		{"a function not named", strings.Replace(profileText, "fn=(2)\n", "fn=(9)\n", 1)},
		{"a cost before any function", strings.Replace(profileText, "fl=(1) a.go\n", "fl=(1) a.go\n0 0\n", 1)},
	} {
		if _, err := read(strings.NewReader(c.text)); err == nil {
			t.Errorf("%s: read without an error", c.name)
		}
	}
}

func TestWriteOrdersByTheDifference(t *testing.T) {
	a := profile{self: map[string]int64{"f": 100, "g": 50}, total: 150}
	b := profile{self: map[string]int64{"f": 90, "g": 80, "h": 40}, total: 210}
	var out bytes.Buffer
	write(&out, []profile{a, b}, 10, 2)
	want := "          15           21           +6  total\n" +
		"           0            4           +4  h\n" +
		"           5            8           +3  g\n"
	if out.String() != want {
		t.Errorf("got\n%swant\n%s", out.String(), want)
	}
	out.Reset()
	write(&out, []profile{b}, 1, 5)
	if want := "         210  total\n          90  f\n          80  g\n          40  h\n"; out.String() != want {
		t.Errorf("one profile: got\n%swant\n%s", out.String(), want)
	}
}
