// Command soak runs toolguard, the real binary, against the fault-injecting
// upstream with mixed traffic at a steady rate for a fixed time, checks every
// answer against toolguard's contract, and reports what it saw. It exits
// non-zero if any answer broke the contract, if any request went unanswered,
// or if toolguard's goroutines or memory grew without bound.
//
//	go run ./cmd/soak -duration 10m -rate 40
//
// All traffic stays on 127.0.0.1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/validate"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type options struct {
	duration, settle time.Duration
	rate             float64
	binary           string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var o options
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "how long to send traffic")
	fs.Float64Var(&o.rate, "rate", 40, "requests per second")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "pause after the traffic before the final measurement")
	fs.StringVar(&o.binary, "toolguard", "", "toolguard binary to run (default: build ./cmd/proxy)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rep, err := soak(ctx, o)
	if err != nil {
		return err
	}
	rep.write(out)
	return rep.verdict()
}

// soak starts the upstream and toolguard, sends the traffic and measures.
func soak(ctx context.Context, o options) (*report, error) {
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	up := &http.Server{Handler: &faulty.Server{Stall: 3 * time.Second, EnormousBytes: 4 << 20}}
	go up.Serve(upLn)
	defer up.Close()

	bin := o.binary
	if bin == "" {
		dir, err := os.MkdirTemp("", "toolguard-soak")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "toolguard")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/proxy")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build toolguard: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(),
		"TOOLGUARD_LISTEN_ADDR=127.0.0.1:"+strconv.Itoa(port),
		"TOOLGUARD_UPSTREAM_URL=http://"+upLn.Addr().String()+"/v1",
		"TOOLGUARD_UPSTREAM_HEADER_TIMEOUT=1s",
		"TOOLGUARD_UPSTREAM_TIMEOUT=2s",
		"TOOLGUARD_MAX_RESPONSE_BYTES=1048576",
		"TOOLGUARD_BREAKER_FAILURES=0", // faults are part of the mix; an open breaker would hide them
		"TOOLGUARD_LOG_LEVEL=error",
		"TOOLGUARD_DRAIN_DELAY=0s",
	)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start toolguard: %w", err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
	if err := waitHealthy(ctx, client, base); err != nil {
		return nil, err
	}

	rep := &report{options: o, outcomes: map[string]int{}, errors: map[string]int{}, kinds: map[string]int{}}
	rep.start = sampleAt(client, base, cmd.Process.Pid, 0)
	schema, err := validate.Compile([]byte(gjson.Get(faulty.ClickTools, "0.function.parameters").Raw))
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 512) // bounds requests in flight
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
	defer tick.Stop()
	started := time.Now()
	deadline := time.NewTimer(o.duration)
	defer deadline.Stop()
	sampleEvery := time.NewTicker(max(o.duration/10, time.Second))
	defer sampleEvery.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
loop:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			break loop
		case <-sampleEvery.C:
			rep.samples = append(rep.samples, sampleAt(client, base, cmd.Process.Pid, time.Since(started)))
		case <-tick.C:
			rq := pick(rng)
			select {
			case sem <- struct{}{}:
			default:
				rep.add(func(r *report) { r.errors["client: more than 512 in flight, not sent"]++ })
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				rep.add(func(r *report) { r.sent++; r.kinds[rq.name()]++ })
				res := send(ctx, client, base, rq, schema)
				rep.add(func(r *report) { r.record(rq, res) })
			}()
		}
	}
	wg.Wait()
	time.Sleep(o.settle) // let idle connections and timers wind down before the last sample
	client.CloseIdleConnections()
	rep.end = sampleAt(client, base, cmd.Process.Pid, time.Since(started))
	return rep, nil
}

// request is one kind of traffic.
type request struct {
	reply      string // X-Reply
	fault      faulty.Fault
	stream     bool
	disconnect bool // the client gives up early
}

func (r request) name() string {
	n := r.reply
	if r.fault != "" {
		n = "fault " + string(r.fault)
	}
	if r.disconnect {
		n = "client disconnect"
	}
	if r.stream {
		n += " (stream)"
	}
	return n
}

