package proxy

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolguard/toolguard/policy"
)

// What an upstream sends back reaches the client only after three checks,
// on every route, so that the client never receives what toolguard did not
// see or must not show:
//
//   - X-Toolguard-* headers are toolguard's own: an upstream's are removed
//     (a forged X-Toolguard-Outcome: valid would vouch for calls nobody
//     checked);
//   - the configured keys (TOOLGUARD_UPSTREAM_API_KEY,
//     TOOLGUARD_FALLBACK_UPSTREAM_API_KEY, TOOLGUARD_API_KEYS) are redacted
//     from headers and from error bodies, which often echo the key they
//     were sent ("Incorrect API key provided: sk-...");
//   - a redirect to the upstream itself is rewritten to the matching /v1 path
//     of toolguard, or removed when no such path exists, so that it neither
//     reveals the internal address nor sends the client around the proxy.

// sanitize applies those checks to resp. It fails only when an error body
// that must be redacted cannot be read within TOOLGUARD_MAX_RESPONSE_BYTES.
func (h *Handler) sanitize(resp *http.Response) error {
	for k := range resp.Header {
		if strings.HasPrefix(k, "X-Toolguard-") {
			delete(resp.Header, k)
		}
	}
	for k := range resp.Trailer {
		if strings.HasPrefix(k, "X-Toolguard-") {
			delete(resp.Trailer, k)
		}
	}
	secrets := h.secrets
	if len(secrets) > 0 {
		for _, vs := range resp.Header {
			for i, v := range vs {
				vs[i] = redactString(v, secrets)
			}
		}
	}
	h.relocate(resp.Header, "Location")
	h.relocate(resp.Header, "Content-Location")
	if len(secrets) == 0 || (resp.StatusCode >= 200 && resp.StatusCode <= 299) {
		return nil
	}
	raw, err := readLimited(resp.Body, resp.ContentLength, h.cfg.MaxResponseBytes)
	resp.Body.Close()
	if err != nil {
		return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_response_unreadable",
			Msg: "the upstream's error response could not be read in full (over TOOLGUARD_MAX_RESPONSE_BYTES, or cut short)", Err: err}
	}
	setBody(resp, redactBytes(raw, secrets), new(replyBody))
	return nil
}

// relocate rewrites the redirect header name of a reply to the matching
// path of toolguard, or removes it when there is none (see sanitize).
func (h *Handler) relocate(hdr http.Header, name string) {
	if loc := headerGet(hdr, name); loc != "" {
		if out, ok := h.clientLocation(loc); ok {
			headerSet(hdr, name, out)
		} else {
			headerDel(hdr, name)
		}
	}
}

// upstreamSecrets are the keys that an upstream's answer must not carry to
// the client. Keys shorter than four bytes are not redacted: they would
// match ordinary text.
func upstreamSecrets(cfg policy.Config) []string {
	var out []string
	for _, k := range append([]string{cfg.UpstreamAPIKey, cfg.FallbackUpstreamAPIKey}, cfg.APIKeys...) {
		if len(k) >= 4 {
			out = append(out, k)
		}
	}
	return out
}

func redactString(s string, secrets []string) string {
	for _, k := range secrets {
		if strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

func redactBytes(b []byte, secrets []string) []byte {
	for _, k := range secrets {
		if bytes.Contains(b, []byte(k)) {
			b = bytes.ReplaceAll(b, []byte(k), []byte("[redacted]"))
		}
	}
	return b
}

// clientLocation maps a redirect target given by the upstream to what the
// client may see. A target on another host is the upstream's to give (a
// file download, say) and passes. A target on the upstream (absolute, or a
// path on the same host) is mapped from below the upstream's base path to
// below /v1; with no such mapping it is dropped (ok false). A relative
// reference without a leading slash resolves alike on both sides and passes.
func (h *Handler) clientLocation(loc string) (string, bool) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", false
	}
	if u.Host == "" && u.Scheme == "" && !strings.HasPrefix(u.Path, "/") {
		return loc, true
	}
	if u.Host != "" && !strings.EqualFold(hostPort(u), hostPort(h.upstream)) {
		return loc, true
	}
	if u.Scheme != "" && u.Host == "" {
		// mailto:, data: and the like name no host of ours.
		return loc, true
	}
	base := strings.TrimSuffix(h.upstream.Path, "/")
	rest, ok := strings.CutPrefix(u.Path, base)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return "", false
	}
	out := url.URL{Path: "/v1" + rest, RawQuery: u.RawQuery, Fragment: u.Fragment}
	return out.String(), true
}

// hostPort is u's host with the scheme's default port made explicit, so
// that http://up and http://up:80 compare equal.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	switch u.Scheme {
	case "https":
		return u.Host + ":443"
	case "http":
		return u.Host + ":80"
	}
	return u.Host
}
