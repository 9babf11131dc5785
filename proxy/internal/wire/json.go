package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/tidwall/sjson"
)

// Patch sets a raw JSON value at path, keeping the body as it is otherwise.
// A patch that fails is an error: the body must not go on unpatched.
func Patch(body []byte, path string, raw string) ([]byte, error) {
	out, err := sjson.SetRawBytes(body, path, []byte(raw))
	if err != nil {
		return nil, fmt.Errorf("set %s: %w", path, err)
	}
	return out, nil
}

// Delete removes path from body; a deletion that fails is an error.
func Delete(body []byte, path string) ([]byte, error) {
	out, err := sjson.DeleteBytes(body, path)
	if err != nil {
		return nil, fmt.Errorf("delete %s: %w", path, err)
	}
	return out, nil
}

// Quote returns s as a JSON string.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
