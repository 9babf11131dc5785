package messages

import (
	"encoding/json"
	"net/http"

	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// ErrorBody renders e in Anthropic's error shape,
// {"type":"error","error":{"type":...,"message":...}}, whose type the
// SDKs read from the status (400 invalid_request_error, 401
// authentication_error, 404 not_found_error, 413 request_too_large, 429
// rate_limit_error, 529 overloaded_error, api_error for the other 5xx).
// toolguard's own code and details ride along, as extra members that
// clients ignore.
func ErrorBody(e *wire.Error) []byte {
	type inner struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code,omitempty"`
		Details any    `json:"details,omitempty"`
	}
	b, err := json.Marshal(struct {
		Type  string `json:"type"`
		Error inner  `json:"error"`
	}{"error", inner{Type: errorType(e.Status), Message: e.Msg, Code: e.Code, Details: e.Details}})
	if err != nil {
		// Details are built by toolguard from strings and numbers.
		panic("messages: marshal error body: " + err.Error())
	}
	return b
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == 529 || status == http.StatusServiceUnavailable:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}
