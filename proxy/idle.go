package proxy

import "net/http"

// CloseIdleConnections closes the idle connections to the upstream. main
// calls it once the server has drained, so nothing is left open behind it.
func (h *Handler) CloseIdleConnections() { closeIdle(h.rt) }

func (t *timedTransport) CloseIdleConnections() { closeIdle(t.next) }

// closeIdle closes rt's idle connections if it keeps any. Every transport
// wrapper passes the call on to the one it wraps.
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
