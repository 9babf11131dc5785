package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// result is what one client run did. OK says the client's own assertions
// held; Observed says what its tool code got, or which error it raised, for
// the README's tables; Detail says why the assertions failed; Output is the
// client's own output (stdout and stderr of a Node script).
type result struct {
	OK       bool   `json:"ok"`
	Observed string `json:"observed"`
	Detail   string `json:"detail"`
	Output   string `json:"-"`
}

// A client runs one scenario against an OpenAI base URL, streamed or not.
type client struct {
	name string
	// skip, if not nil, says why this client cannot run on this machine.
	skip func() string
	run  func(ctx context.Context, baseURL string, sc scenario, stream bool) result
}

var clients = []client{
	{name: "openai-go", run: runOpenAIGo},
	nodeClient("openai-node", "openai.mjs"),
	nodeClient("langchain", "langchain.mjs"),
	nodeClient("ai-sdk", "ai-sdk.mjs"),
}

var modes = []struct {
	name   string
	stream bool
}{{"no-stream", false}, {"stream", true}}

// clientTimeout bounds one client run.
const clientTimeout = 90 * time.Second

// TestClients runs every client in every scenario, streamed and not: first
// straight against the fake upstream (the "before" picture, recorded, never
// asserted: the clients misbehave there by design), then through toolguard,
// where the client's own assertions must hold.
func TestClients(t *testing.T) {
	runClients(t, &report{markers: "tables", clients: clients}, startUpstream)
}

// runClients runs rep's clients in every mode and scenario against fakes
// that start makes, and publishes the tables.
func runClients(t *testing.T, rep *report, start func(*testing.T, scenario) *upstream) {
	scs := rep.scenarioList()
	for _, c := range rep.clients {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					for _, sc := range scs {
						t.Run(sc.name, func(t *testing.T) {
							if c.skip != nil {
								if why := c.skip(); why != "" {
									t.Skip(why)
								}
							}
							t.Parallel()
							before, after := runScenario(t, c, sc, m.stream, start)
							rep.add(row{client: c.name, scenario: sc.name, stream: m.stream}, before, after)
						})
					}
				})
			}
		})
	}
	rep.publish(t)
}

// runScenario runs c without toolguard, then with it, and checks the second.
func runScenario(t *testing.T, c client, sc scenario, stream bool, start func(*testing.T, scenario) *upstream) (before, after string) {
	ctx, cancel := context.WithTimeout(t.Context(), clientTimeout)
	defer cancel()

	direct := start(t, sc)
	before = clip(c.run(ctx, direct.baseURL(), sc, stream).Observed, 160)

	up := start(t, sc)
	tg := startToolguard(t, up.baseURL())
	res := c.run(ctx, tg.baseURL, sc, stream)
	if !res.OK {
		t.Errorf("the client's assertions failed: %s\nobserved: %s\nclient output:\n%s", res.Detail, res.Observed, res.Output)
	}
	if got, want := up.modelTurns(), 1+sc.wantReasks; got != want {
		t.Errorf("the model was asked %d times, want %d (upstream requests: %v)", got, want, up.requests())
	}
	after = clip(res.Observed, 110)
	tg.stop()
	switch logged := tg.logs.completions(); {
	case len(logged) > 0:
		after += fmt.Sprintf(" (toolguard: outcome=%s, reasks=%d)", *logged[0].Outcome, logged[0].Reasks)
	case sc.wantStatus == http.StatusBadGateway:
		// A reply toolguard refuses to read has no outcome: it is the
		// upstream's error.
		after += " (toolguard: the upstream's reply refused)"
	default:
		t.Errorf("toolguard logged no outcome")
	}
	return before, after
}

// row identifies one cell pair of the report.
type row struct {
	client, scenario string
	stream           bool
}

// report collects what the clients did, for the README's tables.
type report struct {
	// markers names the README markers the tables go between.
	markers string
	// clients are the clients run, in the tables' order.
	clients []client
	// scenarios are the scenarios they run (nil: scenarios).
	scenarios []scenario

	mu            sync.Mutex
	before, after map[row]string
}

func (r *report) add(k row, before, after string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.before == nil {
		r.before, r.after = map[row]string{}, map[row]string{}
	}
	r.before[k], r.after[k] = before, after
}

// tables renders the "before" and "after" tables in markdown.
func (r *report) tables() string {
	var b strings.Builder
	for _, tab := range []struct {
		title string
		cells map[row]string
	}{
		{"Before: the clients straight against the model", r.before},
		{"After: the same clients through toolguard", r.after},
	} {
		fmt.Fprintf(&b, "### %s\n\n| client | scenario | not streamed | streamed |\n| --- | --- | --- | --- |\n", tab.title)
		for _, c := range r.clients {
			for _, sc := range r.scenarioList() {
				ns, ok1 := tab.cells[row{c.name, sc.name, false}]
				s, ok2 := tab.cells[row{c.name, sc.name, true}]
				if !ok1 && !ok2 {
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.name, sc.name, cell(ns), cell(s))
			}
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cell makes s fit a markdown table cell.
func cell(s string) string {
	if s == "" {
		return "(not run)"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// clip puts s on one line of at most n characters.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-3]) + "..."
	}
	return s
}

// scenarioList is the scenarios the report's clients run.
func (r *report) scenarioList() []scenario {
	if r.scenarios == nil {
		return scenarios
	}
	return r.scenarios
}
