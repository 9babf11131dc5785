package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one process the comparison started; stop ends it.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // where its output goes
	done chan struct{}
}

// procs are every process started, stopped in reverse order at the end.
type procs struct {
	dir  string // their logs
	list []*proc
}

// start runs name from dir with args and extra environment; its output goes
// to a log file in p.dir.
func (p *procs) start(name, dir string, env []string, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(p.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a Ctrl-C reaches the comparison, which stops
	// its children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pr := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(pr.done) }()
	p.list = append(p.list, pr)
	return pr, nil
}

// stopAll ends every process started: SIGTERM, then SIGKILL after 3 s.
func (p *procs) stopAll() {
	for i := len(p.list) - 1; i >= 0; i-- {
		p.list[i].stop()
	}
	p.list = nil
}

func (pr *proc) stop() {
	select {
	case <-pr.done:
		return
	default:
	}
	pr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(3 * time.Second):
		pr.cmd.Process.Kill()
		<-pr.done
	}
}

// exited reports whether the process has ended, with the tail of its log.
func (pr *proc) exited() error {
	select {
	case <-pr.done:
		b, _ := os.ReadFile(pr.log)
		return fmt.Errorf("%s exited: %s", pr.name, tail(string(b), 800))
	default:
		return nil
	}
}

// cleanEnv is this process's environment without toolguard's variables, so
// an operator's settings do not leak into the arms.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGUARD_") {
			out = append(out, kv)
		}
	}
	return out
}

// freePort returns a loopback port nobody listens on.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls url until it answers (any status) or 60 s pass.
func waitReady(ctx context.Context, pr *proc, url string) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := pr.exited(); err != nil {
			return err
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: not answering on %s after 60s (log: %s)", pr.name, url, pr.log)
}

// vmRSS reads the resident set size and its peak of a process, in bytes.
func vmRSS(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb * 1024
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			hwm = kb * 1024
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return rss, hwm, nil
}

// run runs a setup command (a build, an install), failing with its output.
func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(string(out), 2000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
