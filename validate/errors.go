package validate

import "strings"

// Error is one reason why arguments do not validate.
type Error struct {
	// Path is the JSON pointer of the offending value inside the arguments;
	// "" is the arguments object itself.
	Path string `json:"path"`
	// Keyword is the schema keyword that failed ("type", "required", ...).
	Keyword string `json:"keyword"`
	// SchemaPath is the JSON pointer of the failed keyword inside the tool's
	// schema ("/properties/selector/type"), after $ref resolution; "" when
	// the keyword is not in the tool's own schema document.
	SchemaPath string `json:"-"`
	// Message says what was expected and what was found.
	Message string `json:"message"`
}

// String renders the error for people and models: the path, then the message.
func (e Error) String() string {
	p := e.Path
	if p == "" {
		p = "/"
	}
	return p + ": " + e.Message
}

// Join renders a list of errors one per line.
func Join(errs []Error) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.String())
	}
	return b.String()
}
