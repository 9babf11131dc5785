package proxy

import (
	"net/http"
)

// slots bounds the client requests talking to the upstream at once. A
// request holds its slot from its first upstream request to the end of its
// response, re-asks included: they are sequential, so the bound is on
// concurrent upstream requests too, and a request that got a slot never
// loses its re-asks to a full proxy halfway through.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// acquire takes a slot without waiting: a proxy past its bound answers at
// once and lets the client's own backoff spread the load, rather than
// queueing requests whose clients may already have given up.
func (s slots) acquire() (release func(), ok bool) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, true
	default:
		return nil, false
	}
}

// overloaded is the 503 past the bound. The OpenAI SDKs retry a 503 and
// honour Retry-After.
func overloaded() *apiError {
	return &apiError{
		Status: http.StatusServiceUnavailable, Type: "server_error", Code: "toolguard_overloaded",
		Msg:    "toolguard is at TOOLGUARD_MAX_CONCURRENT_UPSTREAM requests to the upstream; retry shortly",
		Header: http.Header{"Retry-After": {"1"}},
	}
}
