package validate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/validate"
)

func TestPointers(t *testing.T) {
	tests := []struct {
		name string
		keys []string // built with PointerChild from the root
		want string
	}{
		{"root", nil, ""},
		{"plain", []string{"a", "0", "b"}, "/a/0/b"},
		{"slash-and-tilde", []string{"a/b", "c~d", "~1"}, "/a~1b/c~0d/~01"},
		{"empty-key", []string{""}, "/"},
		{"unicode", []string{"año"}, "/año"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ptr := ""
			for _, k := range tt.keys {
				ptr = validate.PointerChild(ptr, k)
			}
			if ptr != tt.want {
				t.Errorf("PointerChild built %q, want %q", ptr, tt.want)
			}
			if diff := cmp.Diff(validate.PointerTokens(ptr), tt.keys); diff != "" {
				t.Errorf("PointerTokens(%q) (-got +want):\n%s", ptr, diff)
			}
		})
	}
}
