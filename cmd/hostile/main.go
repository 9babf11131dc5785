// Command hostile measures what crafted requests and upstream replies cost
// the real toolguard binary: for each case it starts a fresh toolguard in
// front of a local upstream that answers as the case says, sends the case's
// request once, and reports the process's CPU time and peak memory for it,
// with the bytes that went upstream and to the client. RELIABILITY.md
// records its output.
//
//	go run ./cmd/hostile            # every case
//	go run ./cmd/hostile -run NAME  # the cases whose name contains NAME
//
// All traffic stays on 127.0.0.1.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

// A hostileCase is one crafted exchange.
type hostileCase struct {
	name    string
	request func() []byte
	// reply answers each upstream request (n counts from 0).
	reply func(w http.ResponseWriter, r *http.Request, n int)
	env   []string // extra configuration, if any
	// path is where request is posted: /v1/chat/completions if empty.
	path string
	// header is added to the request's (Content-Encoding, say).
	header http.Header
	// send, if set, replaces the one POST of request: it talks to the
	// toolguard at addr itself and returns the last status it read and the
	// bytes it read in all.
	send func(addr string) (status int, read int64, err error)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hostile", flag.ContinueOnError)
	filter := fs.String("run", "", "run only the cases whose name contains this")
	binary := fs.String("toolguard", "", "toolguard binary to run (default: build ./cmd/proxy)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bin := *binary
	if bin == "" {
		dir, err := os.MkdirTemp("", "toolguard-hostile")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "toolguard")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/proxy")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build toolguard: %w", err)
		}
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "case\trequest bytes\tstatus\tCPU ms\tpeak RSS MiB\tfile pages MiB\tbytes upstream\tbytes to client\t")
	for _, c := range cases() {
		if !strings.Contains(c.name, *filter) {
			continue
		}
		m, err := measure(ctx, bin, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%d\t%d\t\n", c.name, m.requestBytes, m.status, m.cpu.Milliseconds(),
			float64(m.peakKiB)/1024, float64(m.fileKiB)/1024, m.upstreamBytes, m.clientBytes)
	}
	return w.Flush()
}

type measurement struct {
	requestBytes, upstreamBytes, clientBytes int64
	status                                   int
	cpu                                      time.Duration
	peakKiB, fileKiB                         int64
}

// measure runs one case against a fresh toolguard process.
func measure(ctx context.Context, bin string, c hostileCase) (measurement, error) {
	var m measurement
	var upBytes atomic.Int64
	var n atomic.Int64
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return m, err
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.Copy(io.Discard, r.Body)
		upBytes.Add(b)
		c.reply(w, r, int(n.Add(1)-1))
	})}
	go up.Serve(upLn)
	defer up.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return m, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(),
		"TOOLGUARD_LISTEN_ADDR="+addr,
		"TOOLGUARD_UPSTREAM_URL=http://"+upLn.Addr().String()+"/v1",
		"TOOLGUARD_LOG_LEVEL=error",
		"TOOLGUARD_DRAIN_DELAY=0s",
	)
	cmd.Env = append(cmd.Env, c.env...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return m, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DisableCompression: true}}
	if err := waitHealthy(ctx, client, "http://"+addr); err != nil {
		return m, err
	}
	pid := cmd.Process.Pid
	before, err := cpuTime(pid)
	if err != nil {
		return m, err
	}
	if c.send != nil {
		if m.status, m.clientBytes, err = c.send(addr); err != nil {
			return m, err
		}
	} else {
		body := c.request()
		m.requestBytes = int64(len(body))
		path := c.path
		if path == "" {
			path = "/v1/chat/completions"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
		if err != nil {
			return m, err
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return m, err
		}
		m.clientBytes, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		m.status = resp.StatusCode
	}
	after, err := cpuTime(pid)
	if err != nil {
		return m, err
	}
	m.cpu = after - before
	m.peakKiB, m.fileKiB, err = residentKiB(pid)
	m.upstreamBytes = upBytes.Load()
	return m, err
}

func waitHealthy(ctx context.Context, client *http.Client, base string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := client.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("toolguard did not become healthy")
}

// cpuTime is the user and system time of a process so far, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// residentKiB reads, from /proc/<pid>/status, the process's high-water mark
// of resident memory (VmHWM) and, of what is resident now, the pages mapped
// from files (RssFile): the binary's own code and data, which the kernel maps
// in as they are first touched, in runs around each page, so that which code
// a request runs, and where the linker put it, moves peak RSS by some hundreds
// of KiB. Those pages are read-only, shared and can be dropped at any time;
// peak minus them is a lower bound of the memory the process itself held.
func residentKiB(pid int) (peak, file int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var found int
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmHWM" && name != "RssFile") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s in /proc status: %w", name, err)
		}
		if name == "VmHWM" {
			peak = n
		} else {
			file = n
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("no VmHWM or RssFile in /proc status")
	}
	return peak, file, nil
}
