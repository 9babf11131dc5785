// Command compare runs toolguard's load comparison and prints it as a
// markdown table: the same fake model reached directly, through a bare
// httputil.ReverseProxy, through toolguard (off; valid calls; the repair
// path; the re-ask path; streaming; a 40 KB chat history, sent again and
// new with every request) and through the
// Portkey gateway, with the CPU time each proxy spends per request.
//
// Run it from the repository:
//
//	go run ./loadtest/cmd/compare            # 5 rounds of 10 s per arm and load
//	go run ./loadtest/cmd/compare -quick     # 1 round of 2 s, to try it
//
// It installs wrk (apt-get) and the pinned Portkey gateway (npm ci in
// loadtest/portkey) if they are missing, builds toolguard and the harness
// into a temporary directory, and starts every process on 127.0.0.1 only.
// The arms run interleaved in rounds, in a rotating order, so the machine's
// drift hits all of them alike; each figure is the median over the rounds.
// Every load is bounded in time (wrk -d, probes by count and deadline).
// Then it opens -streams slow streams through toolguard at once and reads
// its resident memory from /proc.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolguard/toolguard/policy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runCompare(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

type config struct {
	rounds    int
	duration  time.Duration
	conns     int
	threads   int
	events    int
	latency   time.Duration
	pad       int
	probes    int
	streams   int
	portkey   bool
	arms      string
	out       string
	profile   string
	keep      bool
	toolguard string // extra KEY=VALUE settings for the toolguard arms
	baseline  string // a git revision whose toolguard runs beside the current one
	// baselineEnv are extra KEY=VALUE settings for the baseline's arms
	// alone, after toolguard's: the same build under two settings.
	baselineEnv string
	// bareReserve is the collector's reserve the bare proxy holds: the
	// toolguard arms' TOOLGUARD_GC_RESERVE_BYTES.
	bareReserve int64
}

