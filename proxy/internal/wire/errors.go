package wire

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
)

// Error is an error the client sees in the OpenAI error shape. Msg is for
// the client; Err, if set, is the cause kept for the log.
type Error struct {
	Status  int
	Type    string
	Code    string
	Msg     string
	Err     error
	Details any
	// Header holds extra response headers (Retry-After, x-should-retry).
	Header http.Header
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// body renders the OpenAI error object.
func (e *Error) Body() []byte {
	type inner struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
		Details any     `json:"details,omitempty"`
	}
	b, err := json.Marshal(struct {
		Error inner `json:"error"`
	}{inner{Message: e.Msg, Type: e.Type, Code: e.Code, Details: e.Details}})
	if err != nil {
		// Details are built by this package from strings and numbers.
		panic("wire: marshal error body: " + err.Error())
	}
	return b
}

// Write sends the error to the client in the OpenAI shape.
func (e *Error) Write(w http.ResponseWriter) { e.WriteBody(w, e.Body()) }

// WriteBody sends the error to the client as b, the error rendered in the
// shape of the client's API, with its status and headers.
func (e *Error) WriteBody(w http.ResponseWriter, b []byte) {
	h := w.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	w.Write(b)
}

// MalformedReply is the error for a successful upstream reply that toolguard
// cannot read exactly as a client would: no JSON, JSON that parsers read
// differently, or calls in a shape no client expects. Passing it on would
// pass its calls on unchecked.
func MalformedReply(err error) *Error {
	var se *StrictError
	switch {
	case errors.As(err, &se) && se.Ambiguous:
		return &Error{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_ambiguous_reply",
			Msg: "the upstream's reply is JSON that clients read differently from toolguard (" + se.Error() + "), so its tool calls cannot be checked", Err: err}
	case errors.As(err, &se):
		return &Error{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_invalid_json",
			Msg: "the upstream answered the chat completion with a body that is not JSON (" + se.Error() + "), so its tool calls cannot be checked", Err: err}
	}
	return &Error{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_malformed_reply",
		Msg: "the upstream's reply is in a shape that toolguard does not read as clients would (" + err.Error() + "), so its tool calls or output cannot be checked", Err: err}
}

// RequestUnreadable is the error for a request body that toolguard cannot
// read exactly as the upstream would (see strictJSON).
func RequestUnreadable(err error) *Error {
	var se *StrictError
	if errors.As(err, &se) && se.Ambiguous {
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_ambiguous",
			Msg: "the request body is JSON that servers read differently (" + se.Error() + "); toolguard refuses what it cannot read as the upstream would", Err: err}
	}
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_not_json",
		Msg: "the request body is not strictly JSON (" + err.Error() + ")", Err: err}
}

// WriteFailed is the error for a reply whose checked calls could not be
// written back: it is not sent on as the model wrote it.
func WriteFailed(err error) *Error {
	return &Error{Status: http.StatusBadGateway, Type: "upstream_error", Code: "toolguard_write_failed",
		Msg: "toolguard could not write the checked tool calls into the upstream's reply", Err: err}
}

// ToolsAmbiguous refuses a request whose tools toolguard could read
// differently from the upstream or the client.
func ToolsAmbiguous(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "tools_ambiguous", Msg: msg}
}

// DeclaredList reads a request's member that declares tools, named name:
// absent or null it declares nothing (list false), an array its entries
// (list true); any other value is refused, as upstreams differ on it. A
// null is not iterated: gjson's ForEach hands a value that is not an
// array to its function as if it were one's only entry.
func DeclaredList(v gjson.Result, name string) (list bool, _ *Error) {
	if v.IsArray() {
		return true, nil
	}
	if v.Exists() && v.Type != gjson.Null {
		return false, ToolsAmbiguous(name + " must be an array")
	}
	return false, nil
}

// ToolsInvalid refuses a request whose tools are not declarations at all.
func ToolsInvalid(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "tools_invalid", Msg: msg}
}
