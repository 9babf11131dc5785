package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// newTracerProvider sets up OpenTelemetry tracing from the standard OTEL_*
// variables, or returns nil when they do not ask for it: tracing is on when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set,
// or OTEL_TRACES_EXPORTER=otlp (to the default endpoint, localhost:4318),
// unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Spans go out
// over OTLP/HTTP (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and the others are
// read by the exporter); OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name
// the service (toolguard by default), OTEL_TRACES_SAMPLER chooses the
// sampler.
func newTracerProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return nil, nil
	}
	exporter := os.Getenv("OTEL_TRACES_EXPORTER")
	if exporter != "" && exporter != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: toolguard exports traces over OTLP only (otlp or none)", exporter)
	}
	if exporter == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: toolguard exports over http/protobuf", p)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("toolguard"), semconv.ServiceVersion(buildVersion())),
		resource.Environment(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