// pick draws a request from the mix: mostly well-behaved traffic of every
// kind the ladder handles, with faults and disconnects.
func pick(rng *rand.Rand) request {
	r := request{stream: rng.IntN(10) < 4}
	switch p := rng.IntN(100); {
	case p < 30:
		r.reply = "valid"
	case p < 55:
		r.reply = "repairable"
	case p < 70:
		r.reply = "reask"
	case p < 75:
		r.reply = "never"
	case p < 80:
		r.reply = "text"
	case p < 93:
		r.reply = "valid"
		r.fault = faulty.Faults[rng.IntN(len(faulty.Faults))]
	default:
		r.reply = "reask"
		r.disconnect = true
	}
	return r
}

// result is what one request got.
type result struct {
	status    int
	outcome   string
	errorCode string
	violation string // how the answer broke the contract, if it did
	err       error  // transport error: no answer
}

func send(ctx context.Context, client *http.Client, base string, rq request, schema *validate.Schema) result {
	body := `{"model":"soak","messages":[{"role":"user","content":"click"}],"tools":` + faulty.ClickTools
	if rq.stream {
		body += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	body += "}"
	if rq.disconnect {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(1+rand.IntN(20))*time.Millisecond)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Reply", rq.reply)
	if rq.fault != "" {
		req.Header.Set("X-Fault", string(rq.fault))
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return result{status: resp.StatusCode, err: err}
	}
	res := result{status: resp.StatusCode, outcome: resp.Header.Get("X-Toolguard-Outcome")}
	if resp.StatusCode >= 400 {
		res.errorCode = gjson.GetBytes(b, "error.code").String()
		if !gjson.GetBytes(b, "error.message").Exists() {
			res.violation = fmt.Sprintf("status %d without an OpenAI error body", resp.StatusCode)
		}
		if resp.StatusCode == 400 && resp.Header.Get("X-Should-Retry") != "false" {
			res.violation = "400 without x-should-retry: false"
		}
		return res
	}
	if rq.stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		checkStream(&res, b, schema)
		return res
	}
	if !gjson.ValidBytes(b) {
		res.violation = "a 2xx answer that is not JSON"
		return res
	}
	gjson.GetBytes(b, "choices.#.message.tool_calls|@flatten").ForEach(func(_, c gjson.Result) bool {
		if v := checkCall(c.Get("function.name").String(), c.Get("function.arguments"), schema); v != "" && res.violation == "" {
			res.violation = v
		}
		return true
	})
	return res
}

func checkCall(name string, args gjson.Result, schema *validate.Schema) string {
	if name != "click" {
		return fmt.Sprintf("a call to undeclared tool %q", name)
	}
	if args.Type != gjson.String {
		return "arguments that are not a string"
	}
	if _, errs := schema.ValidateJSON([]byte(args.Str)); errs != nil {
		return "an invalid call: " + validate.Join(errs)
	}
	return ""
}

// checkStream assembles a stream as a client does and checks it: every data
// event is JSON, it ends in [DONE] or an error event, and every call is valid.
func checkStream(res *result, b []byte, schema *validate.Schema) {
	type acc struct{ name, args string }
	calls := map[string]*acc{}
	var order []string
	done := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if o, ok := strings.CutPrefix(line, ": toolguard outcome="); ok {
			res.outcome, _, _ = strings.Cut(o, " ")
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if !gjson.Valid(data) {
			res.violation = "a stream event that is not JSON"
			return
		}
		if e := gjson.Get(data, "error"); e.Exists() {
			res.errorCode = e.Get("code").String()
			return // an error event ends the stream; calls before it may be partial
		}
		gjson.Get(data, "choices").ForEach(func(_, c gjson.Result) bool {
			c.Get("delta.tool_calls").ForEach(func(_, d gjson.Result) bool {
				k := c.Get("index").String() + "/" + d.Get("index").String()
				if calls[k] == nil {
					calls[k] = &acc{}
					order = append(order, k)
				}
				calls[k].name += d.Get("function.name").String()
				calls[k].args += d.Get("function.arguments").String()
				return true
			})
			return true
		})
	}
	if !done {
		res.violation = "a stream that ended with neither [DONE] nor an error event"
		return
	}
	for _, k := range order {
		args := gjson.Parse(strconv.Quote(calls[k].args))
		if v := checkCall(calls[k].name, args, schema); v != "" {
			res.violation = v
			return
		}
	}
}

// report gathers what the soak saw.
type report struct {
	options
	mu         sync.Mutex
	sent       int
	answered   int
	unanswered int
	cancelled  int
	violations int
	examples   []string
	outcomes   map[string]int
	errors     map[string]int
	kinds      map[string]int
	start, end sample
	samples    []sample
}

