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
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// exported drives a toolguard through traffic that touches every metric
// (valid, repaired and re-asked calls, a stream, an upstream failure) and
// returns the names of the series it exports.
func exported(t *testing.T) map[string]bool {
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
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
		}
	}
	return names
}

// TestDashboardQueriesExportedMetrics: every toolguard_ metric a panel
// queries is one toolguard exports, so a rename cannot leave a panel empty.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("toolguard-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	names := exported(t)
	used := map[string]bool{}
	metric := regexp.MustCompile(`toolguard_[a-z_]+`)
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metric.FindAllString(tg.Expr, -1) {
				used[m] = true
				if !names[m] {
					t.Errorf("panel %q queries %s, which toolguard does not export", p.Title, m)
				}
			}
		}
	}
	// The panels the platform team needs: outcomes and repairs per tool and
	// model, re-ask rate, added latency, breaker state.
	for _, m := range []string{"toolguard_chat_completions_total", "toolguard_tool_calls_total", "toolguard_repairs_total",
		"toolguard_reasks_total", "toolguard_overhead_seconds_bucket", "toolguard_breaker_state"} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
