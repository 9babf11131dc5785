// Package loopback serves the load harness's fake model and bare proxy. It
// guarantees:
//   - a server listens on a loopback address only: any other is refused;
//   - Serve returns when its context is done, after a short graceful
//     shutdown.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Check refuses an address that is not on the loopback interface.
func Check(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: listen on a loopback address such as 127.0.0.1", addr)
	}
	return nil
}

// Serve serves h on addr until ctx is done.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	if err := Check(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
