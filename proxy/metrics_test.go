package proxy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolguard/toolguard/policy"
)

// scrape reads GET /metrics with the client library's own parser.
func scrape(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// series flattens the families named by prefix into "name{k=v,...}" -> value;
// histograms give their sample count as name_count.
func series(mfs map[string]*dto.MetricFamily, prefix string) map[string]float64 {
	out := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestMetricsAfterScriptedTraffic sends one request of each outcome and
// checks every toolguard series against what happened.
func TestMetricsAfterScriptedTraffic(t *testing.T) {
	usage := `{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}`
	up := newUpstream(t,
		reply{Body: toolReply(usage, clickCall("call_1", `"{\"selector\":\"#ok\"}"`))}, // valid
		reply{Body: toolReply(usage, clickCall("call_1", `"\"myCoolButton\""`))},       // repaired
		reply{Body: toolReply(usage, clickCall("call_1", `"{}"`))},                     // re-asked...
		reply{Body: toolReply(usage, clickCall("call_2", `"{\"selector\":\"#ok\"}"`))}, // ...and corrected
		reply{Body: toolReply(usage, clickCall("call_1", `"{}"`))},                     // never corrected
	)
	srv, _ := guard(t, up, nil)

	before := series(scrape(t, srv), "toolguard_")
	if before["toolguard_schema_cache_misses_total"] != 0 || before["toolguard_reasks_total"] != 0 {
		t.Fatalf("a new handler starts with counts: %v", before)
	}
	for _, want := range []int{200, 200, 200, 400} {
		if resp, body := post(t, srv, "/v1/chat/completions", clickRequest("")); resp.StatusCode != want {
			t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, body)
		}
	}
	// A schema that does not compile: its calls pass unvalidated.
	badSchema := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":12}}}}}]}`
	post(t, srv, "/v1/chat/completions", badSchema)
	do(t, t.Context(), srv, http.MethodGet, "/v1/models", "", nil)
	do(t, t.Context(), srv, http.MethodGet, "/healthz", "", nil)
	do(t, t.Context(), srv, http.MethodGet, "/no/such/path", "", nil)

	got := series(scrape(t, srv), "toolguard_")
	want := map[string]float64{
		"toolguard_requests_total{code=200,route=/v1/chat/completions}": 4,
		"toolguard_requests_total{code=400,route=/v1/chat/completions}": 1,
		"toolguard_requests_total{code=200,route=/v1/*}":                1,
		"toolguard_requests_total{code=200,route=/healthz}":             1,
		"toolguard_requests_total{code=404,route=other}":                1,
		// The first scrape is counted once it is done.
		"toolguard_requests_total{code=200,route=/metrics}": 1,

		"toolguard_chat_completions_total{model=gpt-test,outcome=valid}":    1,
		"toolguard_chat_completions_total{model=m,outcome=unchecked}":       1, // its schema did not compile
		"toolguard_chat_completions_total{model=gpt-test,outcome=repaired}": 1,
		"toolguard_chat_completions_total{model=gpt-test,outcome=reasked}":  1,
		"toolguard_chat_completions_total{model=gpt-test,outcome=failed}":   1,

		// The same, by format.
		"toolguard_inspected_total{format=chat.completions,model=gpt-test,outcome=valid}":    1,
		"toolguard_inspected_total{format=chat.completions,model=m,outcome=unchecked}":       1,
		"toolguard_inspected_total{format=chat.completions,model=gpt-test,outcome=repaired}": 1,
		"toolguard_inspected_total{format=chat.completions,model=gpt-test,outcome=reasked}":  1,
		"toolguard_inspected_total{format=chat.completions,model=gpt-test,outcome=failed}":   1,

		"toolguard_tool_calls_total{model=gpt-test,outcome=valid,tool=click}":    2, // a first answer, one correction
		"toolguard_tool_calls_total{model=m,outcome=unchecked,tool=click}":       1, // the schema that did not compile
		"toolguard_tool_calls_total{model=gpt-test,outcome=repaired,tool=click}": 1,
		"toolguard_tool_calls_total{model=gpt-test,outcome=reasked,tool=click}":  3, // one in the third request, two in the fourth
		"toolguard_tool_calls_total{model=gpt-test,outcome=failed,tool=click}":   1,

		// Five first attempts and three re-asks, each reporting 10 + 2.
		"toolguard_tokens_total{attempt=first,type=prompt}":     50,
		"toolguard_tokens_total{attempt=first,type=completion}": 10,
		"toolguard_tokens_total{attempt=reask,type=prompt}":     30,
		"toolguard_tokens_total{attempt=reask,type=completion}": 6,

		"toolguard_requests_in_flight":              1, // the scrape itself
		"toolguard_stream_first_byte_seconds_count": 0,

		"toolguard_repairs_total{kind=wrap-value}": 1,
		"toolguard_reasks_total":                   3,

		// 1 + 1 + 2 + 3 chat attempts, the fifth request, /v1/models.
		"toolguard_upstream_request_duration_seconds_count": 9,
		"toolguard_overhead_seconds_count":                  5,

		"toolguard_schema_cache_hits_total":     8 - 2, // one lookup per call checked, two of them misses
		"toolguard_schema_cache_misses_total":   2,
		"toolguard_schema_cache_schemas":        2,
		"toolguard_schema_compile_errors_total": 1,

		// The breaker is on by default and stayed closed.
		"toolguard_breaker_state{upstream=primary}":                          0,
		"toolguard_breaker_rejections_total{upstream=primary}":               0,
		"toolguard_breaker_transitions_total{to=closed,upstream=primary}":    0,
		"toolguard_breaker_transitions_total{to=half-open,upstream=primary}": 0,
		"toolguard_breaker_transitions_total{to=open,upstream=primary}":      0,
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("metrics (-got +want):\n%s", diff)
	}
}

// TestToolLabelsAreBounded checks that a client cannot grow the series by
// inventing tool names: undeclared names share one label value, and past
// 200 declared names the rest share another.
func TestToolLabelsAreBounded(t *testing.T) {
	const n = 230
	var tools, calls []string
	for i := range n {
		name := fmt.Sprintf("tool_%03d", i)
		tools = append(tools, `{"type":"function","function":{"name":"`+name+`"}}`)
		calls = append(calls, `{"id":"c`+name+`","type":"function","function":{"name":"`+name+`","arguments":"{}"}}`)
	}
	calls = append(calls, `{"id":"x","type":"function","function":{"name":"invented_by_the_model","arguments":"{}"}}`)
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, calls...)})
	srv, _ := guard(t, up, func(c *policy.Config) { c.OnFailure = policy.FailDrop; c.MaxReasks = 0 })
	req := `{"model":"m","messages":[],"tools":[` + strings.Join(tools, ",") + `]}`
	if resp, body := post(t, srv, "/v1/chat/completions", req); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	labels := map[string]float64{}
	for _, m := range scrape(t, srv)["toolguard_tool_calls_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "tool" {
				labels[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	if len(labels) != 202 {
		t.Errorf("%d tool label values, want 200 names + (other) + (undeclared)", len(labels))
	}
	if labels["(other)"] != n-200 || labels["(undeclared)"] != 1 || labels["tool_000"] != 1 {
		t.Errorf("(other)=%v (undeclared)=%v tool_000=%v", labels["(other)"], labels["(undeclared)"], labels["tool_000"])
	}
}

// TestModelLabelsAreBounded: the model label comes from the request, so
// past maxModelLabels (50) names the rest count as (other).
func TestModelLabelsAreBounded(t *testing.T) {
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, clickCall("c", `"{\"selector\":\"#a\"}"`))})
	srv, _ := guard(t, up, nil)
	for i := range 60 {
		req := strings.Replace(clickRequest(""), `"model":"gpt-test"`, fmt.Sprintf(`"model":"model-%02d"`, i), 1)
		if resp, body := post(t, srv, "/v1/chat/completions", req); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	models := map[string]float64{}
	for _, m := range scrape(t, srv)["toolguard_chat_completions_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "model" {
				models[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	if len(models) != 51 || models["(other)"] != 10 || models["model-00"] != 1 {
		t.Errorf("%d model label values, (other)=%v, model-00=%v", len(models), models["(other)"], models["model-00"])
	}
}

// TestStreamFirstByteIsTimed: every stream the client gets, inspected or
// not, is counted in the time-to-first-byte histogram; other replies are
// not.
func TestStreamFirstByteIsTimed(t *testing.T) {
	stream := chunk(textDelta(0, "hi")) + chunk(finish(0, "stop")) + done
	up := newUpstream(t, sseReply(stream))
	srv, _ := guard(t, up, nil)
	post(t, srv, "/v1/chat/completions", streamRequest(""))
	post(t, srv, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	do(t, t.Context(), srv, http.MethodGet, "/healthz", "", nil)
	h := scrape(t, srv)["toolguard_stream_first_byte_seconds"].GetMetric()
	if len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 2 {
		t.Errorf("first-byte histogram: %v", h)
	}
}

// TestLabelValuesAreBoundedInLength: model and tool names come from clients
// and /metrics is open to anyone, so each label value is short and plain,
// whatever the names: long ones, and ones with quotes, spaces, newlines or
// other scripts, count as (other). Before the bound, 20 requests naming
// 100 KB models made /metrics over 2 MB.
func TestLabelValuesAreBoundedInLength(t *testing.T) {
	long := strings.Repeat("m", 100<<10)
	longTool := "t" + strings.Repeat("o", 100<<10)
	var models []string
	for i := range 20 {
		models = append(models, fmt.Sprintf("%s-%02d", long, i))
	}
	models = append(models, `with \"quote`, `with space`, `line\nbreak`, "héllo", "ok-model:v1/2@x+y.z_")
	calls := []string{
		`{"id":"a","type":"function","function":{"name":"` + longTool + `","arguments":"{}"}}`,
		`{"id":"b","type":"function","function":{"name":"sp ace","arguments":"{}"}}`,
	}
	up := newUpstream(t, reply{Body: toolReply(`{"total_tokens":1}`, calls...)})
	srv, _ := guard(t, up, nil)
	tools := `[{"type":"function","function":{"name":"` + longTool + `"}},{"type":"function","function":{"name":"sp ace"}}]`
	for _, m := range models {
		req := `{"model":"` + m + `","messages":[{"role":"user","content":"go"}],"tools":` + tools + `}`
		if resp, body := post(t, srv, "/v1/chat/completions", req); resp.StatusCode != 200 {
			t.Fatalf("model %.20q: status %d: %s", m, resp.StatusCode, body)
		}
	}
	resp, raw := do(t, t.Context(), srv, http.MethodGet, "/metrics", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	if len(raw) > 256<<10 {
		t.Errorf("/metrics is %d bytes after %d requests", len(raw), len(models))
	}
	values := map[string]map[string]float64{}
	for name, mf := range scrape(t, srv) {
		if !strings.HasPrefix(name, "toolguard_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				if len(v) > 128 || strings.ContainsAny(v, " \"\\\n") || strings.ContainsFunc(v, func(r rune) bool { return r > 0x7e }) {
					t.Errorf("%s: label %s is %d bytes: %.40q", name, l.GetName(), len(v), v)
				}
				if name == "toolguard_tool_calls_total" {
					if values[l.GetName()] == nil {
						values[l.GetName()] = map[string]float64{}
					}
					values[l.GetName()][v] += m.GetCounter().GetValue()
				}
			}
		}
	}
	want := map[string]map[string]float64{
		"model":   {"(other)": 2 * float64(len(models)-1), "ok-model:v1/2@x+y.z_": 2},
		"tool":    {"(other)": 2 * float64(len(models))},
		"outcome": {"valid": 2 * float64(len(models))},
	}
	if diff := cmp.Diff(values, want); diff != "" {
		t.Errorf("toolguard_tool_calls_total labels (-got +want):\n%s", diff)
	}
}
