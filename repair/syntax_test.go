package repair

import (
	"regexp"
	"strings"
	"testing"
)

// TestBareTokenAsCounted: bareToken accepts what the counted pattern
// ^[^\s{}\[\]"',]{1,200}$ does, characters counted as regexp counts them
// (an invalid UTF-8 byte is one).
func TestBareTokenAsCounted(t *testing.T) {
	counted := regexp.MustCompile(`^[^\s{}\[\]"',]{1,200}$`)
	var inputs []string
	pieces := []string{"", "a", " ", "\t", "\v", "{", "\"", "'", ",", "é", "\xff", "世", "\xe4\xb8", "ab"}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				inputs = append(inputs, a+b+c)
			}
		}
	}
	for _, n := range []int{199, 200, 201} {
		for _, p := range []string{"a", "é", "\xff", "世"} {
			inputs = append(inputs, strings.Repeat(p, n), strings.Repeat(p, n-1)+" ")
		}
	}
	for _, in := range inputs {
		if got, want := bareToken([]byte(in)), counted.MatchString(in); got != want {
			t.Errorf("bareToken(%q) = %v, want %v", in, got, want)
		}
	}
}
