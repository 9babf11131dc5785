package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// serverView is a chat request as a Go server decodes it into a struct:
// the last of duplicate names wins, names match in any letter case.
type serverView struct {
	Tools []struct {
		Function *struct{ Name string }
	}
	Functions []struct{ Name string }
}

// TestAmbiguousRequestsAreRefused: a chat request that toolguard would read
// one way and an upstream another is refused with a 400, never forwarded.
// Each case gets tools past toolguard on main: toolguard sees no tools (or
// harmless ones), the upstream declares the click tool, and the model's
// invalid call reaches the client unchecked.
func TestAmbiguousRequestsAreRefused(t *testing.T) {
	const fn = `{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}`
	const msgs = `"model":"m","messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, body, code string
		goServer         bool // a Go server finds the tool (else: Python/JS last-wins)
	}{
		{name: "duplicate tools", code: "request_ambiguous", goServer: true,
			body: `{` + msgs + `,"tools":[],"tools":[` + fn + `]}`},
		{name: "permissive first copy", code: "request_ambiguous", goServer: true,
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"click"}}],"tools":[` + fn + `]}`},
		{name: "letter case", code: "request_ambiguous", goServer: true,
			body: `{` + msgs + `,"Tools":[` + fn + `]}`},
		{name: "kelvin sign", code: "request_ambiguous", goServer: true,
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"click","parameters":{}}}],"tools":[` + strings.Replace(fn, `"function":{`, `"function":{"name":"x"},"Function":{`, 1) + `]}`},
		{name: "dotless i, as .NET's case-insensitive binding reads it", code: "request_ambiguous",
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"scroll"},"funct\u0131on":` + fn[strings.Index(fn, `"function":{`)+len(`"function":`):len(fn)-1] + `}]}`},
		{name: "trailing data", code: "request_not_json",
			body: `{` + msgs + `} {"tools":[` + fn + `]}`},
		{name: "byte order mark", code: "request_not_json",
			body: "\xef\xbb\xbf{" + msgs + `,"tools":[` + fn + `]}`},
		{name: "NaN", code: "request_not_json",
			body: `{` + msgs + `,"temperature":NaN,"tools":[` + fn + `]}`},
		{name: "invalid UTF-8", code: "request_not_json",
			body: `{` + msgs + `,"user":"` + "\xff" + `","tools":[` + fn + `]}`},
		{name: "UTF-16", code: "request_not_json",
			body: utf16(`{` + msgs + `,"tools":[` + fn + `]}`)},
		{name: "tool of another type with a function", code: "tools_ambiguous", goServer: true,
			body: `{` + msgs + `,"tools":[{"type":"custom","function":{"name":"click"}}]}`},
		{name: "tools not an array", code: "tools_ambiguous",
			body: `{` + msgs + `,"tools":{"0":` + fn + `}}`},
		{name: "two functions of one name", code: "tools_ambiguous", // checked against the first, run as the last
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"click"}},` + fn + `]}`},
		{name: "tools and legacy functions", code: "tools_ambiguous",
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"scroll"}}],"functions":[{"name":"click"}]}`},
		{name: "function tool written flat", code: "tools_invalid",
			body: `{` + msgs + `,"tools":[{"type":"function","name":"click","parameters":{"type":"object"}}]}`},
		{name: "function tool without a type or a function", code: "tools_invalid",
			body: `{` + msgs + `,"tools":[{"name":"click"}]}`},
		{name: "function name not a string", code: "tools_invalid",
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":["click"]}}]}`},
		{name: "parameters not a schema", code: "tools_invalid",
			body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"click","parameters":"{\"type\":\"object\"}"}}]}`},
		{name: "tools entry not an object", code: "tools_invalid",
			body: `{` + msgs + `,"tools":["click",` + fn + `]}`},
		{name: "legacy function without a name", code: "tools_invalid",
			body: `{` + msgs + `,"functions":[{"parameters":{}},{"name":"click"}]}`},
		{name: "nested past 10,000 levels", code: "request_not_json",
			body: `{` + msgs + `,"metadata":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `,"tools":[` + fn + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.goServer {
				var v serverView
				if err := json.Unmarshal([]byte(tt.body), &v); err != nil || !hasClick(v) {
					t.Fatalf("the test's premise fails: a Go server would not declare click (%v)", err)
				}
			}
			up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{}"`))})
			srv, _ := guard(t, up, nil)
			resp, body := post(t, srv, "/v1/chat/completions", tt.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %.300s", resp.StatusCode, body)
			}
			if got := mustJSON(t, body).Get("error.code").String(); got != tt.code {
				t.Errorf("code %q, want %q: %.300s", got, tt.code, body)
			}
			if len(body) > 2000 {
				t.Errorf("a %d-byte error body", len(body))
			}
			if n := len(up.requests()); n != 0 {
				t.Errorf("forwarded %d requests", n)
			}
		})
	}
}