func runCompare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var c config
	quick := fs.Bool("quick", false, "1 round of 2 s per load, 200 streams: a quick try, not a measurement")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds; each runs every arm once at 1 and at -conns connections")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each wrk run")
	fs.IntVar(&c.conns, "conns", 32, "connections of the throughput run")
	fs.IntVar(&c.threads, "threads", min(2, runtime.NumCPU()), "wrk threads of the throughput run")
	fs.IntVar(&c.events, "events", 50, "content events in each streamed reply")
	fs.DurationVar(&c.latency, "latency", 0, "the fake model's delay before each reply")
	fs.IntVar(&c.pad, "pad", 0, "bytes of assistant content added to each reply")
	fs.IntVar(&c.probes, "probes", 300, "streamed requests per stream arm and round for the first-content timing (bounded by -duration too)")
	fs.IntVar(&c.streams, "streams", 1000, "concurrent slow streams of the memory check; 0 skips it")
	fs.BoolVar(&c.portkey, "portkey", true, "include the Portkey gateway arm (needs node and npm)")
	fs.StringVar(&c.arms, "arms", "", "comma-separated arms to run (default: all); direct and reverseproxy are always run, and so are the arms an arm is measured against")
	fs.StringVar(&c.out, "out", "", "also write the report to this file")
	fs.StringVar(&c.profile, "profile", "", "directory: run the toolguard arms on a build that writes cpu.prof and allocs.prof there when it stops (the arm with inspection off in off/)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (binaries, logs, scripts)")
	fs.StringVar(&c.toolguard, "toolguard-env", "", "comma-separated KEY=VALUE settings added to the toolguard arms' environment")
	fs.StringVar(&c.baselineEnv, "baseline-env", "", "comma-separated KEY=VALUE settings added to the baseline arms' environment alone, after -toolguard-env's (with -baseline HEAD: one build under two settings)")
	fs.StringVar(&c.baseline, "baseline", "", "a git revision: also build toolguard there and run its valid, repair, history, first-turn, stream, no-tools and many-tools arms (baseline-*) beside the current ones")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		c.rounds, c.duration, c.probes = 1, 2*time.Second, 100
		if c.streams > 200 {
			c.streams = 200
		}
	}
	if c.rounds < 1 || c.duration < time.Second || c.conns < 1 {
		return fmt.Errorf("-rounds must be at least 1, -duration at least 1s, -conns at least 1")
	}
	reserve, err := bareReserve(c.toolguard)
	if err != nil {
		return err
	}
	c.bareReserve = reserve
	arms, err := pickArms(c)
	if err != nil {
		return err
	}

	root, err := repoRoot(ctx)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "toolguard-load-")
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	env, err := setup(ctx, c, root, tmp, arms)
	if err != nil {
		return err
	}
	ps := &procs{dir: tmp}
	defer ps.stopAll()
	servers, started, err := startArms(ctx, c, env, ps, arms)
	if err != nil {
		return err
	}
	guard := started["guard"]
	tick := clockTick(ctx)

	rep := &report{cfg: c, arms: arms, env: env, results: map[string]*armResults{}, tick: tick}
	for _, a := range arms {
		url := servers[a.target] + a.path()
		if err := check(ctx, a, url, a.headers(servers["direct"])); err != nil {
			return err
		}
		script, err := writeScript(tmp, a.name, a.template(), a.headers(servers["direct"]))
		if err != nil {
			return err
		}
		rep.results[a.name] = &armResults{url: url, script: script}
	}
	total := time.Duration(c.rounds*len(arms)*2)*c.duration + time.Duration(c.rounds*3)*c.duration
	fmt.Fprintf(os.Stderr, "%d arms, %d rounds of %s: about %s\n", len(arms), c.rounds, c.duration, total.Round(time.Second))
	// Warm every arm up first (Portkey's JIT, connection pools, schema
	// caches): unrecorded.
	for _, a := range arms {
		res := rep.results[a.name]
		if _, err := runWrk(ctx, res.url, res.script, c.conns, c.threads, min(c.duration, 2*time.Second)); err != nil {
			return fmt.Errorf("arm %s: warm-up: %w", a.name, err)
		}
	}
	for r := range c.rounds {
		// Rotate the order each round: no arm always runs right after
		// another's load.
		for i := range arms {
			a := arms[(i+r)%len(arms)]
			res := rep.results[a.name]
			one, err := runWrk(ctx, res.url, res.script, 1, 1, c.duration)
			if err != nil {
				return fmt.Errorf("arm %s: %w", a.name, err)
			}
			var pr *proc
			if a.target != "direct" {
				pr = started[a.target]
			}
			many, cpu, err := cpuPerRequest(pr, tick, func() (wrkResult, error) {
				return runWrk(ctx, res.url, res.script, c.conns, c.threads, c.duration)
			})
			if err != nil {
				return fmt.Errorf("arm %s: %w", a.name, err)
			}
			res.one, res.many = append(res.one, one), append(res.many, many)
			cpuNote := ""
			if pr != nil {
				res.cpu = append(res.cpu, cpu)
				cpuNote = fmt.Sprintf(", CPU %s/req", cpu.Round(time.Microsecond))
			}
			fmt.Fprintf(os.Stderr, "round %d %-20s 1 conn p50 %6s | %d conns %8.0f req/s p99 %s%s\n",
				r+1, a.name, one.p50, c.conns, many.rps, many.p99, cpuNote)
		}
		for _, a := range arms {
			if !a.stream {
				continue
			}
			res := rep.results[a.name]
			first, last, err := streamProbe(ctx, res.url, a.body(), a.headers(servers["direct"]), c.probes, c.duration)
			if err != nil {
				return fmt.Errorf("arm %s: stream probe: %w", a.name, err)
			}
			res.first, res.last = append(res.first, first), append(res.last, last)
			fmt.Fprintf(os.Stderr, "round %d %-20s first content %s, last byte %s\n", r+1, a.name, first, last)
		}
	}
	if guard != nil && c.profile != "" {
		guard.stop()
	}
	ps.stopAll()

	if c.streams > 0 {
		m, err := memoryCheck(ctx, c, env, ps)
		if err != nil {
			return fmt.Errorf("memory check: %w", err)
		}
		rep.mem = &m
	}
	rep.load = loadAverage()
	out := rep.markdown()
	fmt.Print(out)
	if c.out != "" {
		return os.WriteFile(c.out, []byte(out), 0o644)
	}
	return nil
}

func pickArms(c config) ([]arm, error) {
	if c.arms == "" {
		var out []arm
		for _, a := range allArms {
			if (a.target == "portkey" && !c.portkey) || (a.target == "baseline" && c.baseline == "") {
				continue
			}
			out = append(out, a)
		}
		return out, checkArms(out)
	}
	want := map[string]bool{"direct": true, "reverseproxy": true}
	for _, n := range strings.Split(c.arms, ",") {
		want[strings.TrimSpace(n)] = true
	}
	// An arm is measured against its base and bare arms: run those too.
	for _, a := range allArms {
		if want[a.name] {
			want[a.base], want[a.bare] = true, true
		}
	}
	var out []arm
	for _, a := range allArms {
		if want[a.name] {
			out = append(out, a)
			delete(want, a.name)
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("-arms: no arm %s", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
	}
	return out, checkArms(out)
}

// checkArms makes sure what the arms send can be made: the many tools are
// read from the corpus.
func checkArms(arms []arm) error {
	for _, a := range arms {
		if a.manyTools {
			_, err := manyTools()
			return err
		}
	}
	return nil
}

// environment is what was built and installed for the run.
type environment struct {
	root, tmp                  string
	toolguard, upstream, proxy string // binaries
	baseline                   string // toolguard built at -baseline, if set
	portkeyDir                 string
}

func repoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run from toolguard's repository (no go.mod here)")
	}
	return filepath.Dir(mod), nil
}

