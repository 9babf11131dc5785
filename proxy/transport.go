package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// NewTransport returns the transport toolguard uses to reach the upstream,
// with the configured connect timeout (the handler bounds each request's
// wait for headers and its whole time, see upstreamDeadline). It keeps many
// idle connections per host: the default of 2 makes a busy proxy open and
// close a connection for most requests.
func NewTransport(cfg policy.Config) *http.Transport {
	d := &net.Dialer{Timeout: cfg.UpstreamConnectTimeout, KeepAlive: 30 * time.Second}
	copies := newBufferPool()
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return copyConn{Conn: c, plain: writerOnly{c}, copies: copies}, nil
		},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   cfg.UpstreamConnectTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
	}
}

// copyConn is a connection to the upstream that copies what it is given to
// write from a reader (ReadFrom) through a buffer of copies'. net/http's
// transport writes a request body larger than its own 4 KB buffer that way,
// and a TCP connection, unless the body is a file or a socket, copies it
// through 32 KB allocated for the body: as much again as a 40 KB
// conversation's body itself. Over TLS the transport writes to its
// tls.Conn, which reads no body this way: a body it sends is copied as
// before.
type copyConn struct {
	net.Conn
	plain  io.Writer // Conn without its ReadFrom (writerOnly), made once
	copies *bufferPool
}

func (c copyConn) ReadFrom(r io.Reader) (int64, error) {
	b := c.copies.get()
	defer c.copies.put(b)
	return io.CopyBuffer(c.plain, r, *b)
}

// CloseWrite half-closes the connection as the connection it wraps does: a
// protocol switched to (a WebSocket) is copied both ways, and each way's end
// half-closes the other side.
func (c copyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return fmt.Errorf("CloseWrite: %w", http.ErrNotSupported)
}

// writerOnly hides a writer's ReadFrom, so that io.CopyBuffer copies
// through the buffer it is given.
type writerOnly struct{ io.Writer }