func hasClick(v serverView) bool {
	for _, t := range v.Tools {
		if t.Function != nil && t.Function.Name == "click" {
			return true
		}
	}
	return false
}

func utf16(s string) string {
	var b strings.Builder
	b.WriteString("\xff\xfe")
	for _, c := range []byte(s) {
		b.WriteByte(c)
		b.WriteByte(0)
	}
	return b.String()
}

// TestBodiesInAnotherCharsetAreRefused: a server that decodes the body in
// the charset its Content-Type declares (aiohttp's Request.json does) reads
// a UTF-7 body as toolguard does not: "+ACI-" is a quote there, and the
// click tool hidden in a string becomes a member. Only UTF-8 is read.
func TestBodiesInAnotherCharsetAreRefused(t *testing.T) {
	const fn = `{+ACI-type+ACI-:+ACI-function+ACI-,+ACI-function+ACI-:{+ACI-name+ACI-:+ACI-click+ACI-}}`
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":"+ACI-,+ACI-tools+ACI-:[` + fn + `],+ACI-y+ACI-:+ACI-"}`
	var v serverView
	if err := json.Unmarshal([]byte(strings.ReplaceAll(body, "+ACI-", `"`)), &v); err != nil || !hasClick(v) {
		t.Fatalf("the test's premise fails: a UTF-7 reader would not declare click (%v)", err)
	}
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{}"`))})
	srv, _ := guard(t, up, nil)
	for _, tt := range []struct {
		contentType []string
		want        int
		code        string
	}{
		{contentType: []string{"application/json; charset=utf-7"}, want: 415, code: "unsupported_charset"},
		{contentType: []string{`application/json;charset="UTF-7"`}, want: 415, code: "unsupported_charset"},
		{contentType: []string{"application/json; charset=utf-8; charset=utf-7"}, want: 415, code: "unsupported_charset"},
		{contentType: []string{"application/json;; foo=bar;charset=utf-7;"}, want: 415, code: "unsupported_charset"},
		{contentType: []string{"application/json; foo=bar;; charset=utf8;"}, want: 200},
		{contentType: []string{"application/json", "application/json; charset=utf-7"}, want: 400, code: "request_ambiguous"},
		{contentType: []string{"application/json; charset=UTF-8"}, want: 200},
		{contentType: []string{"application/json"}, want: 200},
	} {
		resp, rb := do(t, t.Context(), srv, "POST", "/v1/chat/completions", body, http.Header{"Content-Type": tt.contentType})
		if resp.StatusCode != tt.want || (tt.code != "" && mustJSON(t, rb).Get("error.code").String() != tt.code) {
			t.Errorf("%q: status %d, want %d %s: %s", tt.contentType, resp.StatusCode, tt.want, tt.code, rb)
		}
	}
	if n := len(up.requests()); n != 3 {
		t.Errorf("forwarded %d requests, want the three in UTF-8", n)
	}
}

