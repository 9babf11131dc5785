package policy_test

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/caarlos0/env/v10"
	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/policy"
)

// documented returns every variable of the Config struct with its default.
func documented(t *testing.T) map[string]string {
	t.Helper()
	params, err := env.GetFieldParams(&policy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range params {
		out[p.Key] = p.DefaultValue
	}
	return out
}

// TestExampleEnvMatchesConfig keeps config.example.env in step with the
// configuration struct: the same variables, the same defaults, each with a
// line of meaning above it.
func TestExampleEnvMatchesConfig(t *testing.T) {
	f, err := os.Open("../config.example.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	prevComment := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			prevComment = false
		case strings.HasPrefix(line, "#"):
			prevComment = true
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("malformed line %q", line)
			}
			if !prevComment {
				t.Errorf("%s has no line of meaning above it", k)
			}
			got[k] = v
			prevComment = false
		}
	}
	if diff := cmp.Diff(got, documented(t)); diff != "" {
		t.Errorf("config.example.env differs from policy.Config (-file +struct):\n%s", diff)
	}
}

// TestReadmeTableMatchesConfig keeps the README's configuration table in step
// with the configuration struct.
func TestReadmeTableMatchesConfig(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(TOOLGUARD_[A-Z_]+)` \\| `([^`]*)` \\|")
	got := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = m[2]
	}
	want := documented(t)
	for k, v := range want {
		if v == "" {
			want[k] = "(empty)"
		}
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("README configuration table differs from policy.Config (-readme +struct):\n%s", diff)
	}
}
