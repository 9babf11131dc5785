package repair

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// toolPrefixes are namespaces that some models and chat templates put before
// a tool's name ("functions.get_weather").
var toolPrefixes = []string{"functions.", "functions:", "functions/", "default_api.", "tools."}

// ToolName maps a tool name that a model wrote in another style to the one
// declared tool it names: the same words in another case or separator style
// (getWeather, Get-Weather for get_weather), behind a namespace
// (functions.get_weather), or in the singular for the plural. It never maps
// a different word, however close in spelling: lock_door is not unlock_door,
// get_user is not set_user, and only the model can say which it meant. It
// returns false when no declared name is the same words, or when more than
// one is. A declared name is returned as it is.
func ToolName(name string, declared []string) (string, bool) {
	for _, d := range declared {
		if d == name {
			return d, true
		}
	}
	for _, p := range toolPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" {
			if got, ok := ToolName(rest, declared); ok {
				return got, true
			}
		}
	}
	if c, n := sameWords(name, declared); n == 1 {
		return c, true
	}
	return "", false
}

// sameWords returns the first of the names that are key written in
// another style, and how many there are, from the first tier that any name
// reaches: the same words in another case or separator style (fileName,
// file_name, File-Name), then singular and plural. These are the only names
// a key or a tool name is mended to, and only when there is one.
func sameWords(key string, names []string) (first string, n int) {
	k := normalize(key)
	if k == "" {
		return "", 0
	}
	tiers := [...]func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return singular(a) == singular(b) },
	}
	for _, like := range tiers {
		for _, name := range names {
			if like(k, normalize(name)) {
				if n == 0 {
					first = name
				}
				n++
			}
		}
		if n > 0 {
			return first, n
		}
	}
	return "", 0
}

// resembles reports whether key is spelt like one of names: the same words,
// or a small edit distance away (longer names tolerate more edits; names
// shorter than four letters none: id is not ip). A resemblance is never
// mended: min_price may be a typo of max_price or its opposite. It only
// keeps a key from being dropped or wrapped, which would lose what the
// model may have meant, so that the model is asked instead.
func resembles(key string, names []string) bool {
	if _, n := sameWords(key, names); n > 0 {
		return true
	}
	k := normalize(key)
	if k == "" {
		return false
	}
	for _, n := range names {
		if nn := normalize(n); distance(k, nn) <= maxDistance(k, nn) {
			return true
		}
	}
	return false
}

// normalize folds case and drops separators, so the spellings of one name
// in snake, camel, kebab or dotted style become equal. A name that is
// its own normal form, as most declared names are, is returned as it is.
func normalize(s string) string {
	i := normalPrefix(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	// As normalizeRunes, a byte at a time while the bytes are ASCII.
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return normalizeRunes(s[i:], &b)
		case c == '_', c == '-', c == ' ', c == '.':
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// normalizeRunes is normalize for any s, appended to b.
func normalizeRunes(s string, b *strings.Builder) string {
	for _, r := range s {
		switch r {
		case '_', '-', ' ', '.':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// normalPrefix is the length of s's longest prefix in normal form: ASCII
// with no capital letter and no separator.
func normalPrefix(s string) int {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, 'A' <= c && c <= 'Z', c == '_', c == '-', c == ' ', c == '.':
			return i
		}
	}
	return len(s)
}

// singular strips an English plural ending.
func singular(s string) string {
	switch {
	case strings.HasSuffix(s, "ies") && len(s) > 4:
		return s[:len(s)-3] + "y"
	case strings.HasSuffix(s, "sses"), strings.HasSuffix(s, "xes"), strings.HasSuffix(s, "ches"), strings.HasSuffix(s, "shes"):
		return s[:len(s)-2]
	case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss") && len(s) > 3:
		return s[:len(s)-1]
	}
	return s
}

func maxDistance(a, b string) int {
	n := min(utf8.RuneCountInString(a), utf8.RuneCountInString(b))
	switch {
	case n < 4:
		return 0
	case n < 8:
		return 1
	}
	return 2
}

// maxNameLen bounds the names compared by edit distance, whose cost is the
// product of their lengths.
const maxNameLen = 128

// distance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// letters, the typos of a model as of a person.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	if len(x) > maxNameLen || len(y) > maxNameLen {
		return max(len(x), len(y))
	}
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