// TestAmbiguousPathsAreRefused: a path that some upstream routes to the
// chat completion route but toolguard would not is refused.
func TestAmbiguousPathsAreRefused(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{}"`))})
	srv, _ := guard(t, up, nil)
	for _, path := range []string{
		"/v1/chat%2Fcompletions", "/v1/chat%2fcompletions", "/v1/chat%5Ccompletions", `/v1/chat\completions`,
		"/v1/./chat/completions", "/v1/x/../chat/completions", "/v1/%2e%2e/v1/chat/completions", "/v1//chat/completions",
		"/v1/Chat/Completions", "/v1/chat/completions/", "/v1/chat/completions;x=1", "/v1/chat/completions%00",
		// Decoded twice (an nginx in front of the upstream that proxies
		// $uri, decoded, to a server that decodes again), %252F is a slash.
		"/v1/chat%252Fcompletions", "/v1/chat%252fcompletions", "/v1/x/%252e%252e/chat/completions",
	} {
		resp, body := rawRequest(t, srv.URL, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
			fmt.Sprint(len(clickRequest("")))+"\r\nConnection: close\r\n\r\n"+clickRequest(""))
		if resp.StatusCode != http.StatusBadRequest || mustJSON(t, body).Get("error.code").String() != "invalid_path" {
			t.Errorf("%s: status %d body %s", path, resp.StatusCode, body)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d requests", n)
	}
}

// rawRequest writes req on a new connection to base and reads one response.
func rawRequest(t *testing.T, base, req string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestChatRouteMethods: a completion is created with POST only; the other
// methods that could make an upstream generate are refused.
func TestChatRouteMethods(t *testing.T) {
	up := newUpstream(t, reply{Body: `{"data":[]}`})
	srv, _ := guard(t, up, nil)
	tests := []struct {
		method, body string
		header       http.Header
		want         int
	}{
		{method: "PUT", body: clickRequest(""), want: 405},
		{method: "PATCH", body: clickRequest(""), want: 405},
		{method: "DELETE", want: 405},
		{method: "GET", body: clickRequest(""), want: 405},
		{method: "GET", want: 200}, // listing stored completions
		{method: "OPTIONS", want: 200, header: http.Header{"Origin": {"http://app"}, "Access-Control-Request-Method": {"POST"}}}, // a CORS preflight
		{method: "OPTIONS", body: clickRequest(""), want: 405},
		{method: "GET", header: http.Header{"X-Http-Method-Override": {"POST"}}, want: 405},
		{method: "POST", body: clickRequest(""), header: http.Header{"X-Http-Method-Override": {"PUT"}}, want: 405},
	}
	for _, tt := range tests {
		resp, body := do(t, t.Context(), srv, tt.method, "/v1/chat/completions", tt.body, tt.header)
		if resp.StatusCode != tt.want {
			t.Errorf("%s %v: status %d, want %d: %s", tt.method, tt.header, resp.StatusCode, tt.want, body)
		}
	}
	if got := up.requests(); len(got) != 2 || got[0].Method != "GET" || got[1].Method != "OPTIONS" {
		t.Errorf("the upstream got %d requests, want the GET and the body-less OPTIONS", len(got))
	}
}

// TestOnlyTheAPIMethodsAreForwarded: TRACE would make an upstream (Apache's
// TraceEnable is on by default) echo the request it received, the upstream
// key toolguard adds included; CONNECT asks for a tunnel; a method no API
// defines may be routed anywhere. None reaches the upstream.
func TestOnlyTheAPIMethodsAreForwarded(t *testing.T) {
	const key = "sk-upstream-secret-0123456789"
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "message/http")
		r.Write(w) // what TRACE answers: the request as received
	}
	srv, _ := guard(t, up, func(c *policy.Config) { c.UpstreamAPIKey = key })
	for _, method := range []string{"TRACE", "TRACK", "CONNECT", "PROPFIND", "FOO"} {
		resp, body := rawRequest(t, srv.URL, method+" /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if resp.StatusCode != http.StatusNotImplemented || mustJSON(t, body).Get("error.code").String() != "method_not_supported" {
			t.Errorf("%s: status %d %s", method, resp.StatusCode, body)
		}
		if strings.Contains(string(body), key) {
			t.Errorf("%s: the upstream key reached the client", method)
		}
	}
	if got := up.requests(); len(got) != 0 {
		t.Errorf("the upstream got %d requests, the first %s", len(got), got[0].Method)
	}
}

