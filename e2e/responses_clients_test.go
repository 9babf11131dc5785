package e2e

import (
	"strings"
	"testing"
)

// responsesClients are the clients proven on the Responses API, each on the
// path its documentation leads to.
var responsesClients = []client{
	{name: "openai-go", run: runOpenAIGoResponses},
	nodeClient("openai-node", "openai-responses.mjs"),
	nodeClient("ai-sdk", "ai-sdk-responses.mjs"),
}

// TestResponsesClients is TestClients on the Responses API (POST
// /v1/responses): every client in every scenario, streamed and not, first
// straight against the fake Responses upstream (recorded), then through
// toolguard (asserted).
func TestResponsesClients(t *testing.T) {
	runClients(t, &report{markers: "responses tables", clients: responsesClients}, startResponsesUpstream)
}

// TestResponsesFake proves the fake Responses upstream against the real
// clients, without toolguard: given a valid call, each client's tool loop
// runs the tool, sends its output back as the last input item and gets the
// model's text, streamed and not.
func TestResponsesFake(t *testing.T) { proveFake(t, responsesClients, startResponsesUpstream) }

// proveFake runs each client against the fake that start makes, without
// toolguard, given a valid call: its tool loop must run the tool, send its
// result back and get the model's text, streamed and not.
func proveFake(t *testing.T, clients []client, start func(*testing.T, scenario) *upstream) {
	valid := scenario{name: "valid", first: wantArgs}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					if c.skip != nil {
						if why := c.skip(); why != "" {
							t.Skip(why)
						}
					}
					t.Parallel()
					up := start(t, valid)
					res := c.run(t.Context(), up.baseURL(), valid, m.stream)
					if !res.OK {
						t.Errorf("the client's assertions failed: %s\nobserved: %s\nclient output:\n%s", res.Detail, res.Observed, res.Output)
					}
					if got, want := strings.Join(up.requests(), ","), kindFirst+","+kindToolResult; got != want {
						t.Errorf("the fake saw requests %s, want %s", got, want)
					}
				})
			}
		})
	}
}
