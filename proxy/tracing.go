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

// attempt is what the context of an upstream request says about it.
type attempt struct {
	kind  string // attemptFirst, attemptReask or attemptFallback
	model string // the model the request names; "" for the request's own
}

// withAttempt marks the upstream requests made with ctx as an attempt of
// the given kind, naming model (a fallback's may differ from the client's).
func withAttempt(ctx context.Context, kind, model string) context.Context {
	return context.WithValue(ctx, attemptKey{}, attempt{kind, model})
}

func attemptOf(ctx context.Context) attempt {
	if a, ok := ctx.Value(attemptKey{}).(attempt); ok {
		return a
	}
	return attempt{kind: attemptFirst}
}

// chatModel returns the model of an upstream request that is an attempt of
// an inspected chat completion, and whether it is one.
func chatModel(r *http.Request) (string, bool) {
	info := requestInfoFrom(r.Context())
	if info == nil || info.inspected == nil {
		return "", false
	}
	if a := attemptOf(r.Context()); a.model != "" {
		return a.model, true
	}
	return info.inspected.model, true
}

// traceContext is the propagation toolguard reads from clients and sends
// upstream: W3C trace context and baggage.
var traceContext = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// tracedTransport wraps rt so that each upstream request is a client span,
// named as the GenAI conventions name an inference ("chat gpt-4o") when it
// is an attempt of an inspected chat completion.
func tracedTransport(rt http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	return otelhttp.NewTransport(attemptAttributes{rt},
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(traceContext),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if model, ok := chatModel(r); ok {
				return "chat " + model
			}
			return "upstream " + attemptOf(r.Context()).kind
		}))
}

// attemptAttributes adds toolguard's attributes to the span of the upstream
// request it carries.
type attemptAttributes struct{ next http.RoundTripper }

func (a attemptAttributes) RoundTrip(r *http.Request) (*http.Response, error) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("toolguard.attempt", attemptOf(r.Context()).kind))
		if model, ok := chatModel(r); ok {
			span.SetAttributes(attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.request.model", model))
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
			// Renamed by traceRoute once the route is known.
			return r.Method
		}))
}

// traceRoute names a request's server span after the route it took, once
// routing has found it (the span starts before).
func traceRoute(ctx context.Context, method, route string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetName(method + " " + route)
	span.SetAttributes(attribute.String("http.route", route))
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
		attribute.String("toolguard.outcome", string(ex.x.Outcome)),
		attribute.Int("toolguard.reasks", ex.x.Reasks),
		attribute.Int("toolguard.repairs", ex.x.Repairs()),
	)
}