// setup installs wrk and Portkey if missing and builds the binaries.
func setup(ctx context.Context, c config, root, tmp string, arms []arm) (environment, error) {
	env := environment{root: root, tmp: tmp,
		toolguard: filepath.Join(tmp, "toolguard"), upstream: filepath.Join(tmp, "upstream"), proxy: filepath.Join(tmp, "bareproxy"),
		portkeyDir: filepath.Join(root, "loadtest", "portkey")}
	if _, err := exec.LookPath("wrk"); err != nil {
		fmt.Fprintln(os.Stderr, "installing wrk (apt-get install -y wrk)")
		if err := run(ctx, root, "apt-get", "install", "-y", "wrk"); err != nil {
			return env, fmt.Errorf("wrk is missing and could not be installed (try `sudo apt-get install wrk`): %w", err)
		}
	}
	guardPkg := "./cmd/proxy"
	if c.profile != "" {
		guardPkg = "./loadtest/cmd/profiled"
	}
	for bin, pkg := range map[string]string{env.toolguard: guardPkg, env.upstream: "./loadtest/cmd/upstream", env.proxy: "./loadtest/cmd/bareproxy"} {
		fmt.Fprintln(os.Stderr, "building", pkg)
		if err := run(ctx, root, "go", "build", "-o", bin, pkg); err != nil {
			return env, err
		}
	}
	if c.baseline != "" {
		dir := filepath.Join(tmp, "baseline-src")
		fmt.Fprintln(os.Stderr, "building toolguard at", c.baseline)
		if err := run(ctx, root, "git", "worktree", "add", "--detach", dir, c.baseline); err != nil {
			return env, fmt.Errorf("-baseline: %w", err)
		}
		defer run(context.Background(), root, "git", "worktree", "remove", "--force", dir)
		env.baseline = filepath.Join(tmp, "toolguard-baseline")
		if err := run(ctx, dir, "go", "build", "-o", env.baseline, "./cmd/proxy"); err != nil {
			return env, fmt.Errorf("-baseline: %w", err)
		}
	}
	for _, a := range arms {
		if a.target != "portkey" {
			continue
		}
		if _, err := os.Stat(filepath.Join(env.portkeyDir, "node_modules", "@portkey-ai", "gateway", "build", "start-server.js")); err != nil {
			fmt.Fprintln(os.Stderr, "installing the Portkey gateway (npm ci in loadtest/portkey)")
			if err := run(ctx, env.portkeyDir, "npm", "ci", "--no-audit", "--no-fund"); err != nil {
				return env, err
			}
		}
		break
	}
	return env, nil
}

// startArms starts the fake model, the bare proxy, toolguard off and on, and
// Portkey, and returns each one's base URL and process by target name.
func startArms(ctx context.Context, c config, env environment, ps *procs, arms []arm) (map[string]string, map[string]*proc, error) {
	need := map[string]bool{"direct": true}
	for _, a := range arms {
		need[a.target] = true
	}
	servers := map[string]string{}
	upAddr, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	up, err := ps.start("upstream", env.root, nil, env.upstream, "-addr", upAddr,
		"-events", strconv.Itoa(c.events), "-latency", c.latency.String(), "-pad", strconv.Itoa(c.pad))
	if err != nil {
		return nil, nil, err
	}
	servers["direct"] = "http://" + upAddr
	started := map[string]*proc{"direct": up}
	if err := waitReady(ctx, up, servers["direct"]+"/"); err != nil {
		return nil, nil, err
	}
	start := func(target string, f func(addr string) (*proc, error), path string) error {
		if !need[target] {
			return nil
		}
		addr, err := freePort()
		if err != nil {
			return err
		}
		pr, err := f(addr)
		if err != nil {
			return err
		}
		started[target] = pr
		servers[target] = "http://" + addr
		return waitReady(ctx, pr, servers[target]+path)
	}
	upstreamURL := servers["direct"] + "/v1"
	guardEnv := func(addr, mode string, extra ...string) []string {
		e := []string{"TOOLGUARD_LISTEN_ADDR=" + addr, "TOOLGUARD_DRAIN_DELAY=0s", "TOOLGUARD_UPSTREAM_URL=" + upstreamURL, "TOOLGUARD_MODE=" + mode, "TOOLGUARD_DRAIN_DELAY=0s"}
		if c.profile != "" {
			// The arm with inspection off writes its profiles apart, in
			// off/, so the two toolguard arms' do not overwrite each other.
			dir := c.profile
			if mode == "off" {
				dir = filepath.Join(c.profile, "off")
				os.MkdirAll(dir, 0o755)
			}
			e = append(e, "LOADTEST_PROFILE_DIR="+dir)
		}
		return append(e, settings(append([]string{c.toolguard}, extra...)...)...)
	}
	steps := []struct {
		target string
		f      func(addr string) (*proc, error)
		path   string
	}{
		{"bare", func(addr string) (*proc, error) {
			return ps.start("bareproxy", env.root, nil, env.proxy, "-addr", addr, "-upstream", servers["direct"], "-reserve", strconv.FormatInt(c.bareReserve, 10))
		}, "/"},
		{"off", func(addr string) (*proc, error) {
			return ps.start("toolguard-off", env.root, guardEnv(addr, "off"), env.toolguard)
		}, "/healthz"},
		{"guard", func(addr string) (*proc, error) {
			return ps.start("toolguard", env.root, guardEnv(addr, "repair"), env.toolguard)
		}, "/healthz"},
		{"baseline", func(addr string) (*proc, error) {
			return ps.start("toolguard-baseline", env.root, guardEnv(addr, "repair", c.baselineEnv), env.baseline)
		}, "/healthz"},
		{"portkey", func(addr string) (*proc, error) {
			_, port, _ := strings.Cut(addr, ":")
			return ps.start("portkey", env.portkeyDir, nil, "node", "--require", "./loopback.cjs",
				"node_modules/@portkey-ai/gateway/build/start-server.js", "--port="+port, "--headless")
		}, "/"},
	}
	for _, s := range steps {
		if s.target == "baseline" && env.baseline == "" {
			continue
		}
		if err := start(s.target, s.f, s.path); err != nil {
			return nil, nil, err
		}
	}
	return servers, started, nil
}

