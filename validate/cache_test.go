package validate

import (
	"bytes"
	"strings"
	"testing"
)

// Two schemas whose keys are the same are told apart by their bytes: each
// gets its own compiled schema, and a compile failure of one is never
// answered for the other.
func TestCacheKeysAreComparedByBytes(t *testing.T) {
	c := NewCache(8)
	a := []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	b := []byte(`{"type":"object","properties":{"b":{"type":"integer"}}}`)
	broken := []byte(`{"type":12}`)
	for round := range 2 {
		for _, raw := range [][]byte{a, b, a, broken, b} {
			s, err := c.get(7, raw)
			if bytes.Equal(raw, broken) {
				if err == nil {
					t.Fatalf("round %d: the broken schema compiled", round)
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, raw, err)
			}
			if !bytes.Equal(s.Raw(), raw) {
				t.Fatalf("round %d: asked for %s, got the schema of %s", round, raw, s.Raw())
			}
		}
	}
	if st := c.Stats(); st.Size != 1 || st.Hits != 0 {
		t.Errorf("stats %+v: want one entry, taken in turn, and no hit", st)
	}
	// The same bytes under the same key are a hit.
	if _, err := c.get(7, b); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Hits != 1 {
		t.Errorf("stats %+v: want the repeated schema to hit", st)
	}
}

// A compile failure is cached without the schema's bytes: a schema refused
// for its size is not held at its size.
func TestCachedFailureHoldsNoBytes(t *testing.T) {
	c := NewCache(8)
	big := []byte(`{"type":"object","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`)
	for range 2 {
		if _, err := c.Get(big); err == nil {
			t.Fatal("a schema over MaxSchemaBytes compiled")
		}
	}
	if st := c.Stats(); st.Hits != 1 || st.Bytes != failureWeight {
		t.Errorf("stats %+v: want the failure cached (one hit) at %d bytes", st, failureWeight)
	}
}
