package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binDir holds the toolguard binary built for this run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolguard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildToolguard builds cmd/proxy once per run, without the race detector:
// the suite tests the binary users run, and -race would only slow it down.
var buildToolguard = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "toolguard")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/toolguard/toolguard/cmd/proxy")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// toolguard is one toolguard process, listening on a port of its choosing.
type toolguard struct {
	baseURL string // OpenAI base URL, ending in /v1
	logs    *logLines
	// stop ends toolguard and waits until all its log lines are read.
	stop func()
}

// startToolguard runs toolguard in front of upstreamURL until the test ends,
// with the suite's settings and env over them.
// If the test fails, toolguard's log lines are printed with it: each test has
// its own toolguard, so they are the lines of that test's requests.
func startToolguard(t *testing.T, upstreamURL string, env ...string) *toolguard {
	t.Helper()
	bin, err := buildToolguard()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0",
		"TOOLGUARD_UPSTREAM_URL="+upstreamURL,
		"TOOLGUARD_LOG_FORMAT=json",
		"TOOLGUARD_MODE=repair",
		"TOOLGUARD_ON_FAILURE=error",
		"TOOLGUARD_MAX_REASKS="+strconv.Itoa(maxReasks),
		"TOOLGUARD_SHUTDOWN_TIMEOUT=5s",
		"TOOLGUARD_DRAIN_DELAY=0s",
	)
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{listening: make(chan string, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		logs.read(stderr)
	}()
	tg := &toolguard{logs: logs}
	tg.stop = sync.OnceFunc(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		stopped := make(chan error, 1)
		go func() { <-done; stopped <- cmd.Wait() }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-stopped
		}
	})
	t.Cleanup(func() {
		tg.stop()
		if t.Failed() {
			t.Logf("toolguard log:\n%s", logs.String())
		}
	})

	var addr string
	select {
	case addr = <-logs.listening:
	case <-done:
		t.Fatalf("toolguard exited before listening:\n%s", logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("toolguard did not start listening within 20s:\n%s", logs.String())
	}
	tg.baseURL = "http://" + addr + "/v1"
	if err := waitHealthy(t.Context(), "http://"+addr+"/healthz"); err != nil {
		t.Fatalf("toolguard is not healthy: %v\n%s", err, logs.String())
	}
	return tg
}

// waitHealthy polls url until it answers 200, a bounded number of times.
func waitHealthy(ctx context.Context, url string) error {
	var last error
	for i := range 50 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(time.Duration(i+1) * 10 * time.Millisecond)
	}
	return last
}

// logLines collects toolguard's JSON log lines.
type logLines struct {
	listening chan string

	mu    sync.Mutex
	lines []string
}

func (l *logLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "toolguard listening" {
			l.listening <- rec.Addr
		}
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// completionLog is what toolguard logged about one chat completion.
type completionLog struct {
	Outcome *string `json:"outcome"`
	Reasks  int     `json:"reasks"`
}

// completions lists the outcomes toolguard logged, one per chat completion,
// in order: the lines that carry an outcome.
func (l *logLines) completions() []completionLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []completionLog
	for _, line := range l.lines {
		var rec completionLog
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Outcome != nil {
			out = append(out, rec)
		}
	}
	return out
}
