package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

// Every buffer of a request body given back in this package's tests is
// overwritten (see poisonBodies): a cache, label or reader that kept a
// slice of a body past its request reads '#'s, and its test fails. A run
// of benchmarks counts what the proxy does, without it.
func TestMain(m *testing.M) {
	flag.Parse()
	poisonBodies = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}

func TestBodyClasses(t *testing.T) {
	for _, c := range []struct {
		size  int64
		class int
		ok    bool
	}{
		{-1, 0, false}, {0, 0, false}, {pooledBodyMin - 1, 0, false},
		{pooledBodyMin, 0, true}, {8<<10 - 1, 0, true}, {8 << 10, 1, true},
		{32<<10 - 1, 2, true}, {42002, 3, true}, {64<<10 - 1, 3, true}, {64 << 10, 0, false}, {1 << 30, 0, false},
	} {
		class, ok := bodyClass(c.size)
		if class != c.class || ok != c.ok {
			t.Errorf("bodyClass(%d) = %d, %v; want %d, %v", c.size, class, ok, c.class, c.ok)
		}
		if ok && int64(pooledBodyFirst<<class) < c.size+1 {
			t.Errorf("class %d cannot hold %d bytes and one more", class, c.size)
		}
	}
}

// TestHeldBodyGoesBackWhenNothingReadsIt: a request's buffer is lent again
// only once the request is done and every reader of it that went upstream
// is closed, as a transport may read a body after RoundTrip returns.
func TestHeldBodyGoesBackWhenNothingReadsIt(t *testing.T) {
	var bb bodyBuffers
	var info requestInfo
	buf := bb.get(5000)
	info.body.hold(&bb, buf)
	body := append(buf, strings.Repeat("a", 5000)...)
	ctx := context.WithValue(context.Background(), requestInfoKey{}, &info)
	rc, err := upstreamBody(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	info.body.drop() // the request is done; its reader is not
	other := bb.get(5000)
	if unsafe.SliceData(other[:1]) == unsafe.SliceData(buf[:1]) {
		t.Fatal("the buffer was lent again while a reader of it was open")
	}
	got, err := io.ReadAll(rc)
	if err != nil || string(got) != strings.Repeat("a", 5000) {
		t.Fatalf("read %d bytes (%v), want the body", len(got), err)
	}
	rc.Close()
	rc.Close() // a second Close gives up nothing more
	if _, err := rc.Read(make([]byte, 1)); !errors.Is(err, errBodyGone) {
		t.Fatalf("Read after Close: %v, want errBodyGone", err)
	}
	if _, err := upstreamBody(ctx, body); !errors.Is(err, errBodyGone) {
		t.Fatalf("a reader asked for after the request: %v, want errBodyGone", err)
	}
	again := bb.get(5000)
	if unsafe.SliceData(again[:1]) != unsafe.SliceData(buf[:1]) {
		t.Fatal("the buffer did not come back once its last reader closed")
	}
	if len(again) != 0 || again[:1][0] != '#' {
		t.Fatalf("the buffer came back as %q..., not emptied and poisoned", again[:1])
	}
	if info.body.refs.Load() != 0 {
		t.Fatalf("%d holds left", info.body.refs.Load())
	}
}

func TestBodyBuffersAreBounded(t *testing.T) {
	var bb bodyBuffers
	var lent [][]byte
	for range 3 * pooledPerClass {
		lent = append(lent, bb.get(50<<10))
	}
	for _, b := range lent {
		bb.put(b)
	}
	bb.put(make([]byte, 0, 100))     // not one of its sizes
	bb.put(make([]byte, 0, 128<<10)) // larger than its largest
	for c, free := range bb.free {
		if want := map[int]int{3: pooledPerClass}[c]; len(free) != want {
			t.Errorf("class %d keeps %d buffers, want %d", c, len(free), want)
		}
	}
}

// TestRequestsShareNoBody: clients send bodies of pooled sizes at once,
// inspected and passed through; each upstream must receive its client's
// bytes, each client its own tool, and the metrics every tool's name. Some
// go through a transport that asks for the body again (GetBody, as a
// transport retrying does), answers at once, and reads the body only after
// the response is done with, as http.RoundTripper allows: their bytes must
// still be their client's. Under the race detector, as CI runs it, a
// buffer lent again while a reader of it is open is a race too.
func TestRequestsShareNoBody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(b)
		w.Header().Set("X-Body-Sum", hex.EncodeToString(sum[:]))
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		tool := gjson.GetBytes(b, "tools.0.function.name").String()
		io.WriteString(w, fake.Chat.JSON(fake.Reply{Calls: []fake.Call{{ID: "c1", Name: tool, Args: `{"x":1}`}}, In: 1, Out: 1}))
	}))
	t.Cleanup(up.Close)
	const clients, requests = 8, 25
	errs := make(chan error, 2*clients*requests)
	late := &lateReader{next: http.DefaultTransport.(*http.Transport).Clone(), errs: errs}
	t.Cleanup(late.next.CloseIdleConnections)
	h, srv := serveProxy(t, up.URL, late)

	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			tool := fmt.Sprintf("tool_%d", g)
			for n := range requests {
				filler := strings.Repeat(string(rune('a'+r.IntN(26))), pooledBodyMin+r.IntN(56<<10))
				path, early := "/v1/chat/completions", false
				var body []byte
				switch n % 3 {
				case 0, 1:
					body = fmt.Appendf(nil, `{"model":"m","messages":[{"role":"user","content":%q}],"tools":[{"type":"function","function":{"name":%q,"parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}]}`, filler, tool)
				default:
					path, early = "/v1/embeddings", r.IntN(2) == 0
					body = fmt.Appendf(nil, `{"model":"m","input":%q}`, filler)
				}
				sum := sha256.Sum256(body)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if early {
					req.Header.Set("X-Want-Sum", hex.EncodeToString(sum[:]))
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					continue
				}
				reply, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode != http.StatusOK:
					errs <- fmt.Errorf("client %d, request %d: status %d: %s", g, n, resp.StatusCode, reply)
				case !early && resp.Header.Get("X-Body-Sum") != hex.EncodeToString(sum[:]):
					errs <- fmt.Errorf("client %d, request %d: the upstream received other bytes than the client sent", g, n)
				case path == "/v1/chat/completions" && gjson.GetBytes(reply, "choices.0.message.tool_calls.0.function.name").String() != tool:
					errs <- fmt.Errorf("client %d, request %d: reply %s, want a call of %s", g, n, reply, tool)
				}
			}
		})
	}
	wg.Wait()
	late.wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if late.n.Load() == 0 {
		t.Fatal("no body was read after its response")
	}
	var names []string
	for name := range h.metrics.tools.seen {
		names = append(names, name)
	}
	for g := range clients {
		if tool := fmt.Sprintf("tool_%d", g); !strings.Contains(strings.Join(names, ","), tool) {
			t.Errorf("tool labels %q lack %s", names, tool)
		}
	}
}

