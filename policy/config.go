package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v10"
)

// Mode says which steps of the ladder run.
type Mode string

// The modes.
const (
	ModeRepair   Mode = "repair"   // validate, repair, re-ask, give up
	ModeReask    Mode = "reask"    // validate, re-ask, give up
	ModeValidate Mode = "validate" // validate, give up
	ModeOff      Mode = "off"      // plain proxy
)

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeRepair, ModeReask, ModeValidate, ModeOff:
		return true
	}
	return false
}

// Repairs reports whether the mode mends calls locally.
func (m Mode) Repairs() bool { return m == ModeRepair }

// Reasks reports whether the mode may ask the model again.
func (m Mode) Reasks() bool { return m == ModeRepair || m == ModeReask }

// OnFailure says what happens to a response whose calls cannot be made valid.
type OnFailure string

// The failure behaviours.
const (
	FailError       OnFailure = "error"       // HTTP 400 with the calls' errors
	FailPassthrough OnFailure = "passthrough" // the upstream's response as it was
	FailDrop        OnFailure = "drop"        // remove the invalid calls, keep the rest
)

// Valid reports whether f is one of the behaviours.
func (f OnFailure) Valid() bool {
	switch f {
	case FailError, FailPassthrough, FailDrop:
		return true
	}
	return false
}

// MaxReasksLimit bounds TOOLGUARD_MAX_REASKS: each re-ask is a paid model
// call, and a loop of more than this many is a misconfiguration.
const MaxReasksLimit = 10

