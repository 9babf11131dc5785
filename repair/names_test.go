package repair

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var toolNameCases = []struct {
	name     string
	give     string
	declared []string
	want     string
	wantOK   bool
}{
	{name: "exact", give: "get_weather", declared: []string{"get_weather", "get_time"}, want: "get_weather", wantOK: true},
	{name: "camel-case", give: "getWeather", declared: []string{"get_weather", "get_time"}, want: "get_weather", wantOK: true},
	{name: "kebab-case", give: "get-weather", declared: []string{"get_weather"}, want: "get_weather", wantOK: true},
	{name: "upper-case", give: "GET_WEATHER", declared: []string{"get_weather"}, want: "get_weather", wantOK: true},
	{name: "dotted", give: "math_factorial", declared: []string{"math.factorial"}, want: "math.factorial", wantOK: true},
	{name: "namespace-prefix", give: "functions.get_weather", declared: []string{"get_weather"}, want: "get_weather", wantOK: true},
	{name: "typo", give: "get_wether", declared: []string{"get_weather", "get_time"}},
	{name: "plural", give: "list_file", declared: []string{"list_files"}, want: "list_files", wantOK: true},
	{name: "far-from-all", give: "delete_everything", declared: []string{"get_weather", "get_time"}},
	{name: "two-equally-close", give: "get_dat", declared: []string{"get_data", "get_date"}},
	{name: "short-names-need-exact", give: "ip", declared: []string{"id"}},
	{name: "none-declared", give: "click", declared: nil},
	{name: "empty-name", give: "", declared: []string{"click"}},
}

func TestToolName(t *testing.T) {
	for _, tt := range toolNameCases {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ToolName(tt.give, tt.declared)
			if diff := cmp.Diff([]any{got, ok}, []any{tt.want, tt.wantOK}); diff != "" {
				t.Errorf("ToolName(%q, %q) (-got +want):\n%s", tt.give, tt.declared, diff)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"query", "qeury", 1},
		{"kitten", "sitting", 3},
		{"selector", "selector", 0},
	}
	for _, tt := range tests {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestNormalize: a name in its normal form comes back as it is, and every
// other is folded to it.
func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"selector": "selector", "file_name": "filename", "fileName": "filename", "File-Name": "filename",
		"a.b c": "abc", "ÉTÉ": "été", "x_ÄÖ": "xäö", "": "",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNormalizeASCII: normalize's byte path folds every ASCII string as
// its rune path does.
func TestNormalizeASCII(t *testing.T) {
	for c := range 0x80 {
		for _, in := range []string{string(rune(c)), "aB" + string(rune(c)) + "Z_9"} {
			var b strings.Builder
			if got, want := normalize(in), normalizeRunes(in, &b); got != want {
				t.Errorf("normalize(%q) = %q, the rune path %q", in, got, want)
			}
		}
	}
}

// TestQuote: quote writes a key as encode does.
func TestQuote(t *testing.T) {
	for _, s := range []string{"selector", `a"b\c`, "tab\there\nnl\b\f\r\x01\x7f", "<a&b>", "été 😀", "line\u2028sep\u2029", "bad\xffutf8", strings.Repeat("k", 300)} {
		want, err := encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := quote(s); got != clip(want) {
			t.Errorf("quote(%q) = %s, want %s", s, got, clip(want))
		}
	}
}

// TestQuoteOfPlainNames: a name quoted without encoding it is quoted as
// render would, clipped alike.
func TestQuoteOfPlainNames(t *testing.T) {
	names := []string{"", "selector", "<a&b>", strings.Repeat("k", maxClip-2), strings.Repeat("k", maxClip-1), "a\"b", `a\b`, "a\x7fb", "é", "a\nb"}
	for c := byte(0); c < 0x80; c++ {
		names = append(names, "a"+string(c)+"b")
	}
	for _, name := range names {
		if got, want := quote(name), render(name); got != want {
			t.Errorf("quote(%q) = %s, want %s", name, got, want)
		}
	}
}
