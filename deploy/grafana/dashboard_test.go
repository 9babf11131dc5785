// Package grafana holds an example dashboard; its test keeps the dashboard's
// queries in step with the metrics toolguard exports.
package grafana

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// exported drives a toolguard through traffic that touches every metric
// (valid, repaired and re-asked calls, a stream, an upstream failure) and
// returns the names of the series it exports, each with its label names.
func exported(t *testing.T) map[string]map[string]bool {
	var count atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := int(count.Add(1))
		if strings.Contains(r.URL.Path, "models") {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"data":[]}`)
			return
		}
		if n == 3 {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		args := map[int]string{1: `{\"selector\":\"#a\"}`, 2: `\"#a\"`, 4: `{}`}[n]
		if args == "" {
			args = `{\"selector\":\"#b\"}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"click","arguments":"`+args+`"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer up.Close()
	cfg := policy.Default()
	cfg.UpstreamURL = up.URL + "/v1"
	h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}}]}`
	for _, body := range []string{req, req, strings.TrimSuffix(req, "}") + `,"stream":true}`, req} {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	up.Close() // now the upstream refuses connections
	if resp, err := http.Get(srv.URL + "/v1/models"); err == nil {
		resp.Body.Close()
	}
	families, err := h.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]map[string]bool{}
	for _, f := range families {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		names[f.GetName()] = labels
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_sum", "_count"} {
				names[f.GetName()+s] = labels
			}
			bucket := map[string]bool{"le": true}
			for l := range labels {
				bucket[l] = true
			}
			names[f.GetName()+"_bucket"] = bucket
		}
	}
	return names
}

var (
	metricRe   = regexp.MustCompile(`(toolguard_[a-z_]+)(\{([^}]*)\})?`)
	matcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	groupingRe = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	legendRe   = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	valuesRe   = regexp.MustCompile(`label_values\(\s*(toolguard_[a-z_]+)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
)

// checkQuery reports the toolguard metrics and labels expr uses that
// toolguard does not export, and records the metrics it uses in used. A
// label in a matcher must be one of its metric's; one in a grouping or the
// legend one of the query's metrics'.
func checkQuery(t *testing.T, where, expr, legend string, names map[string]map[string]bool, used map[string]bool) {
	t.Helper()
	union := map[string]bool{}
	for _, m := range metricRe.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		used[name] = true
		labels, ok := names[name]
		if !ok {
			t.Errorf("%s queries %s, which toolguard does not export", where, name)
			continue
		}
		for l := range labels {
			union[l] = true
		}
		for _, mm := range matcherRe.FindAllStringSubmatch(m[3], -1) {
			if !labels[mm[1]] {
				t.Errorf("%s matches %s on label %s, which it does not have", where, name, mm[1])
			}
		}
	}
	for _, g := range groupingRe.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !union[l] {
				t.Errorf("%s groups by %s, a label none of its metrics has", where, l)
			}
		}
	}
	for _, l := range legendRe.FindAllStringSubmatch(legend, -1) {
		if !union[l[1]] {
			t.Errorf("%s shows label %s in its legend, which none of its metrics has", where, l[1])
		}
	}
}

// TestDashboardQueriesExportedMetrics: every toolguard_ metric a panel
// queries is one toolguard exports, so a rename cannot leave a panel empty.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("toolguard-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name  string
				Query any
			}
		}
		Panels []struct {
			Title   string
			Targets []struct{ Expr, LegendFormat string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	names := exported(t)
	used := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkQuery(t, "panel "+strconv.Quote(p.Title), tg.Expr, tg.LegendFormat, names, used)
		}
	}
	// A variable's values come from a label of a metric.
	for _, v := range d.Templating.List {
		q, _ := json.Marshal(v.Query)
		for _, m := range valuesRe.FindAllStringSubmatch(string(q), -1) {
			used[m[1]] = true
			if !names[m[1]][m[2]] {
				t.Errorf("variable %s takes its values from %s's label %s, which toolguard does not export", v.Name, m[1], m[2])
			}
		}
	}
	// The panels the platform team needs: outcomes and repairs per tool and
	// model, re-ask rate, added latency, breaker state.
	for _, m := range []string{"toolguard_chat_completions_total", "toolguard_tool_calls_total", "toolguard_repairs_total",
		"toolguard_reasks_total", "toolguard_overhead_seconds_bucket", "toolguard_breaker_state",
		"toolguard_tokens_total", "toolguard_stream_first_byte_seconds_bucket", "toolguard_requests_in_flight"} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
