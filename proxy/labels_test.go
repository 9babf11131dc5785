package proxy

import (
	"testing"
	"unsafe"
)

// TestLabelsKeepTheirOwnCopy: a label is kept, and given, as a copy of the
// name it was asked for, which is often a slice of a request's body: a
// body written over after its request leaves the labels as they were.
func TestLabelsKeepTheirOwnCopy(t *testing.T) {
	s := labelSet{max: 4, seen: map[string]string{}}
	body := []byte(`{"name":"get_weather"}`)
	name := unsafe.String(&body[9], len("get_weather"))
	got := s.label(name)
	if got != "get_weather" || unsafe.StringData(got) == unsafe.StringData(name) {
		t.Fatalf("label(%q) = %q at the name's own bytes", name, got)
	}
	if again := s.label(name); unsafe.StringData(again) != unsafe.StringData(got) {
		t.Fatal("a name seen again was given another copy")
	}
	copy(body[9:], "xxxxxxxxxxx")
	if got != "get_weather" {
		t.Fatalf("the label became %q with the body", got)
	}
	for k, v := range s.seen {
		if k != "get_weather" || v != "get_weather" {
			t.Fatalf("the set holds %q: %q", k, v)
		}
	}
}