func (r *report) add(f func(*report)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *report) record(rq request, res result) {
	if res.err != nil {
		if rq.disconnect && (errors.Is(res.err, context.DeadlineExceeded) || errors.Is(res.err, context.Canceled)) {
			r.cancelled++
			return
		}
		r.unanswered++
		r.errors["no answer: "+res.err.Error()]++
		return
	}
	r.answered++
	if res.outcome != "" {
		r.outcomes[res.outcome]++
	}
	if res.status != 200 || res.errorCode != "" {
		r.errors[fmt.Sprintf("%d %s", res.status, res.errorCode)]++
	}
	if res.violation != "" {
		r.violations++
		if len(r.examples) < 10 {
			r.examples = append(r.examples, rq.name()+": "+res.violation)
		}
	}
}

// sample is toolguard's goroutines and resident memory at one moment.
type sample struct {
	at         time.Duration
	goroutines int
	rssKiB     int
}

func sampleAt(client *http.Client, base string, pid int, at time.Duration) sample {
	s := sample{at: at, goroutines: -1, rssKiB: -1}
	if resp, err := client.Get(base + "/metrics"); err == nil {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				s.goroutines = int(f)
			}
		}
		resp.Body.Close()
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				s.rssKiB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
	}
	return s
}

// verdict fails the run on a broken contract, an unanswered request, or
// growth: goroutines must come back to where they started (within a margin
// for the runtime's own), and memory at the end must not exceed what it was
// a quarter of the way in by more than half (the heap grows to a working size
// first, then must stay there).
func (r *report) verdict() error {
	var errs []error
	if r.violations > 0 {
		errs = append(errs, fmt.Errorf("%d answers broke the contract", r.violations))
	}
	if r.unanswered > 0 {
		errs = append(errs, fmt.Errorf("%d requests got no answer", r.unanswered))
	}
	if r.end.goroutines > r.start.goroutines+20 {
		errs = append(errs, fmt.Errorf("goroutines grew from %d to %d", r.start.goroutines, r.end.goroutines))
	}
	if ref := r.reference(); ref.rssKiB > 0 && r.end.rssKiB > ref.rssKiB*3/2+16<<10 {
		errs = append(errs, fmt.Errorf("memory grew from %d KiB (at %v) to %d KiB", ref.rssKiB, ref.at.Round(time.Second), r.end.rssKiB))
	}
	return errors.Join(errs...)
}

// reference is the sample a quarter of the way in, once warmed up.
func (r *report) reference() sample {
	for _, s := range r.samples {
		if s.at >= r.duration/4 {
			return s
		}
	}
	return r.start
}

func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "## Soak: %v at %.0f requests/s\n\n", r.duration, r.rate)
	fmt.Fprintf(w, "| | |\n| --- | --- |\n")
	fmt.Fprintf(w, "| requests sent | %d |\n| answered | %d |\n| cancelled by the client on purpose | %d |\n| unanswered | %d |\n| contract violations | %d |\n",
		r.sent, r.answered, r.cancelled, r.unanswered, r.violations)
	fmt.Fprintf(w, "| goroutines, start / end | %d / %d |\n| RSS, start / quarter / end | %d / %d / %d KiB |\n\n",
		r.start.goroutines, r.end.goroutines, r.start.rssKiB, r.reference().rssKiB, r.end.rssKiB)
	table := func(title string, m map[string]int) {
		fmt.Fprintf(w, "| %s | count |\n| --- | --- |\n", title)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "| %s | %d |\n", k, m[k])
		}
		fmt.Fprintln(w)
	}
	table("traffic", r.kinds)
	table("outcome", r.outcomes)
	table("status and error code", r.errors)
	fmt.Fprintf(w, "| elapsed | goroutines | RSS KiB |\n| --- | --- | --- |\n")
	for _, s := range append(append([]sample{r.start}, r.samples...), r.end) {
		fmt.Fprintf(w, "| %v | %d | %d |\n", s.at.Round(time.Second), s.goroutines, s.rssKiB)
	}
	for _, e := range r.examples {
		fmt.Fprintf(w, "\nviolation: %s", e)
	}
	fmt.Fprintln(w)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitHealthy(ctx context.Context, client *http.Client, base string) error {
	for i := 0; i < 200; i++ {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("toolguard did not become healthy")
}