// memoryCheck starts a fake model that trickles events (one every 500 ms)
// and a toolguard with the default configuration, and opens
// c.streams streams through it.
func memoryCheck(ctx context.Context, c config, env environment, ps *procs) (memResult, error) {
	defer ps.stopAll()
	upAddr, err := freePort()
	if err != nil {
		return memResult{}, err
	}
	up, err := ps.start("upstream-slow", env.root, nil, env.upstream, "-addr", upAddr, "-events", "2000", "-event-interval", "500ms")
	if err != nil {
		return memResult{}, err
	}
	if err := waitReady(ctx, up, "http://"+upAddr+"/"); err != nil {
		return memResult{}, err
	}
	addr, err := freePort()
	if err != nil {
		return memResult{}, err
	}
	// The toolguard binary, not the profiling build, whatever -profile says.
	bin := env.toolguard
	if c.profile != "" {
		bin = filepath.Join(env.tmp, "toolguard-plain")
		if err := run(ctx, env.root, "go", "build", "-o", bin, "./cmd/proxy"); err != nil {
			return memResult{}, err
		}
	}
	tg, err := ps.start("toolguard-streams", env.root, []string{"TOOLGUARD_LISTEN_ADDR=" + addr, "TOOLGUARD_DRAIN_DELAY=0s",
		"TOOLGUARD_UPSTREAM_URL=http://" + upAddr + "/v1"}, bin)
	if err != nil {
		return memResult{}, err
	}
	if err := waitReady(ctx, tg, "http://"+addr+"/healthz"); err != nil {
		return memResult{}, err
	}
	fmt.Fprintf(os.Stderr, "memory: opening %d slow streams through toolguard\n", c.streams)
	a := arm{name: "stream", target: "guard", model: "valid", stream: true}
	return openStreams(ctx, "http://"+addr+"/v1/chat/completions", a.body(), a.headers(""), c.streams, tg.cmd.Process.Pid)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// bareReserve is the collector's reserve the bare proxy holds: the one the
// toolguard arms hold (TOOLGUARD_GC_RESERVE_BYTES, its default unless
// toolguardEnv, -toolguard-env's settings, sets it), so that the yardstick
// runs as toolguard's plumbing does.
func bareReserve(toolguardEnv string) (int64, error) {
	cfg, err := policy.Load(settings(toolguardEnv))
	if err != nil {
		return 0, fmt.Errorf("-toolguard-env: %w", err)
	}
	return cfg.GCReserveBytes, nil
}

// settings are the KEY=VALUE settings of comma-separated lists, in order:
// a process started with them takes the last of a key given twice (as
// os/exec does), so a later list overrides an earlier one.
func settings(lists ...string) []string {
	var out []string
	for _, l := range lists {
		for _, kv := range strings.Split(l, ",") {
			if kv = strings.TrimSpace(kv); kv != "" {
				out = append(out, kv)
			}
		}
	}
	return out
}
