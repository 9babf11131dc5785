package proxy

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing, when Options.TracerProvider is set: a server span for each client
// request (continuing the client's W3C trace context), and a client span
// for each upstream attempt under it (the first, each re-ask, the fallback),
// whose trace context goes upstream in traceparent. Attributes follow the
// OpenTelemetry GenAI conventions where they apply (gen_ai.operation.name,
// gen_ai.request.model, gen_ai.usage.*), and toolguard's own say what it did
// (toolguard.outcome, toolguard.reasks, toolguard.repairs, toolguard.attempt).
// Without a provider nothing is wrapped and tracing costs nothing.

// Attempt kinds, as toolguard.attempt says them.
const (
	attemptFirst    = "first"
	attemptReask    = "reask"
	attemptFallback = "fallback"
)

type attemptKey struct{}

// withAttempt marks the upstream requests made with ctx as an attempt of
// the given kind.
func withAttempt(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, attemptKey{}, kind)
}

func attemptOf(ctx context.Context) string {
	if k, ok := ctx.Value(attemptKey{}).(string); ok {
		return k
	}
	return attemptFirst
}

// traceContext is the propagation toolguard reads from clients and sends
// upstream: W3C trace context and baggage.
var traceContext = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// tracedTransport wraps rt so that each upstream request is a client span.
func tracedTransport(rt http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	return otelhttp.NewTransport(attemptAttributes{rt},
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(traceContext),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return "upstream " + attemptOf(r.Context())
		}))
}

// attemptAttributes adds toolguard's attributes to the span of the upstream
// request it carries.
type attemptAttributes struct{ next http.RoundTripper }

func (a attemptAttributes) RoundTrip(r *http.Request) (*http.Response, error) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("toolguard.attempt", attemptOf(r.Context())))
		if info := requestInfoFrom(r.Context()); info != nil && info.inspected != nil {
			span.SetAttributes(attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.request.model", info.inspected.model))
		}
	}
	return a.next.RoundTrip(r)
}

// tracedHandler wraps h so that each request is a server span.
func tracedHandler(h http.Handler, tp trace.TracerProvider) http.Handler {
	return otelhttp.NewHandler(h, "toolguard",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(traceContext),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return r.Method + " " + routeOf(r)
		}))
}

// traceResult puts what became of an inspected request on its server span.
func traceResult(ctx context.Context, ex *exchange) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || ex == nil {
		return
	}
	span.SetAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", ex.model),
		attribute.Int64("gen_ai.usage.input_tokens", ex.tokens[0]+ex.tokens[2]),
		attribute.Int64("gen_ai.usage.output_tokens", ex.tokens[1]+ex.tokens[3]),
		attribute.String("toolguard.outcome", string(ex.outcome)),
		attribute.Int("toolguard.reasks", ex.reasks),
		attribute.Int("toolguard.repairs", ex.repairs()),
	)
}
