package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// wrkResult is one wrk run.
type wrkResult struct {
	rps      float64
	p50, p99 time.Duration
	requests int64
	errors   int64 // connect, read, write and timeout errors, and non-2xx/3xx answers
}

// The Lua script's done hook prints the figures on one line: wrk's own
// summary rounds latencies and mixes units, its histogram does not.
const luaDone = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRKRESULT requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`

// luaNumbered makes wrk send head, a number, then tail as each request's
// body. setup runs in the main script, once per thread; request in each
// thread's own.
const luaNumbered = `
local started, threads = os.time(), 0
setup = function(thread)
  threads = threads + 1
  thread:set("tid", started .. "." .. threads)
end
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, head .. tid .. "." .. n .. tail)
end
`

// writeScript writes the Lua script that makes wrk POST body with headers.
// A body with conversationMark in it is numbered anew for every request:
// the run's start, wrk's thread and a count, so no two requests of a run,
// nor of two runs, are the same conversation.
func writeScript(dir, name, body string, headers map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("wrk.method = \"POST\"\n")
	b.WriteString("wrk.headers[\"Content-Type\"] = \"application/json\"\n")
	for k, v := range headers {
		fmt.Fprintf(&b, "wrk.headers[%q] = %q\n", k, v)
	}
	if head, tail, ok := strings.Cut(body, conversationMark); ok {
		b.WriteString(luaNumbered)
		b.WriteString("head = [==[" + head + "]==]\n")
		b.WriteString("tail = [==[" + tail + "]==]\n")
	} else {
		b.WriteString("wrk.body = [==[" + body + "]==]\n")
	}
	b.WriteString(luaDone)
	path := filepath.Join(dir, name+".lua")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// runWrk loads url for d with conns connections. wrk stops itself after d;
// the context bounds it again in case it hangs.
func runWrk(ctx context.Context, url, script string, conns, threads int, d time.Duration) (wrkResult, error) {
	threads = max(1, min(threads, conns))
	secs := max(1, int(d.Round(time.Second)/time.Second))
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns),
		"-d"+strconv.Itoa(secs)+"s", "--timeout", "5s", "-s", script, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w\n%s", err, tail(string(out), 1000))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "WRKRESULT ") {
			continue
		}
		var req, durUS, errs, p50, p99 int64
		if _, err := fmt.Sscanf(line, "WRKRESULT requests=%d duration_us=%d errors=%d p50_us=%d p99_us=%d",
			&req, &durUS, &errs, &p50, &p99); err != nil {
			return wrkResult{}, fmt.Errorf("wrk: parse %q: %w", line, err)
		}
		r := wrkResult{requests: req, errors: errs, p50: time.Duration(p50) * time.Microsecond, p99: time.Duration(p99) * time.Microsecond}
		if durUS > 0 {
			r.rps = float64(req) / (float64(durUS) / 1e6)
		}
		return r, nil
	}
	return wrkResult{}, fmt.Errorf("wrk: no result line in its output:\n%s", tail(string(out), 1000))
}
