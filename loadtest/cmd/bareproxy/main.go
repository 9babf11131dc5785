// Command bareproxy is the yardstick of the load comparison: Go's
// httputil.ReverseProxy in front of the upstream, doing nothing else, with
// the transport tuned as toolguard's is (the default of 2 idle connections
// per host makes a busy proxy open and close a connection for most
// requests) and its copy buffers pooled as toolguard's are (without a pool
// it allocates 32 KiB for every response it copies).
//
// Three settings measure what a live heap costs the collector: -hold keeps a
// buffer of that many bytes live, memory the collector counts but need not
// scan; -reserve keeps one it never writes, as toolguard's
// TOOLGUARD_GC_RESERVE_BYTES does; built with -tags schemalib, the proxy
// loads the JSON Schema library toolguard validates with, and holds the
// meta-schemas it compiles when it loads, as toolguard does (see
// schemalib.go).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/toolguard/toolguard/loadtest/internal/loopback"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bareproxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9001", "where to listen (a loopback address)")
	upstream := fs.String("upstream", "http://127.0.0.1:9000", "the upstream's base URL")
	hold := fs.Int("hold", 0, "bytes of memory without pointers to hold live for the process's life, to measure what a live heap the collector need not scan costs it")
	reserve := fs.Int("reserve", 0, "bytes of memory without pointers to hold live for the process's life and never write, as toolguard's TOOLGUARD_GC_RESERVE_BYTES")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"hold", *hold}, {"reserve", *reserve}} {
		if f.n < 0 || f.n > maxHold {
			return fmt.Errorf("-%s %d: want a size from 0 to %d bytes", f.name, f.n, maxHold)
		}
	}
	held = make([]byte, *hold)
	for i := range held {
		held[i] = byte(i) // written, so that its pages are the process's as a buffer in use is
	}
	reserved = make([]byte, *reserve)
	target, err := url.Parse(*upstream)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
	}
	rp.BufferPool = newBufferPool()
	rp.ErrorLog = log.New(os.Stderr, "bareproxy: ", 0)
	return loopback.Serve(ctx, *addr, buffered(rp))
}

// held and reserved are what -hold and -reserve keep live, each at most
// maxHold bytes.
var held, reserved []byte

const maxHold = 1 << 30

// copyBufferSize is the size of ReverseProxy's own copy buffers.
const copyBufferSize = 32 << 10

// bufferPool lends the reverse proxy its copy buffers, the same pool as
// toolguard's (proxy/buffers.go).
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}}}
}

func (bp *bufferPool) Get() []byte { return *bp.p.Get().(*[]byte) }

func (bp *bufferPool) Put(b []byte) {
	if cap(b) == copyBufferSize {
		b = b[:copyBufferSize]
		bp.p.Put(&b)
	}
}

// buffered reads the request body before the proxy sends it on, as toolguard
// does: with the body streamed through, streamed responses get cut short
// under sequential keep-alive requests ("ReverseProxy read error during body
// copy: use of closed network connection", the family of golang/go#40747).
func buffered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			body, err := readBody(r)
			if err != nil {
				http.Error(w, "could not read the request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads the request body into a buffer sized from Content-Length
// (at most 64 KiB up front), as toolguard does: io.ReadAll grows its buffer
// from 512 bytes, and a 40 KB chat history would cost the yardstick seven
// allocations and copies that toolguard does not make.
func readBody(r *http.Request) ([]byte, error) {
	const maxPresize = 64 << 10
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), maxPresize)+bytes.MinRead))
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}
