// Command profiled is toolguard's handler served as cmd/proxy serves it, with
// a CPU profile taken from start to stop and an allocation profile written at
// stop, into $LOADTEST_PROFILE_DIR (cpu.prof, allocs.prof). The toolguard
// binary exposes no profiling; the load comparison runs this build instead
// when given -profile. Configuration is toolguard's environment.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/toolguard/toolguard/internal/logbuf"
	"github.com/toolguard/toolguard/internal/serving"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "profiled:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir := os.Getenv("LOADTEST_PROFILE_DIR")
	if dir == "" {
		return errors.New("set LOADTEST_PROFILE_DIR to the directory for the profiles")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg, err := policy.Load(os.Environ())
	if err != nil {
		return err
	}
	reserve := serving.Reserve(cfg)
	defer runtime.KeepAlive(reserve)
	level, err := cfg.SlogLevel()
	if err != nil {
		return err
	}
	// The log goes through the background writer, as cmd/proxy's does.
	logOut := logbuf.New(os.Stderr, cfg.LogFlushInterval)
	defer logOut.Close()
	logger := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: level}))
	// Request lines are written as cmd/proxy writes them with its JSON log:
	// straight into the background writer (Options.AccessLog).
	h, err := proxy.New(proxy.Options{Config: cfg, Logger: logger, AccessLog: logOut})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return err
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.prof"))
	if err != nil {
		return err
	}
	defer cpu.Close()
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return err
	}
	// As cmd/proxy serves it: its timeouts set deadlines on the
	// connection for each request.
	srv := serving.Server(h, cfg, nil)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.Shutdown(sctx)
		cancel()
		<-errc
	}
	pprof.StopCPUProfile()
	allocs, aerr := os.Create(filepath.Join(dir, "allocs.prof"))
	if aerr != nil {
		return aerr
	}
	defer allocs.Close()
	if perr := pprof.Lookup("allocs").WriteTo(allocs, 0); perr != nil {
		return perr
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
