package proxy_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// TestTracing: a request is a server span continuing the client's trace,
// each upstream attempt (the first, a re-ask, the fallback) a client span
// under it whose context goes upstream in traceparent, with the GenAI and
// toolguard attributes.
func TestTracing(t *testing.T) {
	usage := `{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}`
	up := newUpstream(t,
		reply{Body: toolReply(usage, clickCall("c1", `"{}"`))},
		reply{Body: toolReply(usage, clickCall("c2", `"{}"`))},
		reply{Body: toolReply(usage, clickCall("c3", `"{\"selector\":\"#a\"}"`))})
	cfg := policy.Default()
	cfg.FallbackModel = "gpt-strong"
	srv, rec := tracedGuard(t, up, cfg)
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", clickRequest(""), http.Header{"Traceparent": {parent}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	spans := rec.Ended()
	var server trace.SpanContext
	var serverAttrs map[attribute.Key]attribute.Value
	attempts := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		attrs := spanAttributes(s)
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server, serverAttrs = s.SpanContext(), attrs
			if s.Parent().SpanID().String() != "b7ad6b7169203331" || s.SpanContext().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
				t.Errorf("the server span does not continue the client's trace: parent %v", s.Parent())
			}
			if s.Name() != "POST /v1/chat/completions" || attrs["http.route"].AsString() != "/v1/chat/completions" {
				t.Errorf("server span %q, http.route %q: want the route", s.Name(), attrs["http.route"].AsString())
			}
		case trace.SpanKindClient:
			attempts[attrs["toolguard.attempt"].AsString()] = s
		}
	}
	if !server.IsValid() {
		t.Fatalf("no server span among %d", len(spans))
	}
	for key, want := range map[attribute.Key]any{
		"toolguard.outcome": "reasked", "toolguard.reasks": int64(2), "toolguard.repairs": int64(0), "gen_ai.operation.name": "chat",
		"gen_ai.request.model": "gpt-test", "gen_ai.usage.input_tokens": int64(30), "gen_ai.usage.output_tokens": int64(6),
	} {
		if got := serverAttrs[key].AsInterface(); got != want {
			t.Errorf("server span %s = %v, want %v", key, got, want)
		}
	}
	// Each attempt is an inference span of the model it asked: the
	// fallback's is the fallback model.
	for kind, model := range map[string]string{"first": "gpt-test", "reask": "gpt-test", "fallback": "gpt-strong"} {
		s, ok := attempts[kind]
		if !ok {
			t.Errorf("no %s attempt span (have %v)", kind, attempts)
			continue
		}
		if s.Parent().SpanID() != server.SpanID() {
			t.Errorf("the %s attempt is not a child of the server span", kind)
		}
		attrs := spanAttributes(s)
		if s.Name() != "chat "+model || attrs["gen_ai.operation.name"].AsString() != "chat" || attrs["gen_ai.request.model"].AsString() != model {
			t.Errorf("%s attempt span %q: operation %q, model %q, want chat %s", kind, s.Name(),
				attrs["gen_ai.operation.name"].AsString(), attrs["gen_ai.request.model"].AsString(), model)
		}
	}
	// Each upstream request carried its attempt's span as traceparent.
	got := up.requests()
	if len(got) != 3 {
		t.Fatalf("%d upstream requests", len(got))
	}
	for i, kind := range []string{"first", "reask", "fallback"} {
		s := attempts[kind]
		if s == nil {
			continue
		}
		want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if tp := got[i].Header.Get("Traceparent"); tp != want {
			t.Errorf("%s attempt sent traceparent %q, want %q", kind, tp, want)
		}
	}
}

// tracedGuard serves a toolguard in front of up, with cfg, whose spans rec
// records.
func tracedGuard(t *testing.T, up *fakeUpstream, cfg policy.Config) (*httptest.Server, settledSpans) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	cfg.UpstreamURL = up.URL + "/v1"
	h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	if err != nil {
		t.Fatal(err)
	}
	served := newServed(h)
	srv := httptest.NewServer(served)
	t.Cleanup(srv.Close)
	return srv, settledSpans{rec, served.wait}
}

// settledSpans are the spans of the requests served so far: Ended waits
// for those being served to end theirs.
type settledSpans struct {
	*tracetest.SpanRecorder
	settle func()
}

func (s settledSpans) Ended() []sdktrace.ReadOnlySpan {
	s.settle()
	return s.SpanRecorder.Ended()
}

