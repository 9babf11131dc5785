package proxy

import (
	"net/http"
	"sync"
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

// byteBudget bounds the bytes that requests in flight hold at once for
// something a client can make large without sending it: decoded request
// bodies, which a few kilobytes of gzip can make megabytes. Like slots, it
// never waits: a request that would take it past its bound is answered
// 503 at once.
type byteBudget struct {
	mu        sync.Mutex
	held, max int64
}

func newByteBudget(max int64) *byteBudget { return &byteBudget{max: max} }

// take reserves n bytes more, or reports false and reserves nothing.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.max {
		return false
	}
	b.held += n
	return true
}

// give returns n reserved bytes.
func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// decodedInFlight is the budget of decoded request bodies that all
// requests in flight may hold, as a multiple of TOOLGUARD_MAX_BODY_BYTES:
// two bodies of the largest size decoding at once, or many small ones.
const decodedInFlight = 2

// decodingOverloaded is the 503 past the decoded bytes' budget.
func decodingOverloaded() *apiError {
	return &apiError{
		Status: http.StatusServiceUnavailable, Type: "server_error", Code: "toolguard_overloaded",
		Msg:    "toolguard holds as many decoded request bodies as it may (twice TOOLGUARD_MAX_BODY_BYTES); retry shortly, or send the body uncompressed",
		Header: http.Header{"Retry-After": {"1"}},
	}
}