// TestUpgradesAreRefused: a WebSocket or h2c upgrade would open a tunnel to
// the upstream with nothing inspected inside it.
func TestUpgradesAreRefused(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, nil)
	for _, req := range []string{
		"GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Length: 2\r\n\r\n{}",
	} {
		resp, body := rawRequest(t, srv.URL, req)
		if resp.StatusCode != http.StatusBadRequest || mustJSON(t, body).Get("error.code").String() != "upgrade_refused" {
			t.Errorf("status %d body %s", resp.StatusCode, body)
		}
	}
	// HTTP/2 with prior knowledge, without an upgrade: the server does not
	// speak it in clear text, and nothing goes upstream.
	if resp, _ := rawRequest(t, srv.URL, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("h2c with prior knowledge: status %d", resp.StatusCode)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d requests", n)
	}
}

// TestRequestTrailersAreDropped: a trailer (here the client's key) would
// reach the upstream after the body toolguard read.
func TestRequestTrailersAreDropped(t *testing.T) {
	got := make(chan http.Header, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- r.Trailer.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":[]}`)
	}))
	defer upstream.Close()
	srv, _ := guard(t, &fakeUpstream{Server: upstream}, func(c *policy.Config) { c.APIKeys = []string{"client-key-1234"} })
	body := "5\r\nhello\r\n0\r\nAuthorization: Bearer client-key-1234\r\nX-Trailer: x\r\n\r\n"
	for _, path := range []string{"/v1/files", "/v1/chat/completions"} {
		if path == "/v1/chat/completions" {
			b := clickRequest("")
			body = fmt.Sprintf("%x\r\n%s\r\n0\r\nAuthorization: Bearer client-key-1234\r\n\r\n", len(b), b)
		}
		resp, rb := rawRequest(t, srv.URL, "POST "+path+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer client-key-1234\r\nTrailer: Authorization\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %s", path, resp.StatusCode, rb)
		}
		if tr := <-got; len(tr) != 0 {
			t.Errorf("%s: the upstream got trailers %v", path, tr)
		}
	}
}

// TestCompressedRequestBodies: an inspected body is decoded as the upstream
// would decode it (bounded), or refused.
func TestCompressedRequestBodies(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{\"selector\": \"#a\",}"`))})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxBodyBytes = 1 << 20 })
	resp, body := do(t, t.Context(), srv, "POST", "/v1/chat/completions", compressed(gzip.NewWriter, clickRequest("")), http.Header{"Content-Encoding": {"gzip"}})
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "repaired" {
		t.Errorf("gzip: status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
	}
	if got := up.requests(); len(got) != 1 || string(got[0].Body) != clickRequest("") || got[0].Header.Get("Content-Encoding") != "" {
		t.Errorf("the upstream did not get the decoded body")
	}
	bomb := compressed(gzip.NewWriter, `{"model":"m","messages":[],"metadata":"`+strings.Repeat("a", 2<<20)+`"}`)
	if resp, body := do(t, t.Context(), srv, "POST", "/v1/chat/completions", bomb, http.Header{"Content-Encoding": {"gzip"}}); resp.StatusCode != 413 {
		t.Errorf("a body that decodes past the limit: status %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, t.Context(), srv, "POST", "/v1/chat/completions", "x", http.Header{"Content-Encoding": {"br"}}); resp.StatusCode != 415 {
		t.Errorf("br: status %d %s", resp.StatusCode, body)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
}

// TestOverLimitBodyIsAnsweredNotReset: a client that writes its whole body
// before it reads must read the 413, not a connection reset.
func TestOverLimitBodyIsAnsweredNotReset(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxBodyBytes = 64 << 10 })
	big := `{"model":"m","messages":[],"metadata":"` + strings.Repeat("a", 4<<20) + `"}`
	for _, framing := range []string{"length", "chunked"} {
		for _, path := range []string{"/v1/chat/completions", "/v1/files"} {
			head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			body := big
			if framing == "length" {
				head += fmt.Sprintf("Content-Length: %d\r\n\r\n", len(big))
			} else {
				head += "Transfer-Encoding: chunked\r\n\r\n"
				body = fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big)
			}
			resp, rb := rawRequest(t, srv.URL, head+body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s %s: status %d %s", framing, path, resp.StatusCode, rb)
			}
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d requests", n)
	}
}

// TestChatCompletionsUnderAnyPrefixAreInspected: servers route chat
// completions under other prefixes too (Azure's deployments, LiteLLM's
// engines); a POST to such a path carries a chat request and its calls are
// checked like those of /v1/chat/completions.
func TestChatCompletionsUnderAnyPrefixAreInspected(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{}"`))})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
	for _, path := range []string{"/v1/openai/deployments/gpt-4o/chat/completions", "/v1/engines/m/chat/completions"} {
		resp, body := post(t, srv, path+"?api-version=2024-10-21", clickRequest(""))
		if resp.StatusCode != http.StatusBadRequest || header(resp, "X-Toolguard-Outcome") != "failed" {
			t.Errorf("%s: status %d outcome %q, want the invalid call refused: %.300s", path, resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
		}
		if resp, body := post(t, srv, strings.Replace(path, "chat/completions", "Chat/Completions", 1), clickRequest("")); resp.StatusCode != http.StatusBadRequest ||
			mustJSON(t, body).Get("error.code").String() != "invalid_path" {
			t.Errorf("%s in capitals: status %d %s", path, resp.StatusCode, body)
		}
		if resp, body := do(t, t.Context(), srv, "PUT", path, clickRequest(""), nil); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("PUT %s: status %d %s", path, resp.StatusCode, body)
		}
	}
	got := up.requests()
	if len(got) != 2 || got[0].Path != "/v1/openai/deployments/gpt-4o/chat/completions" || got[0].RawQuery != "api-version=2024-10-21" {
		t.Errorf("the upstream got %d requests, want the two POSTs on their paths", len(got))
	}
}

