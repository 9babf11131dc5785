package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// apiError is an error the client sees in the OpenAI error shape. Msg is for
// the client; Err, if set, is the cause kept for the log.
type apiError struct {
	Status  int
	Type    string
	Code    string
	Msg     string
	Err     error
	Details any
	// Header holds extra response headers (Retry-After, x-should-retry).
	Header http.Header
}

func (e *apiError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *apiError) Unwrap() error { return e.Err }

// body renders the OpenAI error object.
func (e *apiError) body() []byte {
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
		panic("proxy: marshal error body: " + err.Error())
	}
	return b
}

// write sends the error to the client.
func (e *apiError) write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range e.Header {
		h[k] = v
	}
	b := e.body()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	w.Write(b)
}

// statusClientClosed is logged, never sent: the client is gone.
const statusClientClosed = 499

// errUpstreamTimeout is the cause of a request context whose
// TOOLGUARD_UPSTREAM_TIMEOUT passed: it tells that expiry apart from a client
// that went away, which cancels the same context.
var errUpstreamTimeout = errors.New("TOOLGUARD_UPSTREAM_TIMEOUT passed")

// upstreamError maps a failure to reach the upstream to what the client
// sees: 504 when a timeout fired, 499 when the client left, 502 otherwise.
func upstreamError(clientCtx context.Context, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if clientCtx.Err() != nil && context.Cause(clientCtx) != errUpstreamTimeout {
		return &apiError{Status: statusClientClosed, Type: "client_closed", Code: "client_closed", Msg: "client closed the request", Err: err}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errUpstreamTimeout) || (errors.As(err, &ne) && ne.Timeout()) {
		return &apiError{Status: http.StatusGatewayTimeout, Type: "upstream_error", Code: "upstream_timeout", Msg: "the upstream did not answer in time", Err: err}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit, err)
	}
	// Say what failed, so that an operator can tell a typo in the URL from
	// a server that is down or a certificate that is not trusted; no
	// address or secret is quoted.
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr):
		return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_dns_error",
			Msg: "the upstream's host name could not be resolved (DNS)", Err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_connection_refused",
			Msg: "the upstream refused the connection: nothing listens at its address", Err: err}
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidCert), errors.As(err, &recordErr):
		return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_tls_error",
			Msg: "the TLS handshake with the upstream failed (its certificate is not trusted or does not match, or it does not speak TLS)", Err: err}
	}
	return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_unreachable", Msg: "the upstream could not be reached", Err: err}
}

// upstreamErrorKind is the metric label of an upstream failure's code.
func upstreamErrorKind(code string) string {
	switch code {
	case "upstream_dns_error":
		return "dns"
	case "upstream_connection_refused":
		return "connection_refused"
	case "upstream_tls_error":
		return "tls"
	case "upstream_timeout":
		return "timeout"
	case "upstream_circuit_open":
		return "circuit_open"
	}
	return "other"
}

// malformedReply is the error for a successful upstream reply that toolguard
// cannot read exactly as a client would: no JSON, JSON that parsers read
// differently, or calls in a shape no client expects. Passing it on would
// pass its calls on unchecked.
func malformedReply(err error) *apiError {
	var se *strictError
	switch {
	case errors.As(err, &se) && se.Ambiguous:
		return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_ambiguous_reply",
			Msg: "the upstream's reply is JSON that clients read differently from toolguard (" + se.Error() + "), so its tool calls cannot be checked", Err: err}
	case errors.As(err, &se):
		return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_invalid_json",
			Msg: "the upstream answered the chat completion with a body that is not JSON (" + se.Error() + "), so its tool calls cannot be checked", Err: err}
	}
	return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_malformed_reply",
		Msg: "the upstream's reply holds tool calls in a shape clients do not expect (" + err.Error() + "), so they cannot be checked", Err: err}
}

// requestUnreadable is the error for a request body that toolguard cannot
// read exactly as the upstream would (see strictJSON).
func requestUnreadable(err error) *apiError {
	var se *strictError
	if errors.As(err, &se) && se.Ambiguous {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_ambiguous",
			Msg: "the request body is JSON that servers read differently (" + se.Error() + "); toolguard refuses what it cannot read as the upstream would", Err: err}
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_not_json",
		Msg: "the request body is not strictly JSON (" + err.Error() + ")", Err: err}
}

// writeFailed is the error for a reply whose checked calls could not be
// written back: it is not sent on as the model wrote it.
func writeFailed(err error) *apiError {
	return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "toolguard_write_failed",
		Msg: "toolguard could not write the checked tool calls into the upstream's reply", Err: err}
}

func tooLarge(limit int64, err error) *apiError {
	return &apiError{
		Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Msg: "request body is larger than " + strconv.FormatInt(limit, 10) + " bytes (TOOLGUARD_MAX_BODY_BYTES)", Err: err,
	}
}

func notFound() *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url", Msg: "unknown route: toolguard serves the OpenAI API under /v1/"}
}
