package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The causes of an upstream request's context that ran out of time: they
// tell that expiry apart from a client that went away, which cancels the
// same context.
var (
	errUpstreamTimeout       = errors.New("TOOLGUARD_UPSTREAM_TIMEOUT passed")
	errUpstreamHeaderTimeout = errors.New("TOOLGUARD_UPSTREAM_HEADER_TIMEOUT passed before the response's headers")
)

// upstreamTimedOut reports whether err is one of the causes above.
func upstreamTimedOut(err error) bool {
	return errors.Is(err, errUpstreamTimeout) || errors.Is(err, errUpstreamHeaderTimeout)
}

// timedOut is err, saying which timeout stopped the upstream request of ctx
// if one did: an HTTP/2 transport reports such a request with the
// context's error, context.Canceled, which would read as a client that
// left.
func timedOut(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); upstreamTimedOut(cause) && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// An upstreamDeadline bounds one upstream request (the first or a re-ask)
// with one timer: TOOLGUARD_UPSTREAM_HEADER_TIMEOUT for the response's
// headers, TOOLGUARD_UPSTREAM_TIMEOUT for the whole request, body
// included. The transport's ResponseHeaderTimeout would start a timer and
// a channel of its own for every request beside the context's; this timer
// first fires at the earlier of the two times and, when the headers came
// in time, is set again for what is left of the whole.
type upstreamDeadline struct {
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	start   time.Time
	total   time.Duration
	headers bool // the headers arrived, or their time is the whole's
	ended   bool
}

// begin returns the context of the upstream request, derived from parent,
// which d cancels with errUpstreamHeaderTimeout or errUpstreamTimeout when
// the request's time is up. end must be called once the request is over.
func (d *upstreamDeadline) begin(parent context.Context, header, total time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancel, d.start, d.total = cancel, time.Now(), total
	d.headers = header >= total
	d.timer = time.AfterFunc(min(header, total), d.expire)
	return ctx
}

// headersIn notes that the response's headers arrived: from then on only
// the whole request's time counts.
func (d *upstreamDeadline) headersIn() {
	d.mu.Lock()
	d.headers = true
	d.mu.Unlock()
}

// expire runs when the timer fires.
func (d *upstreamDeadline) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch left := d.total - time.Since(d.start); {
	case d.ended:
	case !d.headers:
		d.cancel(errUpstreamHeaderTimeout)
	case left > 0:
		d.timer.Reset(left)
	default:
		d.cancel(errUpstreamTimeout)
	}
}

// end stops the timer and cancels the request's context.
func (d *upstreamDeadline) end() {
	d.mu.Lock()
	d.ended = true
	d.mu.Unlock()
	d.timer.Stop()
	d.cancel(nil)
}
