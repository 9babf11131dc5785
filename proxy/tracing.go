package proxy

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/toolguard/toolguard/proxy/internal/wire"
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

// maxSpanValue bounds a span's name and each of its attribute values, in
// bytes: spans wait in the exporter's queue (2,048 by default) until they
// are sent, and a client names the model, the path, its User-Agent. A 1 MB
// model name went whole into three spans' names and attributes.
const maxSpanValue = 1024

// boundedProvider is the TracerProvider toolguard traces with: its spans
// clip their names and string attributes to maxSpanValue, those that
// otelhttp takes from the request's headers included.
type boundedProvider struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p boundedProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return boundedTracer{tr: p.tp.Tracer(name, opts...)}
}

type boundedTracer struct {
	embedded.Tracer
	tr trace.Tracer
}

func (t boundedTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	start := []trace.SpanStartOption{trace.WithSpanKind(cfg.SpanKind()), trace.WithAttributes(clipAttributes(cfg.Attributes())...),
		trace.WithLinks(cfg.Links()...)}
	if !cfg.Timestamp().IsZero() {
		start = append(start, trace.WithTimestamp(cfg.Timestamp()))
	}
	if cfg.NewRoot() {
		start = append(start, trace.WithNewRoot())
	}
	ctx, span := t.tr.Start(ctx, clipSpanValue(name), start...)
	span = boundedSpan{span}
	return trace.ContextWithSpan(ctx, span), span
}

// boundedSpan clips what is set on a span after it started.
type boundedSpan struct{ trace.Span }

func (s boundedSpan) SetName(name string) { s.Span.SetName(clipSpanValue(name)) }

func (s boundedSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.Span.SetAttributes(clipAttributes(kv)...)
}

func (s boundedSpan) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	event := []trace.EventOption{trace.WithAttributes(clipAttributes(cfg.Attributes())...)}
	if !cfg.Timestamp().IsZero() {
		event = append(event, trace.WithTimestamp(cfg.Timestamp()))
	}
	s.Span.AddEvent(clipSpanValue(name), event...)
}

func (s boundedSpan) SetStatus(code codes.Code, description string) {
	s.Span.SetStatus(code, clipSpanValue(description))
}

func clipSpanValue(s string) string { return wire.Clip(s, maxSpanValue-3) }

// clipAttributes clips string values to maxSpanValue, and string slices to
// 8 values of 64 bytes (the other kinds are bounded already).
func clipAttributes(kv []attribute.KeyValue) []attribute.KeyValue {
	out := kv
	for i, a := range kv {
		var v attribute.Value
		switch a.Value.Type() {
		case attribute.STRING:
			if len(a.Value.AsString()) <= maxSpanValue-3 {
				continue
			}
			v = attribute.StringValue(clipSpanValue(a.Value.AsString()))
		case attribute.STRINGSLICE:
			ss := a.Value.AsStringSlice()
			clipped := make([]string, min(len(ss), 8))
			for j := range clipped {
				clipped[j] = wire.Clip(ss[j], 61)
			}
			v = attribute.StringSliceValue(clipped)
		default:
			continue
		}
		if &out[0] == &kv[0] {
			out = append([]attribute.KeyValue(nil), kv...)
		}
		out[i] = attribute.KeyValue{Key: attribute.Key(clipSpanValue(string(a.Key))), Value: v}
	}
	return out
}
