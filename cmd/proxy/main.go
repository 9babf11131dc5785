// Command proxy runs toolguard: an OpenAI-compatible reverse proxy that lets
// only valid tool calls through. It is configured by environment variables
// (see config.example.env); with -demo it runs against a built-in scripted
// model and shows what it does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"

	"github.com/toolguard/toolguard/internal/logbuf"
	"github.com/toolguard/toolguard/internal/serving"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "toolguard:", err)
		os.Exit(1)
	}
}

// run starts toolguard and serves until ctx is done, then drains. If ready is
// not nil, the listening address is sent on it once the server accepts
// connections.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("toolguard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	demo := fs.Bool("demo", false, "run against a built-in scripted model that makes the classic mistakes, print what toolguard does, and exit")
	healthcheck := fs.Bool("healthcheck", false, "ask the toolguard listening on TOOLGUARD_LISTEN_ADDR whether it is healthy, and exit 0 if it is (for container health checks)")
	showVersion := fs.Bool("version", false, "print the version, the commit and the Go version, and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolguard [flags]\n\n"+
			"toolguard is an OpenAI-compatible reverse proxy that lets only valid tool calls through.\n"+
			"It is configured by TOOLGUARD_* environment variables: see config.example.env and the README\n"+
			"(TOOLGUARD_UPSTREAM_URL, TOOLGUARD_LISTEN_ADDR, TOOLGUARD_MODE, ...).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // the usage was printed: asking for it is no error
		}
		return err
	}
	if *showVersion {
		fmt.Fprintf(stdout, "toolguard %s (commit %s, %s)\n", buildVersion(), version.GetRevision(), version.GoVersion)
		return nil
	}
	cfg, err := policy.Load(environ)
	if err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	// The log is written by a background writer, off the request path; a
	// clean exit writes every line first.
	logOut := logbuf.New(stderr, cfg.LogFlushInterval)
	defer logOut.Close()
	logger, err := newLogger(cfg, logOut)
	if err != nil {
		return err
	}
	for _, w := range policy.Unknown(environ) {
		logger.Warn(w)
	}
	if *demo {
		return runDemo(ctx, cfg, stdout)
	}
	if *healthcheck {
		return checkHealth(ctx, cfg.ListenAddr)
	}
	reserve := serving.Reserve(cfg)
	defer runtime.KeepAlive(reserve)
	tp, err := newTracerProvider(ctx)
	if err != nil {
		return err
	}
	opts := proxy.Options{Config: cfg, Logger: logger}
	if cfg.LogFormat != "text" {
		// newLogger's JSONHandler writes to logOut: request lines can too.
		opts.AccessLog = logOut
	}
	if tp != nil {
		opts.TracerProvider = tp
		defer func() {
			// Send the spans still buffered before exiting.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			tp.Shutdown(sctx)
		}()
	}
	h, err := proxy.New(opts)
	if err != nil {
		return err
	}
	version.Version = buildVersion()
	h.Metrics().MustRegister(versioncollector.NewCollector("toolguard"))
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on TOOLGUARD_LISTEN_ADDR: %w", err)
	}
	srv := serving.Server(h, cfg, slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	var metricsSrv *http.Server
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			srv.Close()
			return fmt.Errorf("listen on TOOLGUARD_METRICS_ADDR: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", h.MetricsHandler())
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := metricsSrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics: %w", err)
			}
		}()
		logger.Info("metrics listening", "addr", mln.Addr().String())
	}
	logger.Info("toolguard listening", "version", buildVersion(), "commit", version.GetRevision(), "go", version.GoVersion,
		"client_auth", len(cfg.APIKeys) > 0, "tracing", tp != nil, "addr", ln.Addr().String(), "upstream", redactedURL(cfg.UpstreamURL),
		"mode", string(cfg.Mode), "max_reasks", cfg.MaxReasks, "on_failure", string(cfg.OnFailure),
		"fallback_model", cfg.FallbackModel, "fallback_upstream", redactedURL(cfg.FallbackUpstreamURL),
		"breaker_failures", cfg.BreakerFailures, "breaker_cooldown", cfg.BreakerCooldown.String(),
		"gc_reserve_bytes", len(reserve))
	if ready != nil {
		logOut.Sync() // the start-up lines are out before anyone is told
		ready <- ln.Addr().String()
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Draining: say so to the load balancer and keep serving for
	// TOOLGUARD_DRAIN_DELAY, so that probes see /readyz answer 503 and
	// traffic moves away before the listener closes; then refuse new
	// connections and let the requests in flight finish.
	h.SetReady(false)
	logger.Info("draining", "delay", cfg.DrainDelay.String())
	drain := time.NewTimer(cfg.DrainDelay)
	select {
	case <-drain.C:
	case err := <-errc:
		drain.Stop()
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if metricsSrv != nil {
		metricsSrv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	h.CloseIdleConnections()
	logger.Info("stopped")
	return nil
}

// buildVersion is the version set at build time
// (-ldflags "-X github.com/prometheus/common/version.Version=v1.2.3"), or
// else the one the go command stamped (the module version of a go install
// pkg@v1.2.3, or a pseudo-version from the commit of a go build in a
// checkout), or "dev".
func buildVersion() string {
	if version.Version != "" {
		return version.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// redactedURL hides a password the upstream URL may carry (user:pass@host).
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Redacted()
}

// checkHealth asks the local toolguard's /healthz; the container image has no
// shell or curl to do it.
func checkHealth(ctx context.Context, listenAddr string) error {
	_, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return fmt.Errorf("TOOLGUARD_LISTEN_ADDR: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort("127.0.0.1", port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: status %d", resp.StatusCode)
	}
	return nil
}

func newLogger(cfg policy.Config, w io.Writer) (*slog.Logger, error) {
	level, err := cfg.SlogLevel()
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}
