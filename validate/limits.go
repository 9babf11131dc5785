package validate

import "fmt"

// Limits on a client's schema, checked before it is compiled. A schema comes
// from the request, so a crafted one must not cost the proxy unbounded time
// or memory: compiling walks it recursively and keeps it in the cache. Real
// tool schemas are far inside these bounds (the largest of the 6,226 in the
// BFCL corpus is 4.3 KB deep 7).
const (
	// MaxSchemaBytes bounds one tool's parameters schema.
	MaxSchemaBytes = 256 << 10
	// MaxSchemaDepth bounds how deeply objects and arrays nest in it.
	MaxSchemaDepth = 64
)

// ErrSchemaTooLarge is the cause of a compile error for a schema over the
// limits.
type ErrSchemaTooLarge struct{ What string }

func (e ErrSchemaTooLarge) Error() string { return "schema too large: " + e.What }

// checkLimits scans the schema's bytes once, without decoding them.
func checkLimits(raw []byte) error {
	if len(raw) > MaxSchemaBytes {
		return ErrSchemaTooLarge{fmt.Sprintf("%d bytes, over the limit of %d", len(raw), MaxSchemaBytes)}
	}
	if nestedDeeper(raw, MaxSchemaDepth) {
		return ErrSchemaTooLarge{fmt.Sprintf("nested deeper than %d levels", MaxSchemaDepth)}
	}
	return nil
}

// nestedDeeper reports whether the brackets of the JSON text raw, outside
// its strings, nest deeper than max. One pass, without decoding.
func nestedDeeper(raw []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
