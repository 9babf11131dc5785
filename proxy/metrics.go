package proxy

import (
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validate"
)

// Label values that stand for many.
const (
	toolUndeclared = "(undeclared)" // a call naming no declared tool
	toolOther      = "(other)"      // a tool past maxToolLabels
	kindOther      = "(other)"      // an edit kind this build does not know
)

// maxToolLabels bounds the tool label: the first tool names seen get their
// own series, later ones share toolOther. Tool names come from clients, and
// a client must not be able to grow the series without bound. maxModelLabels
// bounds the model label alike.
const (
	maxToolLabels  = 200
	maxModelLabels = 50
	modelNone      = "(none)" // a request that names no model
)

// maxLabelBytes bounds the length of a label value taken from a client: the
// count of values alone was no bound on /metrics, which anyone may read (20
// requests naming 1 MB models made it 60 MB). Model identifiers in use are
// well inside it (a Bedrock inference profile ARN is about 110 bytes), and
// function names are at most 64.
const maxLabelBytes = 128

// labelFit reports whether name may be a label value as it is: short, and
// spelled only with the characters model and tool names use. Anything else
// (quotes, spaces, control characters, other scripts) is shown as toolOther
// rather than escaped, so what a scraper reads is plain.
func labelFit(name string) bool {
	if name == "" || len(name) > maxLabelBytes {
		return false
	}
	for i := range len(name) {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '/', c == '@', c == '+':
		default:
			return false
		}
	}
	return true
}

// metrics are toolguard's Prometheus collectors, registered on a registry of
// the Handler's own so that tests (and embedders) can build many handlers.
type metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec // route, code
	completions *prometheus.CounterVec // outcome, model
	inspected   *prometheus.CounterVec // format, outcome, model
	upErrors    *prometheus.CounterVec // kind
	toolCalls   *prometheus.CounterVec // tool, outcome, model
	repairs     *prometheus.CounterVec // kind
	tokens      *prometheus.CounterVec // type, attempt
	reasks      prometheus.Counter
	upstream    prometheus.Histogram
	overhead    prometheus.Histogram
	firstByte   prometheus.Histogram
	inFlight    prometheus.Gauge

	tools  labelSet
	models labelSet
	kinds  map[repair.Kind]bool

	// The counters of label sets already seen, so that counting a request
	// neither formats its status code nor hashes its labels under the
	// vector's lock. Their keys are as bounded as the labels: routes are a
	// fixed set, status codes three digits, tools at most maxToolLabels.
	byOutcome counterCache[outcomeModel]
	byRoute   counterCache[routeCode]
	byTool    counterCache[toolOutcome]
	byKind    counterCache[string]
	byTokens  counterCache[int] // ex.tokens' index
}

// counterCache holds the counters of the label sets seen so far. A series
// appears when first counted, as it does with WithLabelValues.
type counterCache[K comparable] struct {
	mu sync.RWMutex
	m  map[K]prometheus.Counter
}

// get returns k's counter, resolving it with resolve the first time.
func (c *counterCache[K]) get(k K, resolve func() prometheus.Counter) prometheus.Counter {
	c.mu.RLock()
	ctr, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return ctr
	}
	ctr = resolve()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]prometheus.Counter{}
	}
	c.m[k] = ctr
	c.mu.Unlock()
	return ctr
}

type routeCode struct {
	route string
	code  int
}

type toolOutcome struct {
	tool    string
	outcome ladder.Outcome
	model   string
}

type outcomeModel struct {
	format  string
	outcome ladder.Outcome
	model   string
}