// Config is toolguard's whole configuration. Each field's env tag names its
// variable; config.example.env lists them all with their defaults.
type Config struct {
	ListenAddr string `env:"TOOLGUARD_LISTEN_ADDR" envDefault:":8080"`
	// MetricsAddr, when set, serves GET /metrics on an address of its own,
	// and not on ListenAddr.
	MetricsAddr    string `env:"TOOLGUARD_METRICS_ADDR"`
	UpstreamURL    string `env:"TOOLGUARD_UPSTREAM_URL" envDefault:"https://api.openai.com/v1"`
	UpstreamAPIKey string `env:"TOOLGUARD_UPSTREAM_API_KEY"`
	// APIKeys, when not empty, are the Bearer tokens clients must present
	// on /v1; the client's Authorization then never goes upstream.
	APIKeys []string `env:"TOOLGUARD_API_KEYS"`

	Mode      Mode      `env:"TOOLGUARD_MODE" envDefault:"repair"`
	MaxReasks int       `env:"TOOLGUARD_MAX_REASKS" envDefault:"2"`
	OnFailure OnFailure `env:"TOOLGUARD_ON_FAILURE" envDefault:"error"`
	// ResponseFormat is the mode for a reply's content when the request
	// declares a JSON response_format (structured outputs).
	ResponseFormat Mode `env:"TOOLGUARD_RESPONSE_FORMAT" envDefault:"repair"`
	// TextCalls says which calls written as text become real calls.
	TextCalls TextCalls `env:"TOOLGUARD_TEXT_CALLS" envDefault:"marked"`

	ToolPolicies               ToolPolicies `env:"TOOLGUARD_TOOL_POLICIES"`
	SchemaRepair               bool         `env:"TOOLGUARD_SCHEMA_REPAIR" envDefault:"true"`
	ForceToolChoiceOnLastReask bool         `env:"TOOLGUARD_FORCE_TOOL_CHOICE_ON_LAST_REASK" envDefault:"false"`
	AllowClientOff             bool         `env:"TOOLGUARD_ALLOW_CLIENT_OFF" envDefault:"false"`

	MaxConcurrentUpstream int `env:"TOOLGUARD_MAX_CONCURRENT_UPSTREAM" envDefault:"1024"`

	// FallbackModel, FallbackUpstreamURL and FallbackUpstreamAPIKey make the
	// last re-ask go to a stronger model, on another endpoint if a URL is
	// set. Each of the model and the URL may be set alone.
	FallbackModel          string `env:"TOOLGUARD_FALLBACK_MODEL"`
	FallbackUpstreamURL    string `env:"TOOLGUARD_FALLBACK_UPSTREAM_URL"`
	FallbackUpstreamAPIKey string `env:"TOOLGUARD_FALLBACK_UPSTREAM_API_KEY"`

	// BreakerFailures consecutive upstream failures open the circuit breaker
	// for BreakerCooldown; 0 disables it.
	BreakerFailures int           `env:"TOOLGUARD_BREAKER_FAILURES" envDefault:"5"`
	BreakerCooldown time.Duration `env:"TOOLGUARD_BREAKER_COOLDOWN" envDefault:"30s"`

	UpstreamConnectTimeout time.Duration `env:"TOOLGUARD_UPSTREAM_CONNECT_TIMEOUT" envDefault:"10s"`
	UpstreamHeaderTimeout  time.Duration `env:"TOOLGUARD_UPSTREAM_HEADER_TIMEOUT" envDefault:"5m"`
	UpstreamTimeout        time.Duration `env:"TOOLGUARD_UPSTREAM_TIMEOUT" envDefault:"10m"`

	MaxBodyBytes     int64 `env:"TOOLGUARD_MAX_BODY_BYTES" envDefault:"33554432"`
	MaxResponseBytes int64 `env:"TOOLGUARD_MAX_RESPONSE_BYTES" envDefault:"33554432"`

	ReadTimeout     time.Duration `env:"TOOLGUARD_READ_TIMEOUT" envDefault:"60s"`
	WriteTimeout    time.Duration `env:"TOOLGUARD_WRITE_TIMEOUT" envDefault:"30m"`
	IdleTimeout     time.Duration `env:"TOOLGUARD_IDLE_TIMEOUT" envDefault:"2m"`
	ShutdownTimeout time.Duration `env:"TOOLGUARD_SHUTDOWN_TIMEOUT" envDefault:"30s"`
	// DrainDelay is how long toolguard keeps serving, /readyz answering
	// 503, between SIGTERM and closing its listener: long enough for load
	// balancers and kube-proxy to see it is not ready.
	DrainDelay time.Duration `env:"TOOLGUARD_DRAIN_DELAY" envDefault:"5s"`

	SchemaCacheSize int `env:"TOOLGUARD_SCHEMA_CACHE_SIZE" envDefault:"1024"`
	// SchemaCacheBytes bounds the memory of the compiled schemas cached,
	// each estimated from its subschemas, values and bytes.
	SchemaCacheBytes int64 `env:"TOOLGUARD_SCHEMA_CACHE_BYTES" envDefault:"268435456"`

	LogFormat string `env:"TOOLGUARD_LOG_FORMAT" envDefault:"json"`
	LogLevel  string `env:"TOOLGUARD_LOG_LEVEL" envDefault:"info"`
	// LogArguments false keeps every argument value out of the logs: the raw
	// arguments of invalid calls and the values quoted in their errors.
	LogArguments bool `env:"TOOLGUARD_LOG_ARGUMENTS" envDefault:"true"`
	// LogFlushInterval: the log is written by a background writer, and
	// every line before a clean exit. A duration (50ms by default) writes
	// lines at this interval and when 64 KiB are buffered: one write system
	// call per batch, the last interval's lines lost if the process is
	// killed. Zero writes lines as soon as that writer runs, which under
	// load is nearly a system call per line again.
	LogFlushInterval time.Duration `env:"TOOLGUARD_LOG_FLUSH_INTERVAL" envDefault:"50ms"`

	// GCReserveBytes is memory toolguard holds for its life and never
	// touches: the garbage collector counts it as live, so it lets the heap
	// grow that much further between collections, but it takes no page of
	// memory (the kernel backs none until written) and costs no marking (it
	// holds no pointers). Under load the collector then runs less often: a
	// fixed amount of memory for CPU, unlike GOGC's share of the live heap.
	// 0 holds none.
	GCReserveBytes int64 `env:"TOOLGUARD_GC_RESERVE_BYTES" envDefault:"4194304"`
}

// MaxGCReserveBytes bounds TOOLGUARD_GC_RESERVE_BYTES: where memory is
// committed when it is reserved (a kernel that does not overcommit), the
// reserve is memory taken.
const MaxGCReserveBytes = 1 << 30

// MaxLimitBytes bounds TOOLGUARD_MAX_BODY_BYTES and
// TOOLGUARD_MAX_RESPONSE_BYTES: bodies and replies are read whole into
// memory, and the sums and budgets made from them must not overflow.
const MaxLimitBytes = 1 << 40

// MaxConcurrentUpstreamLimit bounds TOOLGUARD_MAX_CONCURRENT_UPSTREAM.
const MaxConcurrentUpstreamLimit = 100_000

