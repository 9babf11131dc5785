package wire

import (
	"fmt"
	"strings"
	"testing"
)

// checkShape holds that c answers for every name as s does, and for names
// s does not hold, down every Shape within s.
func checkShape(t *testing.T, s Shape, c *shape, seen map[*shape]bool) {
	t.Helper()
	if (s == nil) != (c == nil) {
		t.Fatalf("a Shape of %d names made as %v", len(s), c)
	}
	if c == nil || seen[c] {
		return
	}
	seen[c] = true
	if len(c.names) != len(s) {
		t.Fatalf("%d names made of %d", len(c.names), len(s))
	}
	for k, child := range s {
		got, ok := c.child([]byte(k))
		if !ok {
			t.Fatalf("name %q not found", k)
		}
		checkShape(t, child, got, seen)
	}
	for _, n := range []string{"", "x", "Role", "rolex", "rol", "role ", "content\x00",
		strings.Repeat("a", 31), strings.Repeat("a", 32), strings.Repeat("b", 33), strings.Repeat("a", 40)} {
		if _, in := s[n]; in {
			continue
		}
		if got, ok := c.child([]byte(n)); ok || got != nil {
			t.Fatalf("name %q found among %q", n, c.names)
		}
	}
}

func TestCompiledShapeAnswersAsItsMap(t *testing.T) {
	self := Shape{"a": nil}
	self["self"] = self // a Shape that holds itself
	function := Shape{"name": nil, "arguments": nil}
	message := Shape{"role": nil, "content": nil, "tool_calls": Shape{"id": nil, "function": function},
		"function_call": function, "name": nil, "tool_call_id": nil, "refusal": nil, "reasoning": nil,
		"reasoning_content": nil}
	long := Shape{strings.Repeat("a", 33): nil, strings.Repeat("a", 32): function, strings.Repeat("c", 33): nil,
		"a": nil, "": nil, strings.Repeat("z", 31): nil, strings.Repeat("a", 50): message}
	for _, s := range []Shape{nil, {}, self, message, long, {"messages": message, "tools": Shape{"function": function}}} {
		checkShape(t, s, compiled(s), map[*shape]bool{})
		if c := compiled(s); s != nil && c != compiled(s) {
			t.Fatal("a Shape made again")
		}
	}
	if c := compiled(self); c.kids[indexOf(c.names, "self")] != c {
		t.Fatal("a Shape that holds itself made twice")
	}
}

func indexOf(names []string, n string) int {
	for i, k := range names {
		if k == n {
			return i
		}
	}
	return -1
}

// Past maxShapes, a Shape is made each time and still read right.
func TestShapesPastTheBound(t *testing.T) {
	for i := range 2 * maxShapes {
		name := fmt.Sprintf("n%d", i)
		s := Shape{name: Shape{"inner": nil}}
		body := fmt.Sprintf(`{%q:{"Inner":1}}`, name)
		err := Strict([]byte(body), s)
		if se, ok := err.(*StrictError); !ok || !se.Ambiguous {
			t.Fatalf("shape %d: %v", i, err)
		}
		checkShape(t, s, compiled(s), map[*shape]bool{})
	}
}
