package proxy

import (
	"net"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// NewTransport returns the transport toolguard uses to reach the upstream,
// with the configured connect and header timeouts. It keeps many idle
// connections per host: the default of 2 makes a busy proxy open and close a
// connection for most requests.
func NewTransport(cfg policy.Config) *http.Transport {
	d := &net.Dialer{Timeout: cfg.UpstreamConnectTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   cfg.UpstreamConnectTimeout,
		ResponseHeaderTimeout: cfg.UpstreamHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
	}
}
