package proxy

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
)

// Names of the upstreams, in the breaker's metrics and logs.
const (
	upstreamPrimary  = "primary"
	upstreamFallback = "fallback"
)

// breaker is a RoundTripper that stops sending requests to an upstream that
// keeps failing: after the configured run of failures it answers every
// request with a 503 for the cool-down, then lets one probe through, whose
// result closes or reopens it. gobreaker keeps the state; this type decides
// what a failure is, and tells the client, the log and the metrics.
type breaker struct {
	name     string
	next     http.RoundTripper
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	failures int
	cooldown time.Duration
	metrics  *breakerMetrics

	mu       sync.Mutex
	openedAt time.Time // when it last opened, for Retry-After
}

var _ http.RoundTripper = (*breaker)(nil)

// newBreaker wraps next in a breaker that opens after failures consecutive
// failures for cooldown. logState is told of every change of state.
func newBreaker(name string, next http.RoundTripper, failures int, cooldown time.Duration, m *breakerMetrics, logState func(name string, from, to gobreaker.State)) *breaker {
	b := &breaker{name: name, next: next, failures: failures, cooldown: cooldown, metrics: m}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name: name,
		// One probe at a time when half-open: a recovering upstream is not
		// met with every waiting client at once.
		MaxRequests: 1,
		// Interval 0: counts are never reset while closed, so only a
		// success ends a run of failures; they are consecutive.
		Timeout:     cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(failures) },
		IsExcluded:  func(err error) bool { return errors.Is(err, errClientGone) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			// Called with gobreaker's lock held: only b.mu is taken here,
			// and b.mu is never held while calling into gobreaker.
			if to == gobreaker.StateOpen {
				b.mu.Lock()
				b.openedAt = time.Now()
				b.mu.Unlock()
			}
			m.state.WithLabelValues(name).Set(float64(stateValue(to)))
			m.transitions.WithLabelValues(name, to.String()).Inc()
			logState(name, from, to)
		},
	})
	m.state.WithLabelValues(name).Set(float64(stateValue(gobreaker.StateClosed)))
	m.rejections.WithLabelValues(name)
	for _, s := range []gobreaker.State{gobreaker.StateClosed, gobreaker.StateHalfOpen, gobreaker.StateOpen} {
		m.transitions.WithLabelValues(name, s.String())
	}
	return b
}

// errClientGone marks a request that ended because its client left: it says
// nothing of the upstream's health.
var errClientGone = errors.New("client gone")

// errUpstreamFailed marks a response whose status counts as a failure.
var errUpstreamFailed = errors.New("upstream failed")

func (b *breaker) RoundTrip(req *http.Request) (*http.Response, error) {
	done, err := b.cb.Allow()
	if err != nil {
		b.metrics.rejections.WithLabelValues(b.name).Inc()
		// A RoundTripper closes the body it was given, sent or not.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, b.open(errors.Is(err, gobreaker.ErrOpenState))
	}
	resp, err := b.next.RoundTrip(req)
	v := verdict(req.Context(), resp, err)
	if v != nil || resp.Body == nil || resp.Body == http.NoBody {
		done(v)
		return resp, err
	}
	// The headers say the upstream answered; the body says whether it
	// finished. An upstream that sends its headers and then stalls or
	// breaks off every body failed every request, and is judged so. A
	// stream is judged at its first bytes: it may last minutes, and a
	// half-open breaker lets no other request through until its probe is
	// judged.
	resp.Body = &judgedBody{ReadCloser: resp.Body, ctx: req.Context(), done: done,
		stream: strings.HasPrefix(headerGet(resp.Header, "Content-Type"), "text/event-stream")}
	return resp, err
}

// judgedBody reports its response's verdict to the breaker when its body
// ends (a stream's: when its first bytes arrive): a read error is a failure
// (a timeout, a reset), unless the client left; the end of the body, or a
// Close before it (toolguard stopped reading), is a success.
type judgedBody struct {
	io.ReadCloser
	ctx    context.Context
	stream bool
	once   sync.Once
	done   func(error)
}

func (j *judgedBody) Read(p []byte) (int, error) {
	n, err := j.ReadCloser.Read(p)
	switch {
	case err == io.EOF || (n > 0 && j.stream):
		j.judge(nil)
	case err != nil:
		j.judge(verdict(j.ctx, nil, err))
	}
	return n, err
}

func (j *judgedBody) Close() error {
	j.judge(nil)
	return j.ReadCloser.Close()
}

func (j *judgedBody) judge(err error) { j.once.Do(func() { j.done(err) }) }

// verdict is what one upstream request says of the upstream's health: nil
// for a success, errClientGone for neither, another error for a failure.
func verdict(ctx context.Context, resp *http.Response, err error) error {
	switch {
	case err != nil && upstreamTimedOut(context.Cause(ctx)):
		return err // toolguard's deadline cancelled it: the upstream was too slow
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(context.Cause(ctx), context.Canceled)):
		return errClientGone
	case err != nil:
		return err // a timeout, a connection refused or reset
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
		// 501 says a route does not exist, not that the upstream is down.
		return errUpstreamFailed
	}
	return nil
}

// open is the 503 of an open breaker (or of a half-open one whose probe is
// out), with Retry-After set to the rest of the cool-down.
func (b *breaker) open(isOpen bool) *apiError {
	wait := time.Second
	if isOpen {
		b.mu.Lock()
		wait = b.cooldown - time.Since(b.openedAt)
		b.mu.Unlock()
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	msg := "the upstream failed " + strconv.Itoa(b.failures) + " times in a row; toolguard sends it nothing until the cool-down " +
		"(TOOLGUARD_BREAKER_COOLDOWN) is over; retry after " + strconv.Itoa(secs) + "s"
	if !isOpen {
		msg = "the upstream is being probed after failing " + strconv.Itoa(b.failures) + " times in a row; retry after " + strconv.Itoa(secs) + "s"
	}
	if b.name == upstreamFallback {
		msg = "fallback: " + msg
	}
	return &apiError{
		Status: http.StatusServiceUnavailable, Type: "server_error", Code: "upstream_circuit_open", Msg: msg,
		Header: http.Header{"Retry-After": {strconv.Itoa(secs)}},
	}
}

// stateValue is the gauge's value for a state: 0 closed, 1 half-open, 2 open.
func stateValue(s gobreaker.State) int {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	}
	return 0
}

// breakerMetrics are the breakers' collectors, shared by the primary's and
// the fallback's (the upstream label tells them apart).
type breakerMetrics struct {
	state       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	rejections  *prometheus.CounterVec
}

func newBreakerMetrics(reg prometheus.Registerer) *breakerMetrics {
	m := &breakerMetrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolguard_breaker_state",
			Help: "Circuit breaker state, by upstream (primary, fallback): 0 closed, 1 half-open, 2 open.",
		}, []string{"upstream"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_breaker_transitions_total",
			Help: "Circuit breaker state changes, by upstream and new state.",
		}, []string{"upstream", "to"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_breaker_rejections_total",
			Help: "Requests answered with a 503 by an open or probing circuit breaker, by upstream.",
		}, []string{"upstream"}),
	}
	reg.MustRegister(m.state, m.transitions, m.rejections)
	return m
}

// CloseIdleConnections passes the call on (see closeIdle).
func (b *breaker) CloseIdleConnections() { closeIdle(b.next) }