// TestRefusalsBeforeTheBodyAreAnsweredNotReset: a request refused before
// its body is read (a wrong key, a refused path or method) is answered to a
// client that writes its whole body before it reads, as a 413 is: without
// the drain, the server closes the connection on the unread body and the
// client sees a reset instead of the 401, 400 or 405.
func TestRefusalsBeforeTheBodyAreAnsweredNotReset(t *testing.T) {
	up := newUpstream(t, reply{Body: `{}`})
	srv, _ := guard(t, up, func(c *policy.Config) { c.APIKeys = []string{"client-key-1234"} })
	big := `{"model":"m","messages":[],"metadata":"` + strings.Repeat("a", 4<<20) + `"}`
	for _, tt := range []struct {
		method, path, key string
		want              int
	}{
		{method: "POST", path: "/v1/chat/completions", key: "wrong-key", want: http.StatusUnauthorized},
		{method: "POST", path: "/v1/chat%2Fcompletions", key: "client-key-1234", want: http.StatusBadRequest},
		{method: "PUT", path: "/v1/chat/completions", key: "client-key-1234", want: http.StatusMethodNotAllowed},
	} {
		req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			tt.method, tt.path, tt.key, len(big), big)
		if resp, body := rawRequest(t, srv.URL, req); resp.StatusCode != tt.want {
			t.Errorf("%s %s: status %d, want %d: %s", tt.method, tt.path, resp.StatusCode, tt.want, body)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("forwarded %d requests", n)
	}
}