func newMetrics(schemas *validate.Cache) *metrics {
	// Upstream latency spans a cached completion (tens of ms) to a long
	// reasoning model answer (minutes); toolguard's own time, parsing,
	// validating and repairing, spans tens of microseconds to a second.
	latencyBuckets := []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640}
	overheadBuckets := []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	m := &metrics{
		reg:    prometheus.NewRegistry(),
		tools:  labelSet{max: maxToolLabels, seen: map[string]string{}},
		models: labelSet{max: maxModelLabels, seen: map[string]string{}},
		kinds:  map[repair.Kind]bool{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_requests_total",
			Help: "Requests served, by route and HTTP status code.",
		}, []string{"route", "code"}),
		completions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_chat_completions_total",
			Help: "Inspected chat completions, by outcome (none, valid, repaired, reasked, failed, unchecked) and the model the request named.",
		}, []string{"outcome", "model"}),
		inspected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_inspected_total",
			Help: "Inspected requests, by wire format (chat.completions, responses), outcome (none, valid, repaired, reasked, failed, unchecked) and the model the request named.",
		}, []string{"format", "outcome", "model"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_tool_calls_total",
			Help: "Tool calls the model sent, by tool and outcome: valid as received, repaired locally, reasked (sent back to the model with its errors), failed (still invalid when toolguard gave up), unchecked (passed as a JSON object because its schema could not be checked); with the model the request named.",
		}, []string{"tool", "outcome", "model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_tokens_total",
			Help: "Tokens the upstream reported for inspected chat completions, by type (prompt, completion) and attempt (first, reask): the re-asks are what toolguard added to the bill.",
		}, []string{"type", "attempt"}),
		firstByte: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolguard_stream_first_byte_seconds",
			Help:    "Time from a streamed request's arrival to the first byte of its stream sent to the client (time to first token, as the client sees it).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40},
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolguard_requests_in_flight",
			Help: "Requests being served.",
		}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_repairs_total",
			Help: "Edits made by the repair steps to calls that reached the client, by kind.",
		}, []string{"kind"}),
		upErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolguard_upstream_errors_total",
			Help: "Upstream requests that failed before a response, by kind: dns, connection_refused, tls, timeout, circuit_open, other.",
		}, []string{"kind"}),
		reasks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolguard_reasks_total",
			Help: "Re-asks sent to the upstream.",
		}),
		upstream: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolguard_upstream_request_duration_seconds",
			Help:    "Time from sending an upstream request (the first or a re-ask) to the end of its response body.",
			Buckets: latencyBuckets,
		}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolguard_overhead_seconds",
			Help:    "Time toolguard spent on an inspected chat completion other than waiting for the upstream.",
			Buckets: overheadBuckets,
		}),
	}
	for _, k := range repair.Kinds() {
		m.kinds[k] = true
	}
	stat := func(f func(validate.Stats) float64) func() float64 {
		return func() float64 { return f(schemas.Stats()) }
	}
	m.reg.MustRegister(
		m.requests, m.completions, m.inspected, m.toolCalls, m.repairs, m.reasks, m.upstream, m.overhead, m.upErrors,
		m.tokens, m.firstByte, m.inFlight,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolguard_schema_cache_hits_total",
			Help: "Tool schemas found compiled in the cache.",
		}, stat(func(s validate.Stats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolguard_schema_cache_misses_total",
			Help: "Tool schemas not in the cache, compiled on demand.",
		}, stat(func(s validate.Stats) float64 { return float64(s.Misses) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolguard_schema_cache_schemas",
			Help: "Compiled tool schemas held in the cache.",
		}, stat(func(s validate.Stats) float64 { return float64(s.Size) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolguard_schema_compile_errors_total",
			Help: "Tool schemas that failed to compile (their calls pass unvalidated).",
		}, stat(func(s validate.Stats) float64 { return float64(s.CompileErrors) })),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// request counts one request served.
func (m *metrics) request(route string, code int) {
	m.byRoute.get(routeCode{route, code}, func() prometheus.Counter {
		return m.requests.WithLabelValues(route, strconv.Itoa(code))
	}).Inc()
}

// exchange records what became of an inspected request's calls.
// A call is "reasked" when a re-ask followed it, "failed" when it was still
// invalid after the last one.
func (m *metrics) exchange(ex *exchange) {
	model := modelNone
	if ex.model != "" {
		model = m.models.label(ex.model)
	}
	if ex.x.Outcome != "" {
		k := outcomeModel{ex.f.name, ex.x.Outcome, model}
		m.byOutcome.get(k, func() prometheus.Counter {
			return m.inspected.WithLabelValues(k.format, string(k.outcome), k.model)
		}).Inc()
		if ex.f.name == chatFormat.name {
			k.format = ""
			m.byOutcome.get(k, func() prometheus.Counter {
				return m.completions.WithLabelValues(string(k.outcome), k.model)
			}).Inc()
		}
	}
	m.reasks.Add(float64(ex.x.Reasks))
	for i, t := range ex.tokens {
		if t > 0 {
			m.byTokens.get(i, func() prometheus.Counter {
				return m.tokens.WithLabelValues([]string{"prompt", "completion"}[i%2], []string{"first", "reask"}[i/2])
			}).Add(float64(t))
		}
	}
	for _, c := range ex.x.Calls {
		tool := toolUndeclared
		if c.Tool != nil {
			// Only declared names reach here, and at most maxToolLabels of them.
			tool = m.tools.label(c.Tool.Name)
		}
		var o ladder.Outcome
		switch {
		case !c.Valid() && c.Attempt < ex.x.Reasks:
			o = ladder.OutcomeReasked
		case !c.Valid():
			o = ladder.OutcomeFailed
		case c.Unchecked:
			o = ladder.OutcomeUnchecked
		case len(c.Edits) > 0:
			o = ladder.OutcomeRepaired
		default:
			o = ladder.OutcomeValid
		}
		m.byTool.get(toolOutcome{tool, o, model}, func() prometheus.Counter {
			return m.toolCalls.WithLabelValues(tool, string(o), model)
		}).Inc()
		if !c.Valid() {
			continue
		}
		for _, e := range c.Edits {
			kind := string(e.Kind)
			if !m.kinds[e.Kind] {
				kind = kindOther
			}
			m.byKind.get(kind, func() prometheus.Counter {
				return m.repairs.WithLabelValues(kind)
			}).Inc()
		}
	}
}

// labelSet hands out label values from client-supplied names, at most max
// distinct ones per process, each fit to be a label (labelFit); the rest
// share one value. What it keeps is bounded too: max names of at most
// maxLabelBytes.
//
// A name given to label is often a slice of the request's body: the set
// keeps, and label returns, a copy of its own, so that the series and the
// caches of counters hold no body past its request (a tool name alone
// would otherwise keep a request of up to TOOLGUARD_MAX_BODY_BYTES alive
// for as long as the process).
type labelSet struct {
	mu   sync.Mutex
	max  int
	seen map[string]string // each name seen, to its own copy
}

func (s *labelSet) label(name string) string {
	if !labelFit(name) {
		return toolOther
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if own, ok := s.seen[name]; ok {
		return own
	}
	if len(s.seen) >= s.max {
		return toolOther
	}
	own := strings.Clone(name)
	s.seen[own] = own
	return own
}
