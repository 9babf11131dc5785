package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/version"
)

// TestShutdownLetsRequestsInFlightFinish starts toolguard as main does, sends
// a request the upstream holds, shuts down, and checks that the request still
// completes and that new connections are refused.
func TestShutdownLetsRequestsInFlightFinish(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()

	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() {
		done <- run(ctx, nil, []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=" + up.URL + "/v1"}, io.Discard, &logs, ready)
	}()
	addr := <-ready

	type result struct {
		status int
		body   string
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/v1/models")
		if err != nil {
			res <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{resp.StatusCode, string(b), err}
	}()
	<-arrived
	stop() // as SIGTERM would
	// New connections are refused once the listener is closed; the request
	// in flight is still being served.
	for {
		c, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			break
		}
		c.Body.Close()
	}
	close(release)
	r := <-res
	if r.err != nil || r.status != 200 || r.body != `{"object":"list","data":[]}` {
		t.Errorf("request in flight: status %d body %q err %v", r.status, r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestBadConfigurationStopsStartup(t *testing.T) {
	err := run(context.Background(), nil, []string{"TOOLGUARD_MODE=fix", "TOOLGUARD_MAX_REASKS=many"}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "TOOLGUARD_MODE") || !strings.Contains(err.Error(), "TOOLGUARD_MAX_REASKS") {
		t.Errorf("run: %v", err)
	}
}

func TestDemoShowsEveryOutcome(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-demo"}, nil, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"outcome=valid", "outcome=repaired", "outcome=reasked", "outcome=failed", `arguments {"selector":"myCoolButton"}`,
		// The near-miss key is asked about, with what the tool declares.
		`toolguard asked: - /selector: missing required property`, `unknown property "element"; tool "click" declares "selector"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// The Messages exchange: its case's lines, up to the next case.
	_, messages, _ := strings.Cut(out.String(), "the Anthropic Messages API")
	messages, _, _ = strings.Cut(messages, "\n\n")
	if !strings.Contains(messages, "outcome=reasked, re-asks=1") || !strings.Contains(messages, `arguments {"selector":"#login"}`) {
		t.Errorf("the Messages exchange is not shown reasked:\n%s", out.String())
	}
}

func TestHealthcheckFlag(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s"}, io.Discard, io.Discard, ready)
	}()
	addr := <-ready
	_, port, _ := strings.Cut(addr, ":")
	if err := run(context.Background(), []string{"-healthcheck"}, []string{"TOOLGUARD_LISTEN_ADDR=:" + port}, io.Discard, io.Discard, nil); err != nil {
		t.Errorf("healthcheck of a running toolguard: %v", err)
	}
	stop()
	<-done
	if err := run(context.Background(), []string{"-healthcheck"}, []string{"TOOLGUARD_LISTEN_ADDR=:" + port}, io.Discard, io.Discard, nil); err == nil {
		t.Errorf("healthcheck of a stopped toolguard succeeded")
	}
}

func TestMalformedToolPoliciesStopStartup(t *testing.T) {
	err := run(context.Background(), nil, []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_TOOL_POLICIES=click:mode=reask;search:max_reasks=lots"}, io.Discard, io.Discard, nil)
	want := `TOOLGUARD_TOOL_POLICIES: entry 2 ("search:max_reasks=lots"): max_reasks "lots" is not a whole number from 0 to 10`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("run: %v\nwant an error containing %s", err, want)
	}
}

// TestVersionAndHelp: -version prints the version, the commit and the Go
// version; -h prints a usage that lists the flags and points at the
// variables; both exit 0.
func TestVersionAndHelp(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, nil, &out, &errs, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "toolguard ") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("-version printed %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"-h"}, nil, &out, &errs, nil); err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"-demo", "-healthcheck", "-version", "TOOLGUARD_", "config.example.env"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, errs.String())
		}
	}
	if err := run(context.Background(), []string{"-nope"}, nil, &out, io.Discard, nil); err == nil {
		t.Error("an unknown flag is no error")
	}
}

// TestStartupSaysWhatItRuns: the start-up line carries the version and
// whether client authentication is on; a misspelled variable is warned
// about by name with the closest known one; /metrics has the build info.
func TestStartupSaysWhatItRuns(t *testing.T) {
	for _, keys := range []string{"", "k-1234567890"} {
		ctx, stop := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan error, 1)
		var logs syncWriter
		env := []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=http://127.0.0.1:9/v1",
			"TOOLGUARD_MAX_REASK=5", "TOOLGUARD_API_KEYS=" + keys}
		go func() { done <- run(ctx, nil, env, io.Discard, &logs, ready) }()
		addr := <-ready
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `toolguard_build_info{`) || !strings.Contains(string(b), `version="dev"`) {
			t.Errorf("no build info metric")
		}
		log := logs.String()
		if want := `"client_auth":` + map[bool]string{true: "true", false: "false"}[keys != ""]; !strings.Contains(log, want) || !strings.Contains(log, `"version":"dev"`) {
			t.Errorf("start-up line lacks %s or the version:\n%s", want, log)
		}
		if !strings.Contains(log, `"tracing":false`) {
			t.Errorf("tracing is not off without OTEL_* variables:\n%s", log)
		}
		if !strings.Contains(log, `"gc_reserve_bytes":4194304`) {
			t.Errorf("start-up line lacks the collector's reserve:\n%s", log)
		}
		if !strings.Contains(log, "TOOLGUARD_MAX_REASK is not a toolguard variable") || !strings.Contains(log, "did you mean TOOLGUARD_MAX_REASKS?") {
			t.Errorf("no warning for the misspelled variable:\n%s", log)
		}
	}
}

// TestOnlySeparatorsInAPIKeysStopStartup: TOOLGUARD_API_KEYS=" , " meant to
// turn authentication on; it must not leave it off without a word.
func TestOnlySeparatorsInAPIKeysStopStartup(t *testing.T) {
	err := run(context.Background(), nil, []string{"TOOLGUARD_API_KEYS= , "}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "TOOLGUARD_API_KEYS: holds only separators") {
		t.Errorf("err = %v", err)
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestMetricsOnTheirOwnAddress: with TOOLGUARD_METRICS_ADDR, /metrics is
// served there and not on the API port.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs syncWriter
	env := []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_METRICS_ADDR=127.0.0.1:0", "TOOLGUARD_UPSTREAM_URL=http://127.0.0.1:9/v1"}
	go func() { done <- run(ctx, nil, env, io.Discard, &logs, ready) }()
	addr := <-ready
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var metricsAddr string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"msg":"metrics listening"`) {
			metricsAddr = gjsonAddr(line)
		}
	}
	if metricsAddr == "" {
		t.Fatalf("no metrics listener in the log:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "toolguard_build_info") {
		t.Errorf("metrics address: %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("the API port answers /metrics with %d, want 404", resp.StatusCode)
	}
}

func gjsonAddr(line string) string {
	var v struct{ Addr string }
	json.Unmarshal([]byte(line), &v)
	return v.Addr
}

// TestTracingExportsOverOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, the
// spans of a request reach an OTLP/HTTP receiver by the time toolguard has
// stopped; without it, tracing is off.
func TestTracingExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var posts int
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" && len(b) > 0 {
			mu.Lock()
			posts++
			mu.Unlock()
		}
	}))
	defer recv.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs syncWriter
	go func() {
		done <- run(ctx, nil, []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=" + up.URL + "/v1"}, io.Discard, &logs, ready)
	}()
	addr := <-ready
	resp, err := http.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if posts == 0 {
		t.Errorf("no spans reached the OTLP receiver")
	}
	if !strings.Contains(logs.String(), `"tracing":true`) {
		t.Errorf("the start-up line does not say tracing is on")
	}
}

// TestReadinessIsObservableWhileDraining: after SIGTERM, /readyz answers
// 503 while toolguard still accepts connections, for TOOLGUARD_DRAIN_DELAY,
// so that a probe can see it; only then does the listener close.
func TestReadinessIsObservableWhileDraining(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	env := []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_UPSTREAM_URL=http://127.0.0.1:9/v1", "TOOLGUARD_DRAIN_DELAY=2s"}
	go func() { done <- run(ctx, nil, env, io.Discard, io.Discard, ready) }()
	addr := <-ready
	if status, _ := readyz(addr); status != http.StatusOK {
		t.Fatalf("/readyz %d before the signal", status)
	}
	stop()
	// Probe until the answer changes: it must be a 503 from a listener
	// still open, not a refused connection.
	for {
		status, err := readyz(addr)
		if err != nil {
			t.Fatalf("the listener closed before /readyz said 503: %v", err)
		}
		if status == http.StatusServiceUnavailable {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := readyz(addr); err == nil {
		t.Error("the listener is still open after shutdown")
	}
}

func readyz(addr string) (int, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestVersionSetAtBuildTime: the variables the Dockerfile sets with
// -ldflags -X show in -version, the start-up line and toolguard_build_info.
func TestVersionSetAtBuildTime(t *testing.T) {
	defer func(v, r string) { version.Version, version.Revision = v, r }(version.Version, version.Revision)
	version.Version, version.Revision = "v1.2.3", "0123abcd"
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, nil, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if want := "toolguard v1.2.3 (commit 0123abcd, " + runtime.Version() + ")\n"; out.String() != want {
		t.Errorf("-version printed %q, want %q", out.String(), want)
	}
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs syncWriter
	go func() {
		done <- run(ctx, nil, []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s"}, io.Discard, &logs, ready)
	}()
	addr := <-ready
	_, metrics := get(t, "http://"+addr+"/metrics")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `revision="0123abcd",tags="unknown",version="v1.2.3"} 1`) {
		t.Errorf("build info:\n%s", grepLines(metrics, "toolguard_build_info"))
	}
	if log := logs.String(); !strings.Contains(log, `"version":"v1.2.3","commit":"0123abcd","go":"`+runtime.Version()+`"`) {
		t.Errorf("start-up line:\n%s", log)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCleanShutdownWritesEveryLogLine runs toolguard as main does, with
// its default (background) log writer and with an hour's flush interval,
// sends requests, shuts down, and counts one access-log line per request.
func TestCleanShutdownWritesEveryLogLine(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	for _, interval := range []string{"0s", "1h"} {
		t.Run(interval, func(t *testing.T) {
			ctx, stop := context.WithCancel(context.Background())
			ready := make(chan string, 1)
			done := make(chan error, 1)
			var logs syncWriter
			env := []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=" + up.URL + "/v1",
				"TOOLGUARD_LOG_FLUSH_INTERVAL=" + interval}
			go func() { done <- run(ctx, nil, env, io.Discard, &logs, ready) }()
			addr := <-ready
			const n = 300
			for range n {
				resp, err := http.Get("http://" + addr + "/v1/models")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			log := logs.String()
			if got := strings.Count(log, `"msg":"request"`); got != n {
				t.Errorf("%d access-log lines for %d requests", got, n)
			}
			if !strings.HasSuffix(log, "\n") || !strings.Contains(log[strings.LastIndex(log[:len(log)-1], "\n")+1:], `"msg":"stopped"`) {
				t.Errorf("the last line is not the exit line:\n%s", log[max(0, len(log)-500):])
			}
		})
	}
}
