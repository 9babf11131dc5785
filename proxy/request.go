package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/proxy/internal/chat"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/messages"
	"github.com/toolguard/toolguard/proxy/internal/responses"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// What a client sends is read as the upstream will read it, or refused.
// Upstreams differ in how they route a path (uvicorn, gin and llama.cpp's
// server decode %2F to a slash; express matches paths in any letter case and
// with a trailing slash; Tomcat drops ;parameters), in which methods they
// honour (X-HTTP-Method-Override), and in what they do with an Upgrade. Each
// of those differences would let a chat completion reach the upstream
// without passing the inspected route, so under /v1 toolguard refuses what
// could be routed differently, before anything else happens.

// inspectedSuffixes end the paths of the routes toolguard inspects. Besides
// /v1/chat/completions and /v1/responses, servers route both under other
// prefixes: Azure's /openai/deployments/{name}/chat/completions and
// /openai/v1/responses, LiteLLM's /engines/{model}/chat/completions and
// /openai/v1/responses, a base URL given twice (/v1/v1/responses). A POST to
// any path under /v1 that ends so carries that format's request and is
// inspected as it would be at /v1.
var inspectedSuffixes = []string{chat.Path, responses.Path}

// inspectedSuffix returns the suffix of inspectedSuffixes that path ends
// with, in any letter case and with any trailing slashes, or "".
func inspectedSuffix(path string) string {
	trimmed := strings.TrimRight(path, "/")
	for _, suffix := range inspectedSuffixes {
		if len(trimmed) >= len(suffix) && strings.EqualFold(trimmed[len(trimmed)-len(suffix):], suffix) {
			return suffix
		}
	}
	return ""
}

// inspectedPath returns the format that a POST to path is inspected as, if
// any; checkRequest has refused the paths that end in a suffix spelled
// otherwise.
func inspectedPath(path string) (format, bool) {
	if !strings.HasPrefix(path, "/v1/") {
		return format{}, false
	}
	switch {
	case strings.HasSuffix(path, chat.Path):
		return chatFormat, true
	case strings.HasSuffix(path, responses.Path):
		return responsesFormat, true
	}
	return format{}, false
}

// forwardedMethods are the methods passed on under /v1: those the API uses.
var forwardedMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

const forwardedMethodList = "GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS"

// checkRequest refuses a request under /v1 that an upstream could route or
// read differently from toolguard. It returns nil for a request to pass on.
func checkRequest(r *http.Request) *apiError {
	if !strings.HasPrefix(r.URL.Path, "/v1/") && r.URL.Path != "/v1" {
		return nil
	}
	if headerGet(r.Header, "Upgrade") != "" || headerHasToken(r.Header, "Connection", "upgrade") {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "upgrade_refused",
			Msg: "toolguard does not switch protocols (Upgrade: " + wire.Clip(headerGet(r.Header, "Upgrade"), 40) + "): the traffic inside would not be inspected"}
	}
	for _, h := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"} {
		if _, ok := r.Header[h]; ok {
			return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_override_refused",
				Msg: "toolguard does not honour " + h + ": send the request with its real method"}
		}
	}
	if !forwardedMethods[r.Method] {
		// TRACE would echo back the request as the upstream received it,
		// the upstream key toolguard adds included; CONNECT asks for a
		// tunnel; methods no API defines may be routed anywhere.
		return &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "method_not_supported",
			Msg: "toolguard does not forward " + wire.Clip(r.Method, 40) + " requests: the API uses " + forwardedMethodList}
	}
	if why := ambiguousPath(r); why != "" {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_path",
			Msg: "the path " + wire.Clip(r.URL.EscapedPath(), 200) + " " + why + ": servers route such paths differently, so toolguard refuses them"}
	}
	if suffix := inspectedSuffix(r.URL.Path); suffix != "" {
		trimmed := strings.TrimRight(r.URL.Path, "/")
		p := trimmed[:len(trimmed)-len(suffix)] + suffix
		if r.URL.Path != p {
			return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_path",
				Msg: "send this request to " + wire.Clip(p, 200) + " exactly: some servers route " + wire.Clip(r.URL.Path, 200) + " to it, which would pass it uninspected"}
		}
		switch {
		case r.Method == http.MethodPost:
		case (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions) &&
			r.ContentLength == 0 && len(r.TransferEncoding) == 0:
			// Listing stored completions, or a CORS preflight: nothing
			// is generated.
		default:
			return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed",
				Msg: r.Method + " " + wire.Clip(p, 200) + " is not allowed: a completion or response is created with POST", Header: http.Header{"Allow": {"POST, GET, HEAD, OPTIONS"}}}
		}
	}
	return nil
}