// Load reads the configuration from environ ("KEY=value" entries, as
// os.Environ returns them) and validates it, reporting every problem at once.
func Load(environ []string) (Config, error) {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var c Config
	var errs []error
	unparsed := map[string]bool{}
	if err := env.ParseWithOptions(&c, env.Options{Environment: vars}); err != nil {
		var agg env.AggregateError
		if !errors.As(err, &agg) {
			agg.Errors = []error{err}
		}
		for _, e := range agg.Errors {
			key, err := parseError(e, vars)
			unparsed[key] = true
			errs = append(errs, err)
		}
	}
	// Keys are often written "a, b" or with a trailing comma in manifests.
	keys := c.APIKeys[:0]
	for _, k := range c.APIKeys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	c.APIKeys = keys
	if len(keys) == 0 {
		c.APIKeys = nil
		if v, set := vars["TOOLGUARD_API_KEYS"]; set && strings.TrimSpace(v) != "" {
			// Only separators: meant to turn authentication on, it would
			// leave it off without a word.
			errs = append(errs, problem{"TOOLGUARD_API_KEYS", "holds only separators, no key: set keys, or leave it empty to run without client authentication"})
		}
	}
	for _, e := range c.problems() {
		if !unparsed[e.key] {
			errs = append(errs, e)
		}
	}
	return c, errors.Join(errs...)
}

// Unknown returns, for each TOOLGUARD_ variable of environ that toolguard
// does not know (a misspelling, most often), a warning naming the closest
// known variable.
func Unknown(environ []string) []string {
	known := map[string]bool{}
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if k := f.Tag.Get("env"); k != "" {
			known[k] = true
			names = append(names, k)
		}
	}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToUpper(k), "TOOLGUARD_") || known[k] {
			continue
		}
		msg := k + " is not a toolguard variable and is ignored"
		if best := closest(strings.ToUpper(k), names); best != "" {
			msg += "; did you mean " + best + "?"
		}
		out = append(out, msg)
	}
	return out
}