func spanAttributes(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	attrs := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes() {
		attrs[a.Key] = a.Value
	}
	return attrs
}

// TestTracingPassThrough: a request toolguard does not inspect is a server
// span named by its route with one upstream span under it, and no GenAI
// attributes: toolguard did not read it.
func TestTracingPassThrough(t *testing.T) {
	up := newUpstream(t, reply{Body: `{"object":"list","data":[]}`})
	srv, rec := tracedGuard(t, up, policy.Default())
	if resp, body := do(t, t.Context(), srv, http.MethodGet, "/v1/models", "", nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		for k := range spanAttributes(s) {
			if strings.HasPrefix(string(k), "gen_ai.") || k == "toolguard.outcome" {
				t.Errorf("span %q carries %s", s.Name(), k)
			}
		}
	}
	slices.Sort(names)
	if want := []string{"GET /v1/*", "upstream first"}; !slices.Equal(names, want) {
		t.Errorf("spans %q, want %q", names, want)
	}
}

// TestTracingStream: a streamed completion's server span carries its
// outcome and the usage its last chunk reported, once the stream is done.
func TestTracingStream(t *testing.T) {
	stream := streamCall(0, 0, "c1", `{"selector":"#a"}`) + chunk(finish(0, "tool_calls")) + usageChunk(7) + done
	up := newUpstream(t, sseReply(stream))
	srv, rec := tracedGuard(t, up, policy.Default())
	if resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", streamRequest(""), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var server sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			server = s
		}
	}
	if server == nil {
		t.Fatal("no server span")
	}
	attrs := spanAttributes(server)
	for key, want := range map[attribute.Key]any{
		"toolguard.outcome": "valid", "gen_ai.request.model": "gpt-test", "gen_ai.usage.input_tokens": int64(7), "toolguard.reasks": int64(0),
	} {
		if got := attrs[key].AsInterface(); got != want {
			t.Errorf("server span %s = %v, want %v", key, got, want)
		}
	}
}

// TestSpansAreBoundedInSize: spans wait in the exporter's queue (2,048 of
// them by default) until they are sent, so what a client puts in them is
// held that many times. A 1 MB model name went whole into the server span's
// gen_ai.request.model and into each attempt's name and attributes; every
// name and attribute value is now at most maxSpanValue bytes, whatever the
// client sends in its body or headers (a long User-Agent, a long path, a
// Host, a tracestate and baggage at their limits).
func TestSpansAreBoundedInSize(t *testing.T) {
	const maxSpanValue = 1024
	up := newUpstream(t, reply{Body: toolReply(`{}`, clickCall("c1", `"{}"`))}, reply{Body: toolReply(`{}`, clickCall("c2", `"{\"selector\":\"#a\"}"`))})
	srv, rec := tracedGuard(t, up, policy.Default())
	model := strings.Repeat("m", 1<<20)
	body := strings.Replace(clickRequest(""), `"model":"gpt-test"`, `"model":"`+model+`"`, 1)
	members := make([]string, 30)
	for i := range members {
		members[i] = "k" + strings.Repeat("x", 3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "=" + strings.Repeat("v", 250)
	}
	h := http.Header{
		"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"Tracestate":  {strings.Join(members, ",")},
		"Baggage":     {strings.Repeat("b", 4000) + "=" + strings.Repeat("v", 4000)},
		"User-Agent":  {strings.Repeat("u", 200<<10)},
	}
	resp, rb := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", body, h)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %.300s", resp.StatusCode, rb)
	}
	spans := rec.Ended()
	if len(spans) < 3 {
		t.Fatalf("%d spans, want the server's and two attempts'", len(spans))
	}
	for _, s := range spans {
		if len(s.Name()) > maxSpanValue {
			t.Errorf("a %v span's name is %d bytes", s.SpanKind(), len(s.Name()))
		}
		for _, a := range s.Attributes() {
			if n := len(a.Value.Emit()); n > maxSpanValue {
				t.Errorf("a %v span's %s is %d bytes", s.SpanKind(), a.Key, n)
			}
		}
		if got := spanAttributes(s)["gen_ai.request.model"].AsString(); got != "" && !strings.HasPrefix(got, "mmmm") {
			t.Errorf("gen_ai.request.model %.40q does not start as the model does", got)
		}
	}
}
