package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

func TestStatTicks(t *testing.T) {
	// A command name with spaces and a parenthesis, as a process may name
	// itself.
	stat := "4242 (my (odd) proxy) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 0 0"
	got, err := statTicks(stat)
	if err != nil || got != 325 {
		t.Errorf("statTicks = %d, %v; want 325", got, err)
	}
	if _, err := statTicks("4242 (short) S 1"); err == nil {
		t.Error("a truncated stat line was read")
	}
}

func TestCPUTimeOfThisProcess(t *testing.T) {
	tick := clockTick(context.Background())
	if tick <= 0 || tick > time.Second {
		t.Fatalf("clock tick %s", tick)
	}
	before, err := cpuTime(os.Getpid(), tick)
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
	}
	after, err := cpuTime(os.Getpid(), tick)
	if err != nil || after <= before {
		t.Errorf("CPU time %s then %s (%v) across 200 ms of spinning", before, after, err)
	}
}

// TestNoToolsBodyDeclaresNone: the arm without tools sends valid JSON with
// no tools member, so toolguard has nothing to inspect.
func TestNoToolsBodyDeclaresNone(t *testing.T) {
	body := chatBody("valid", false, false, "")
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if _, ok := v["tools"]; ok {
		t.Errorf("the body declares tools: %s", body)
	}
}

// TestManyToolsDeclareClickAmongMany: the many-tools arm's request is
// valid JSON declaring 24 tools of distinct names, click among them, in
// about 20 KB.
func TestManyToolsDeclareClickAmongMany(t *testing.T) {
	var a arm
	for _, x := range allArms {
		if x.name == "manytools-toolguard" {
			a = x
		}
	}
	body := a.body()
	if !gjson.Valid(body) || len(body) < 15<<10 || len(body) > 30<<10 {
		t.Fatalf("%d bytes, valid JSON %v", len(body), gjson.Valid(body))
	}
	names := map[string]bool{}
	for _, n := range gjson.Get(body, "tools.#.function.name").Array() {
		names[n.Str] = true
	}
	if len(names) != 24 || !names["click"] {
		t.Errorf("%d distinct tools, click among them %v", len(names), names["click"])
	}
}

func TestLongHistoryIsAbout40KB(t *testing.T) {
	body := chatBody("valid", false, true, clickTools)
	var v struct{ Messages []json.RawMessage }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if len(body) < 40<<10 || len(body) > 48<<10 || len(v.Messages) < 100 {
		t.Errorf("%d bytes, %d messages", len(body), len(v.Messages))
	}
}

func TestPickArmsAddsWhatAnArmIsMeasuredAgainst(t *testing.T) {
	arms, err := pickArms(config{arms: "history-toolguard,stream-toolguard"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arms {
		names = append(names, a.name)
	}
	want := []string{"direct", "reverseproxy", "stream-direct", "stream-reverseproxy", "stream-toolguard",
		"history-direct", "history-reverseproxy", "history-toolguard"}
	if !slices.Equal(names, want) {
		t.Errorf("arms %v, want %v", names, want)
	}
	if _, err := pickArms(config{arms: "no-such-arm"}); err == nil {
		t.Error("an unknown arm was accepted")
	}
}

// TestFirstTurnArmsSendNewConversations runs wrk with a first-turn arm's
// script: every request must be the arm's body, valid JSON, its
// conversation numbered as no other request's is.
func TestFirstTurnArmsSendNewConversations(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("wrk is not installed (apt-get install -y wrk)")
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var bad []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		system := gjson.GetBytes(b, "messages.0.content").Str
		mu.Lock()
		defer mu.Unlock()
		seen[system]++
		if !gjson.ValidBytes(b) || !strings.HasPrefix(system, "Conversation ") || len(b) < 40<<10 {
			bad = append(bad, tail(string(b), 200))
		}
	}))
	defer srv.Close()
	var a arm
	for _, x := range allArms {
		if x.name == "firstturn-toolguard" {
			a = x
		}
	}
	if !a.firstTurn || !strings.Contains(a.template(), conversationMark) || strings.Contains(a.body(), conversationMark) {
		t.Fatalf("arm %+v: no conversation mark to number", a)
	}
	script, err := writeScript(t.TempDir(), a.name, a.template(), a.headers(""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := runWrk(context.Background(), srv.URL+a.path(), script, 4, 2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d requests are not the arm's body, the first: %s", len(bad), bad[0])
	}
	total := 0
	for system, n := range seen {
		total += n
		if n > 1 {
			t.Errorf("%q sent %d times", system, n)
		}
	}
	if total < 10 || int64(total) < res.requests {
		t.Errorf("%d requests seen, wrk counted %d", total, res.requests)
	}
}

// TestBaselineSettingsOverrideToolguards: -baseline-env's settings come
// after -toolguard-env's, and a process started with both takes the
// baseline's.
func TestBaselineSettingsOverrideToolguards(t *testing.T) {
	got := settings("GOGC=100, TOOLGUARD_MODE=repair,", " GOGC=200")
	want := []string{"GOGC=100", "TOOLGUARD_MODE=repair", "GOGC=200"}
	if !slices.Equal(got, want) {
		t.Fatalf("settings: %q, want %q", got, want)
	}
	cmd := exec.Command("sh", "-c", `printf %s "$GOGC"`)
	cmd.Env = append(cleanEnv(), got...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "200" {
		t.Errorf("the process got GOGC=%q, want 200", out)
	}
}

// TestBareProxyHoldsToolguardsReserve: the bare proxy's reserve for the
// collector is the toolguard arms' own, its default or as -toolguard-env
// sets it, and a bad one is refused before anything runs.
func TestBareProxyHoldsToolguardsReserve(t *testing.T) {
	def, err := policy.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	for env, want := range map[string]int64{
		"":                                       def.GCReserveBytes,
		"GOGC=200, TOOLGUARD_GC_RESERVE_BYTES=0": 0,
		"TOOLGUARD_GC_RESERVE_BYTES=8388608, a=b": 8 << 20,
	} {
		if got, err := bareReserve(env); err != nil || got != want {
			t.Errorf("bareReserve(%q) = %d, %v; want %d", env, got, err, want)
		}
	}
	if _, err := bareReserve("TOOLGUARD_GC_RESERVE_BYTES=-1"); err == nil || !strings.Contains(err.Error(), "-toolguard-env") {
		t.Errorf("a bad reserve: %v, want an error naming -toolguard-env", err)
	}
}