// ambiguousPath says why a path could be routed differently by an upstream,
// or "" when it cannot.
func ambiguousPath(r *http.Request) string {
	if r.URL.RawPath == "" && plainPath(r.URL.Path) {
		// No escape, backslash, control character, empty segment,
		// parameter or dot: none of pathAmbiguity's cases.
		return ""
	}
	return pathAmbiguity(r)
}

// plainPath reports whether p holds only letters, digits, '-', '_' and
// single slashes, as the API's paths do.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '/' && (i == 0 || p[i-1] != '/'):
		default:
			return false
		}
	}
	return true
}

// pathAmbiguity is ambiguousPath for any path.
func pathAmbiguity(r *http.Request) string {
	raw := strings.ToLower(r.URL.EscapedPath())
	switch {
	case strings.Contains(raw, "%2f"):
		return "holds an encoded slash"
	case strings.Contains(raw, "%25"):
		// Decoded twice (an nginx that proxies the decoded $uri to a server
		// that decodes again), %252F is a slash and %252e%252e a dot-segment.
		return "holds an encoded percent sign"
	case strings.Contains(raw, "%5c") || strings.Contains(r.URL.Path, `\`):
		return "holds a backslash"
	case strings.Contains(raw, "%00") || strings.ContainsFunc(r.URL.Path, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return "holds a control character"
	case strings.Contains(r.URL.Path, "//"):
		return "holds an empty segment"
	case strings.Contains(r.URL.Path, ";"):
		return "holds a path parameter (;)"
	}
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		if seg == "." || seg == ".." {
			return "holds a dot-segment"
		}
	}
	return ""
}

// headerHasToken reports whether a comma-separated header holds token, in
// any letter case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range headerValues(h, name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// readRequest reads the body of an inspected request exactly as the
// upstream will, or refuses it: its media type's charset, its
// Content-Encoding (the decoded body is returned, and goes upstream), then
// what the format reads (strict JSON, tools declared unambiguously), with
// where the body's members are. A body toolguard read differently from the
// upstream would pass uninspected. The decoded bytes are held against
// budget until release is called (release is never nil).
func readRequest(r *http.Request, body []byte, max int64, budget *byteBudget, f format, known wire.KnownPrefix, d *ladder.Declarations, rq wire.Repeats) (_ *wire.Members, release func(), _ error) {
	release = func() {}
	if ae := checkCharset(r.Header); ae != nil {
		return nil, release, ae
	}
	body, release, ae := decodeBody(r, body, max, budget)
	if ae != nil {
		return nil, release, ae
	}
	m, err := f.read(body, known, d, rq)
	if err != nil {
		return nil, release, err
	}
	return m, release, nil
}

// checkCharset refuses a body declared in a charset other than UTF-8. JSON
// is UTF-8 (RFC 8259 defines no charset parameter), and toolguard reads it
// so, but some servers decode the body in the declared charset (aiohttp's
// Request.json, Spring's Jackson converter): in UTF-7, "+ACI-" is a quote,
// and text that toolguard reads inside a string becomes structure, a
// "tools" member say. Two Content-Type headers are refused as well:
// servers differ in which they read.
func checkCharset(h http.Header) *apiError {
	cts := headerValues(h, "Content-Type")
	if len(cts) > 1 {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_ambiguous",
			Msg: "the request has more than one Content-Type header: servers differ in which they read"}
	}
	if len(cts) == 0 {
		return nil
	}
	// The parameters, one at a time: splitting them into a slice would
	// allocate it for every request.
	_, params, _ := strings.Cut(cts[0], ";")
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "charset") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if !strings.EqualFold(v, "utf-8") && !strings.EqualFold(v, "utf8") {
			return &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_charset",
				Msg: "toolguard reads chat requests in UTF-8, not " + strconv.Quote(wire.Clip(v, 40)) + ": send the body in UTF-8, as JSON is"}
		}
	}
	return nil
}

// maxDecodeRatio bounds what a compressed request body may decode to, as
// a multiple of its compressed size, beyond decodeFloor: a gzip body of 32
// KB decoded to 31 MiB (about 1,000:1, deflate's limit) and, resent with
// each re-ask, took 97.5 MB upstream. Real requests compress far less:
// BFCL's, one function each, 2-4.6:1; 128 of its tools with 400 messages in
// one body, 7.2:1; the OpenAI recordings 2.5-10:1. 20:1 leaves room for a
// history that repeats itself, and a client refused can always send the
// body as it is.
const maxDecodeRatio = 20

// decodeFloor is what any compressed body may decode to, whatever its
// ratio: small bodies cost little, and may be as repetitive as they like.
const decodeFloor = 1 << 20

// decodeBody undoes the request's Content-Encoding, so that an inspected
// body is read as the upstream would decode it: gzip and deflate, with the
// decoded size bounded by max, by maxDecodeRatio times the compressed size
// (past decodeFloor), both a 413, and by what budget has left for decoded
// bodies, a 503. The decoded bytes stay on budget until release is called.
// Other encodings, layered ones and two Content-Encoding headers are
// refused (415). The body must be one compressed stream, read whole: a
// second gzip member (Go's and Python's readers decode it and append it) or
// bytes after the stream are refused, not dropped unread. The request's
// Content-Encoding is removed: the decoded body goes upstream.
func decodeBody(r *http.Request, body []byte, max int64, budget *byteBudget) (_ []byte, release func(), _ *apiError) {
	release = func() {}
	encs := headerValues(r.Header, "Content-Encoding")
	if len(encs) > 1 {
		return nil, release, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_content_encoding",
			Msg: "the request has more than one Content-Encoding header: send one, gzip or deflate"}
	}
	enc := ""
	if len(encs) == 1 {
		enc = strings.ToLower(strings.TrimSpace(encs[0]))
	}
	if enc == "" || enc == "identity" {
		headerDel(r.Header, "Content-Encoding")
		return body, release, nil
	}
	// bytes.Reader is an io.ByteReader: the decompressors read from it
	// directly, without a buffer, so what is left in it after the stream
	// ends is what follows the stream.
	in := bytes.NewReader(body)
	var zr io.Reader
	switch enc {
	case "gzip", "x-gzip":
		g, err := gzip.NewReader(in)
		if err != nil {
			return nil, release, undecodable(enc, err)
		}
		g.Multistream(false)
		zr = g
	case "deflate":
		// RFC 9110's deflate is zlib; some clients send raw DEFLATE. Both
		// are tried, as servers do.
		if z, err := zlib.NewReader(in); err == nil {
			zr = z
		} else {
			in.Reset(body)
			zr = flate.NewReader(in)
		}
	default:
		return nil, release, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_content_encoding",
			Msg: "toolguard decodes request bodies in gzip or deflate, not " + wire.Clip(enc, 40)}
	}
	limit := min(max, decodeLimit(int64(len(body))))
	out, held, err := readBudgeted(zr, limit, budget)
	release = func() { budget.give(held) }
	switch {
	case errors.Is(err, errBudget):
		return nil, release, decodingOverloaded()
	case err != nil:
		return nil, release, undecodable(enc, err)
	case int64(len(out)) > max:
		return nil, release, tooLarge(max, errors.New("decoded body over the limit"))
	case int64(len(out)) > limit:
		return nil, release, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
			Msg: fmt.Sprintf("the request body decodes to more than %d times its %d compressed bytes (and over %d bytes): send it uncompressed", maxDecodeRatio, len(body), decodeFloor)}
	}
	if in.Len() > 0 {
		return nil, release, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "body_read_error",
			Msg: fmt.Sprintf("the request body holds %d bytes after its %s stream (another gzip member, or data): send the body as one stream", in.Len(), enc)}
	}
	headerDel(r.Header, "Content-Encoding")
	return out, release, nil
}

// decodeLimit is the most that a body of n compressed bytes may decode to
// (see maxDecodeRatio).
func decodeLimit(n int64) int64 { return max(n*maxDecodeRatio, decodeFloor) }

var errBudget = errors.New("over the budget of decoded bytes in flight")

// readBudgeted reads r to its end or to one byte past limit, holding
// the capacity of its buffer against budget as the buffer grows; held is
// what it holds when it returns, errors included. The buffer doubles from
// 32 KiB, never past limit+1, and is trimmed to the body at the end.
func readBudgeted(r io.Reader, limit int64, budget *byteBudget) (out []byte, held int64, _ error) {
	grow := func(n int64) error {
		if !budget.take(n - held) {
			return errBudget
		}
		b := make([]byte, len(out), n)
		copy(b, out)
		out, held = b, n
		return nil
	}
	if err := grow(min(32<<10, limit+1)); err != nil {
		return nil, held, err
	}
	for int64(len(out)) <= limit {
		if len(out) == cap(out) {
			if err := grow(min(2*int64(cap(out)), limit+1)); err != nil {
				return nil, held, err
			}
		}
		n, err := r.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			if slack := int64(cap(out) - len(out)); slack > int64(len(out))/8 {
				// Up to half the buffer may be unused: what the request
				// holds while it is in flight is its body.
				out = append([]byte(nil), out...)
				budget.give(slack)
				held -= slack
			}
			return out, held, nil
		}
		if err != nil {
			return nil, held, err
		}
	}
	return out, held, nil
}

func undecodable(enc string, err error) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "body_read_error",
		Msg: "the request body could not be decoded as " + enc, Err: err}
}

// drainBody keeps reading what the client still sends of a request body
// that was refused unread (after a 413, or a refusal before the body was
// read), for at most drainTime and max bytes, before the connection closes.
// A client that writes its whole body before reading (Python's http.client
// and urllib, and the tools built on them) otherwise gets a connection reset
// instead of the answer, and its SDK retries the upload as a network error.
func drainBody(w http.ResponseWriter, r *http.Request, max int64) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	const drainTime = 5 * time.Second
	rc := http.NewResponseController(w)
	rc.Flush()
	rc.SetReadDeadline(time.Now().Add(drainTime))
	io.CopyN(io.Discard, r.Body, max)
}

// drainAfter413 is the most drained after a 413: a few times the default
// body limit.
const drainAfter413 = 64 << 20

// anthropicPath reports whether a path is under Anthropic's Messages API
// (/v1/messages, /v1/messages/count_tokens, /v1/messages/batches), whose
// clients send their key as x-api-key and read errors in Anthropic's shape.
// Only /v1/messages itself is inspected: the Messages API has no other
// prefix, and other APIs end paths in /messages (an OpenAI thread's).
func anthropicPath(path string) bool {
	return path == "/v1"+messages.Path || strings.HasPrefix(path, "/v1"+messages.Path+"/")
}

// writeError sends ae to the client in the error shape of the API the
// request is for.
func writeError(w http.ResponseWriter, r *http.Request, ae *apiError) {
	if anthropicPath(r.URL.Path) {
		ae.WriteBody(w, messages.ErrorBody(ae))
		return
	}
	ae.Write(w)
}