// closest returns the known name that name most likely misspells, or "" if
// none is close. Closeness is the edit distance, plus a penalty for each
// word of name (between underscores) that the known name lacks: a word left
// out (TOOLGUARD_UPSTREAM_KEY) is a likelier slip than a word replaced
// (TOOLGUARD_UPSTREAM_URL is fewer edits away).
func closest(name string, names []string) string {
	const missingWord = 6
	words := strings.Split(name, "_")
	best, bestScore, bestD, bestMissing := "", -1, 0, 0
	for _, n := range names {
		d := distance(name, n)
		have := strings.Split(n, "_")
		missing := 0
		for _, w := range words {
			if !slices.Contains(have, w) {
				missing++
			}
		}
		score := d + missingWord*missing
		// On a tie, the name that has every word wins.
		if bestScore < 0 || score < bestScore || (score == bestScore && missing < bestMissing) {
			best, bestScore, bestD, bestMissing = n, score, d, missing
		}
	}
	if bestScore < 0 || (bestD > max(3, len(name)/4) && bestMissing > 0) {
		// Far away, and not a near-miss by leaving words out.
		return ""
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseError names the variable of a value that did not parse, and says what
// it should look like.
func parseError(err error, vars map[string]string) (string, error) {
	var pe env.ParseError
	if !errors.As(err, &pe) {
		return "", err
	}
	f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name)
	if key := f.Tag.Get("env"); ok && key != "" {
		want := "a " + pe.Type.String()
		switch pe.Type {
		case reflect.TypeFor[time.Duration]():
			want = "a duration such as 30s or 5m"
		case reflect.TypeFor[int](), reflect.TypeFor[int64]():
			want = "a whole number"
		case reflect.TypeFor[bool]():
			want = "true or false"
		case reflect.TypeFor[ToolPolicies]():
			// The parser's own message says which entry is wrong and why.
			return key, fmt.Errorf("%s: %w", key, pe.Err)
		}
		return key, fmt.Errorf("%s: %q is not %s", key, vars[key], want)
	}
	return "", err
}

// Default returns the configuration with every variable unset.
func Default() Config {
	c, err := Load(nil)
	if err != nil {
		panic("policy: defaults do not validate: " + err.Error())
	}
	return c
}

// Validate checks every field and reports all problems at once.
func (c Config) Validate() error {
	var errs []error
	for _, e := range c.problems() {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// problem is one bad setting.
type problem struct {
	key, msg string
}

func (p problem) Error() string { return p.key + ": " + p.msg }

func (c Config) problems() []problem {
	var errs []problem
	bad := func(name, format string, a ...any) {
		errs = append(errs, problem{name, fmt.Sprintf(format, a...)})
	}
	if c.ListenAddr == "" {
		bad("TOOLGUARD_LISTEN_ADDR", "must not be empty (host:port, for example :8080)")
	}
	if !baseURL(c.UpstreamURL) {
		bad("TOOLGUARD_UPSTREAM_URL", "%q is not an absolute http(s) URL without query or fragment (for example https://api.openai.com/v1)", c.UpstreamURL)
	}
	if !c.Mode.Valid() {
		bad("TOOLGUARD_MODE", "%q is not one of repair, reask, validate, off", c.Mode)
	}
	if !c.ResponseFormat.Valid() {
		bad("TOOLGUARD_RESPONSE_FORMAT", "%q is not one of repair, reask, validate, off", c.ResponseFormat)
	}
	if !c.TextCalls.Valid() {
		bad("TOOLGUARD_TEXT_CALLS", "%q is not one of off, marked, json, all", c.TextCalls)
	}
	if c.MaxReasks < 0 || c.MaxReasks > MaxReasksLimit {
		bad("TOOLGUARD_MAX_REASKS", "%d is out of range: 0 to %d", c.MaxReasks, MaxReasksLimit)
	}
	if !c.OnFailure.Valid() {
		bad("TOOLGUARD_ON_FAILURE", "%q is not one of error, passthrough, drop", c.OnFailure)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TOOLGUARD_UPSTREAM_CONNECT_TIMEOUT", c.UpstreamConnectTimeout},
		{"TOOLGUARD_UPSTREAM_HEADER_TIMEOUT", c.UpstreamHeaderTimeout},
		{"TOOLGUARD_UPSTREAM_TIMEOUT", c.UpstreamTimeout},
		{"TOOLGUARD_READ_TIMEOUT", c.ReadTimeout},
		{"TOOLGUARD_WRITE_TIMEOUT", c.WriteTimeout},
		{"TOOLGUARD_IDLE_TIMEOUT", c.IdleTimeout},
		{"TOOLGUARD_SHUTDOWN_TIMEOUT", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			bad(d.name, "%v must be a positive duration (for example 30s, 5m)", d.v)
		}
	}
	if c.DrainDelay < 0 {
		bad("TOOLGUARD_DRAIN_DELAY", "%v must not be negative (0 closes the listener at once)", c.DrainDelay)
	}
	if c.UpstreamTimeout > 0 && c.WriteTimeout > 0 && c.WriteTimeout < c.UpstreamTimeout {
		bad("TOOLGUARD_WRITE_TIMEOUT", "%v is shorter than TOOLGUARD_UPSTREAM_TIMEOUT (%v): responses would be cut off", c.WriteTimeout, c.UpstreamTimeout)
	}
	if c.MaxBodyBytes <= 0 || c.MaxBodyBytes > MaxLimitBytes {
		bad("TOOLGUARD_MAX_BODY_BYTES", "%d must be a positive number of bytes, at most %d (1 TiB): bodies are read whole into memory", c.MaxBodyBytes, int64(MaxLimitBytes))
	}
	if c.MaxResponseBytes <= 0 || c.MaxResponseBytes > MaxLimitBytes {
		bad("TOOLGUARD_MAX_RESPONSE_BYTES", "%d must be a positive number of bytes, at most %d (1 TiB): replies are read whole into memory", c.MaxResponseBytes, int64(MaxLimitBytes))
	}
	for i, k := range c.APIKeys {
		if k == "" || strings.ContainsAny(k, " \t\r\n") {
			// The value itself is a secret: never echo it.
			bad("TOOLGUARD_API_KEYS", "key %d is empty or holds white space", i+1)
		}
	}
	errs = append(errs, c.resilienceProblems()...)
	for _, p := range c.ToolPolicies.problems() {
		bad("TOOLGUARD_TOOL_POLICIES", "%s", p)
	}
	if c.MaxConcurrentUpstream <= 0 || c.MaxConcurrentUpstream > MaxConcurrentUpstreamLimit {
		bad("TOOLGUARD_MAX_CONCURRENT_UPSTREAM", "%d is out of range: 1 to %d", c.MaxConcurrentUpstream, MaxConcurrentUpstreamLimit)
	}
	if c.SchemaCacheSize <= 0 || c.SchemaCacheSize > 1_000_000 {
		bad("TOOLGUARD_SCHEMA_CACHE_SIZE", "%d is out of range: 1 to 1000000", c.SchemaCacheSize)
	}
	if c.SchemaCacheBytes < 16<<20 {
		bad("TOOLGUARD_SCHEMA_CACHE_BYTES", "%d is too small: at least 16777216 (16 MiB), twice the estimate for one schema of the largest size", c.SchemaCacheBytes)
	}
	if c.GCReserveBytes < 0 || c.GCReserveBytes > MaxGCReserveBytes {
		bad("TOOLGUARD_GC_RESERVE_BYTES", "%d is out of range: 0 (none) to %d (1 GiB)", c.GCReserveBytes, int64(MaxGCReserveBytes))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		bad("TOOLGUARD_LOG_FORMAT", "%q is not one of json, text", c.LogFormat)
	}
	if _, err := c.SlogLevel(); err != nil {
		bad("TOOLGUARD_LOG_LEVEL", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
	return errs
}

// SlogLevel returns the configured log level.
func (c Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(c.LogLevel))
	return l, err
}
