package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// keyring holds the client API keys as digests: comparing digests of equal
// length keeps a key's length from showing in the comparison's timing.
type keyring [][sha256.Size]byte

func newKeyring(keys []string) keyring {
	var k keyring
	for _, key := range keys {
		k = append(k, sha256.Sum256([]byte(key)))
	}
	return k
}

// allows reports whether the request carries one of the keys (see
// clientToken). Every key is compared, with no early exit, so the time
// taken does not tell which key (or how many) came close.
func (k keyring) allows(r *http.Request) bool {
	token, ok := clientToken(r)
	if !ok {
		return false
	}
	d := sha256.Sum256([]byte(token))
	match := 0
	for i := range k {
		match |= subtle.ConstantTimeCompare(d[:], k[i][:])
	}
	return match == 1
}

// clientToken returns the key a request carries: a Bearer token, as the
// OpenAI clients send it, or else an x-api-key, as the Anthropic clients
// send it.
func clientToken(r *http.Request) (string, bool) {
	if tok, ok := bearer(headerGet(r.Header, "Authorization")); ok {
		return tok, true
	}
	tok := strings.TrimSpace(headerGet(r.Header, "X-Api-Key"))
	return tok, tok != ""
}

// bearer returns the token of an "Authorization: Bearer <token>" value; the
// scheme is case-insensitive (RFC 9110, section 11.1).
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// openPath reports whether a path is served without a client key: the
// probes and the metrics, which carry no model traffic. Everything else,
// unknown paths included, needs a key when keys are configured.
func openPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

func unauthorized() *apiError {
	return &apiError{
		Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
		Msg:    "missing or unknown API key: send one of toolguard's keys as Authorization: Bearer <key> (or x-api-key: <key>)",
		Header: http.Header{"Www-Authenticate": {`Bearer realm="toolguard"`}},
	}
}
