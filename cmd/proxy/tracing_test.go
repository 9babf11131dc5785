package main

import (
	"context"
	"strings"
	"testing"
)

// TestTracingIsOffUnlessAskedFor: the standard OTEL_ variables turn tracing
// on and off; what toolguard cannot honour stops start-up rather than
// silently exporting nothing.
func TestTracingIsOffUnlessAskedFor(t *testing.T) {
	tests := []struct {
		name    string
		give    map[string]string
		wantOn  bool
		wantErr string
	}{
		{name: "nothing-set"},
		{name: "endpoint", give: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, wantOn: true},
		{name: "traces-endpoint", give: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, wantOn: true},
		{name: "exporter-otlp", give: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, wantOn: true},
		{name: "exporter-none", give: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{name: "sdk-disabled", give: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{name: "other-exporter", give: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "OTEL_TRACES_EXPORTER=zipkin"},
		{name: "grpc", give: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
				t.Setenv(k, tt.give[k])
			}
			tp, err := newTracerProvider(context.Background())
			if tp != nil {
				defer tp.Shutdown(context.Background())
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || (tp != nil) != tt.wantOn {
				t.Errorf("tracing on = %v, err = %v; want on = %v", tp != nil, err, tt.wantOn)
			}
		})
	}
}