// lateReader answers a request that carries X-Want-Sum at once, and reads
// its body, asked for again, only once the proxy closed the response (its
// request is done then, or nearly), checking the body's sum; it passes
// other requests on.
type lateReader struct {
	next *http.Transport
	errs chan<- error
	wg   sync.WaitGroup
	n    atomic.Int64
}

func (l *lateReader) RoundTrip(req *http.Request) (*http.Response, error) {
	want := req.Header.Get("X-Want-Sum")
	if want == "" {
		return l.next.RoundTrip(req)
	}
	again, err := req.GetBody()
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	closed := make(chan struct{})
	l.wg.Go(func() {
		<-closed
		b, err := io.ReadAll(again)
		again.Close()
		sum := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(sum[:]) != want {
			l.errs <- fmt.Errorf("a body read after its response was not its client's (%d bytes, %v): %.40q", len(b), err, b)
		}
		l.n.Add(1)
	})
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    &closeSignal{Reader: strings.NewReader(`{"object":"list","data":[]}`), closed: closed},
		Request: req,
	}, nil
}

type closeSignal struct {
	io.Reader
	once   sync.Once
	closed chan struct{}
}

func (c *closeSignal) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// TestAnOpenBreakerClosesTheBody: a RoundTripper closes the body it is
// given, sent or not; a pooled body's buffer comes back only then.
func TestAnOpenBreakerClosesTheBody(t *testing.T) {
	down := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })
	b := newBreaker("primary", down, 1, time.Hour, newBreakerMetrics(prometheus.NewRegistry()), func(string, gobreaker.State, gobreaker.State) {})
	for i := range 2 {
		body := &closeCount{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequest(http.MethodPost, "http://upstream.invalid/v1/chat/completions", body)
		if _, err := b.RoundTrip(req); err == nil {
			t.Fatalf("request %d went through", i+1)
		}
		if i == 1 && body.n != 1 {
			t.Fatalf("the open breaker closed the body %d times, want once", body.n)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closeCount struct {
	io.Reader
	n int
}

func (c *closeCount) Close() error { c.n++; return nil }

// TestABodyCutShortGivesItsBufferBack: a client that declares a body of a
// pooled size and sends half of it is answered with the error of a body
// that could not be read, and the buffer its half went into comes back.
func TestABodyCutShortGivesItsBufferBack(t *testing.T) {
	cfg := policy.Default()
	cfg.UpstreamURL = "http://127.0.0.1:1/v1" // never reached
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n%s", strings.Repeat("a", 5000))
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || gjson.GetBytes(b, "error.code").String() != "body_read_error" {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	srv.Close() // returns once every handler has
	c, _ := bodyClass(10000)
	if n := len(h.bodies.free[c]); n != 1 {
		t.Fatalf("%d buffers back of the class of a 10,000-byte body, want 1", n)
	}
}

// TestASmallRequestGoesUpstreamInOneWrite sends requests whose bodies fit
// in the transport's 4 KB buffer with their headers, inspected and passed
// through, and counts the writes on the upstream's connection: one each,
// headers and body together. The reverse proxy's wrapper of a body would
// have the transport write the headers first, on their own.
func TestASmallRequestGoesUpstreamInOneWrite(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			io.WriteString(w, fake.Chat.JSON(fake.Reply{Calls: []fake.Call{{ID: "c1", Name: "click", Args: `{"selector":"#b"}`}}, In: 1, Out: 1}))
			return
		}
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(up.Close)
	var writes atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countedWrites{Conn: c, n: &writes}, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	_, srv := serveProxy(t, up.URL, tr)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Log in."}],"tools":[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]}`},
		{"/v1/embeddings", `{"model":"m","input":"Log in."}`},
	} {
		for range 3 {
			writes.Store(0)
			resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: status %d", c.path, resp.StatusCode)
			}
			if n := writes.Load(); n != 1 {
				t.Errorf("%s: the request went upstream in %d writes, want 1", c.path, n)
			}
		}
	}
}

// TestAnEmptyBodyGoesUpstreamAsNone sends a chunked request with an empty
// body through: the upstream gets no body and a length of 0, as the reverse
// proxy sends an empty one, not an empty chunked body.
func TestAnEmptyBodyGoesUpstreamAsNone(t *testing.T) {
	seen := make(chan string, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- fmt.Sprintf("transfer encoding %q, length %d, %d bytes", r.TransferEncoding, r.ContentLength, len(b))
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(up.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	_, srv := serveProxy(t, up.URL, tr)
	// A reader of unknown length: the client sends it chunked.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/embeddings", io.MultiReader())
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got, want := <-seen, `transfer encoding [], length 0, 0 bytes`; got != want {
		t.Errorf("upstream got %s, want %s", got, want)
	}
}

// countedWrites counts the writes made on a connection.
type countedWrites struct {
	net.Conn
	n *atomic.Int32
}

func (c countedWrites) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// serveProxy serves a Handler of the default configuration that reaches
// the upstream at upURL through tr.
func serveProxy(t *testing.T, upURL string, tr http.RoundTripper) (*Handler, *httptest.Server) {
	t.Helper()
	cfg := policy.Default()
	cfg.UpstreamURL = upURL + "/v1"
	h, err := New(Options{Config: cfg, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}
