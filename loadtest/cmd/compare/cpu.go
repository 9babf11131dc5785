package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// A proxy's CPU time per request is what its throughput costs the machine,
// and unlike the latencies it hardly depends on what else runs there. It is
// read from /proc/<pid>/stat: utime and stime, the process's CPU time in
// user and kernel mode summed over its threads, counted in clock ticks.

// defaultClockTick is the length of a clock tick when getconf cannot say:
// the kernel reports /proc times in USER_HZ, 100 a second on every
// architecture Linux runs Go on.
const defaultClockTick = 10 * time.Millisecond

// clockTick returns the length of the clock tick that /proc counts in, from
// `getconf CLK_TCK` (sysconf(_SC_CLK_TCK), which Go cannot call without cgo),
// or defaultClockTick.
func clockTick(ctx context.Context) time.Duration {
	out, err := exec.CommandContext(ctx, "getconf", "CLK_TCK").Output()
	if err != nil {
		return defaultClockTick
	}
	hz, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || hz <= 0 {
		return defaultClockTick
	}
	return time.Second / time.Duration(hz)
}

// cpuTime returns the CPU time the process has used so far.
func cpuTime(pid int, tick time.Duration) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, err := statTicks(string(b))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ticks) * tick, nil
}

// statTicks returns utime+stime from the text of /proc/<pid>/stat.
func statTicks(stat string) (int64, error) {
	// The second field, the command name, is in parentheses and may hold
	// spaces and parentheses; the fields after it are numbered from 3.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(stat[i+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("%d fields", len(f)+2)
	}
	u, err := strconv.ParseInt(f[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseInt(f[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// cpuPerRequest runs load and returns its result with the CPU time pr used
// during it divided by the requests it completed; 0 without a process (the
// direct arm) or without requests. Requests cut off when the load stops
// cost CPU but are not counted: at most one per connection, against tens of
// thousands completed.
func cpuPerRequest(pr *proc, tick time.Duration, load func() (wrkResult, error)) (wrkResult, time.Duration, error) {
	if pr == nil {
		w, err := load()
		return w, 0, err
	}
	pid := pr.cmd.Process.Pid
	before, err := cpuTime(pid, tick)
	if err != nil {
		return wrkResult{}, 0, err
	}
	w, err := load()
	if err != nil {
		return w, 0, err
	}
	after, err := cpuTime(pid, tick)
	if err != nil {
		return w, 0, err
	}
	if w.requests == 0 {
		return w, 0, nil
	}
	return w, (after - before) / time.Duration(w.requests), nil
}