// TestCompressedBodiesAreReadWhole: a gzip or deflate body is decoded whole
// or refused. Data after the compressed stream (a second gzip member, which
// Go's and Python's gzip readers decode and append, or bytes after the
// DEFLATE stream) would be dropped unread, and two Content-Encoding headers
// leave it open which applies: both are refused, never forwarded.
func TestCompressedBodiesAreReadWhole(t *testing.T) {
	body := clickRequest("")
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{\"selector\":\"#a\"}"`))})
	srv, _ := guard(t, up, nil)
	for _, tt := range []struct {
		name, body string
		encoding   []string
		want       int
	}{
		{name: "two gzip members", body: compressed(gzip.NewWriter, body) + compressed(gzip.NewWriter, "\n"), encoding: []string{"gzip"}, want: 400},
		{name: "bytes after the gzip member", body: compressed(gzip.NewWriter, body) + "trailing", encoding: []string{"gzip"}, want: 400},
		{name: "bytes after the zlib stream", body: compressed(zlib.NewWriter, body) + "trailing", encoding: []string{"deflate"}, want: 400},
		{name: "two Content-Encoding headers", body: compressed(gzip.NewWriter, body), encoding: []string{"identity", "gzip"}, want: 415},
		{name: "gzip", body: compressed(gzip.NewWriter, body), encoding: []string{"gzip"}, want: 200},
		{name: "zlib", body: compressed(zlib.NewWriter, body), encoding: []string{"deflate"}, want: 200},
	} {
		resp, rb := do(t, t.Context(), srv, "POST", "/v1/chat/completions", tt.body, http.Header{"Content-Encoding": tt.encoding})
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d: %s", tt.name, resp.StatusCode, tt.want, rb)
		}
	}
	got := up.requests()
	if len(got) != 2 {
		t.Fatalf("%d upstream requests, want the two whole bodies", len(got))
	}
	for _, r := range got {
		if string(r.Body) != body || r.Header.Get("Content-Encoding") != "" {
			t.Errorf("the upstream got %q (Content-Encoding %q), want the decoded body", r.Body, r.Header.Get("Content-Encoding"))
		}
	}
}

// compressed is s written through a compressor (gzip.NewWriter,
// zlib.NewWriter).
func compressed[W io.WriteCloser](newWriter func(io.Writer) W, s string) string {
	var b bytes.Buffer
	w := newWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

// TestRepeatedRequestsAreReadAsUpstreamsReadThem: a client's request of the
// same shape as its last, read as a repeat of it (wire.Templates), reaches
// the upstream byte for byte when only its values changed, and is refused as
// before when a value's place hides a duplicate member, a member in another
// letter case, or invalid UTF-8.
func TestRepeatedRequestsAreReadAsUpstreamsReadThem(t *testing.T) {
	ask := func(content string) string {
		return `{"model":"gpt-test","messages":[{"role":"user","content":` + content + `}],"tools":` + clickTools + `}`
	}
	tests := []struct {
		name, second string
		status       int
		code         string
	}{
		{name: "other values", second: strings.Replace(ask(`"Click the other button, \"now\"."`), `gpt-test`, `gpt-other`, 1), status: 200},
		{name: "a duplicate content in the content's place", second: ask(`"a","content":"b"`), status: 400, code: "request_ambiguous"},
		{name: "a member in another case in the content's place", second: ask(`"a","Content":"b"`), status: 400, code: "request_ambiguous"},
		{name: "a second tools in the content's place", second: ask(`"a"}],"tools":[],"x":[{"content":"b"`), status: 400, code: "request_ambiguous"},
		{name: "invalid UTF-8 in the content", second: ask("\"a\xffb\""), status: 400, code: "request_not_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, reply{Body: toolReply(`{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`, clickCall("call_1", `"{\"selector\":\"#a\"}"`))})
			srv, _ := guard(t, up, nil)
			if resp, body := post(t, srv, "/v1/chat/completions", ask(`"Click the button."`)); resp.StatusCode != 200 {
				t.Fatalf("first request: status %d, %s", resp.StatusCode, body)
			}
			resp, body := post(t, srv, "/v1/chat/completions", tt.second)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			got := up.requests()
			if tt.code != "" {
				if code := mustJSON(t, body).Get("error.code").String(); code != tt.code {
					t.Errorf("code %q, want %q (%s)", code, tt.code, body)
				}
				if len(got) != 1 {
					t.Errorf("the upstream got %d requests, want the first alone", len(got))
				}
				return
			}
			if len(got) != 2 || string(got[1].Body) != tt.second {
				t.Errorf("the upstream got %d requests, the last %q; want the second byte for byte", len(got), got[len(got)-1].Body)
			}
		})
	}
}
