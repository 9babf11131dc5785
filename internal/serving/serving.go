// Package serving makes the http.Server that toolguard's handler is served
// by, so that the binary and the load test's profiling build serve it
// alike.
package serving

import (
	"log"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// Server serves h with cfg's timeouts: reading a request's header (at most
// 10 s) and whole request, writing its response, and an idle connection's
// wait for the next request. errorLog, if not nil, receives the server's
// own errors.
func Server(h http.Handler, cfg policy.Config, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(cfg.ReadTimeout, 10*time.Second),
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          errorLog,
	}
}

// Reserve returns the collector's reserve cfg asks for
// (TOOLGUARD_GC_RESERVE_BYTES), to be kept alive while toolguard serves: the
// collector counts it as live heap, so the heap grows that much further
// between collections, and as it is never written no page of it is
// resident (its memory comes fresh from the kernel, zero, when the process
// starts).
func Reserve(cfg policy.Config) []byte {
	return make([]byte, cfg.GCReserveBytes)
}
