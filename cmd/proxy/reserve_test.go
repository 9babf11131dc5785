package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// TestGCReserveIsCountedNotResident: while toolguard serves, the collector
// counts TOOLGUARD_GC_RESERVE_BYTES as live heap, the process's resident
// memory does not grow by it (no page of it is written), and once run
// returns it is garbage.
//
// It runs toolguard in a process of its own, as it runs in production: in
// a process that has already freed that much heap, the runtime zeroes the
// memory it reuses, and the reserve's pages would be written by that.
func TestGCReserveIsCountedNotResident(t *testing.T) {
	const reserve = 256 << 20
	if os.Getenv("TOOLGUARD_TEST_RESERVE_CHILD") == "1" {
		fmt.Println(reserveChild(t, reserve))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGCReserveIsCountedNotResident$")
	cmd.Env = append(os.Environ(), "TOOLGUARD_TEST_RESERVE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var serving, grew, after int64
	if _, err := fmt.Sscanf(string(out), "live %d grew %d after %d", &serving, &grew, &after); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	if serving < reserve {
		t.Errorf("live heap while serving is %d bytes, want at least the reserve's %d", serving, reserve)
	}
	if grew > reserve/4 {
		t.Errorf("resident memory grew by %d bytes while serving: the reserve's pages were written", grew)
	}
	if after >= reserve {
		t.Errorf("live heap after run returned is %d bytes: the reserve is still held", after)
	}
}

// reserveChild serves with the reserve and reports the live heap while
// serving, how much resident memory grew (-1 where it is not known), and
// the live heap once run has returned.
func reserveChild(t *testing.T, reserve int) string {
	rss0 := residentBytes()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	env := []string{"TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=http://127.0.0.1:9/v1",
		"TOOLGUARD_GC_RESERVE_BYTES=" + strconv.Itoa(reserve)}
	go func() { done <- run(ctx, nil, env, io.Discard, io.Discard, ready) }()
	<-ready
	serving := liveHeap()
	grew := int64(-1)
	if rss0 >= 0 {
		grew = residentBytes() - rss0
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("live %d grew %d after %d", serving, grew, liveHeap())
}

// liveHeap collects and returns the bytes the collector found live.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// residentBytes returns the process's resident memory where /proc says it
// (Linux), else -1.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}
