package validate

import "strings"

// The escapes of RFC 6901, built once: a Replacer builds its tables on first
// use, which costs more than the replacing when made for every key.
var (
	unescapeToken = strings.NewReplacer("~1", "/", "~0", "~")
	escapeToken   = strings.NewReplacer("~", "~0", "/", "~1")
)

// PointerTokens splits a JSON pointer, such as an Error's Path, into its
// unescaped reference tokens; "" (the whole document) has none.
func PointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		if strings.Contains(p, "~") {
			parts[i] = unescapeToken.Replace(p)
		}
	}
	return parts
}

// PointerChild returns the JSON pointer of key inside the value at ptr.
func PointerChild(ptr, key string) string {
	return ptr + "/" + escapeToken.Replace(key)
}
