package proxy

import (
	"github.com/toolguard/toolguard/proxy/internal/wire"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// apiError is an error the client sees in the OpenAI error shape.
type apiError = wire.Error

var (
	malformedReply    = wire.MalformedReply
	requestUnreadable = wire.RequestUnreadable
	writeFailed       = wire.WriteFailed
)

// statusClientClosed is logged, never sent: the client is gone.
const statusClientClosed = 499

// statusError maps a failure to what the client sees: the *apiError it is
// or wraps, as it is; for a failure to reach the upstream, 504 when a
// timeout fired, 499 when the client left, 502 otherwise. ctx is the
// client's context or the upstream request's; the latter's cause says
// whether toolguard's deadline stopped it (an HTTP/2 transport reports
// that with the context's error, context.Canceled, not its cause).
func statusError(ctx context.Context, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if ctx.Err() != nil && !upstreamTimedOut(context.Cause(ctx)) {
		return &apiError{Status: statusClientClosed, Type: "client_closed", Code: "client_closed", Msg: "client closed the request", Err: err}
	}
	err = timedOut(ctx, err)
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || upstreamTimedOut(err) || (errors.As(err, &ne) && ne.Timeout()) {
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

func tooLarge(limit int64, err error) *apiError {
	return &apiError{
		Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Msg: "request body is larger than " + strconv.FormatInt(limit, 10) + " bytes (TOOLGUARD_MAX_BODY_BYTES)", Err: err,
	}
}

func notFound() *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url", Msg: "unknown route: toolguard serves the OpenAI API under /v1/"}
}
