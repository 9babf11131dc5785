package e2e

import "testing"

// messagesClients are the clients proven on the Anthropic Messages API,
// each on the path its documentation leads to.
var messagesClients = []client{
	{name: "anthropic-go", run: runAnthropicGo},
	nodeClient("anthropic-node", "anthropic.mjs"),
	nodeClient("ai-sdk", "ai-sdk-anthropic.mjs"),
}

// TestMessagesClients is TestClients on the Messages API (POST
// /v1/messages): every client in every scenario, streamed and not, first
// straight against the fake Messages upstream (recorded), then through
// toolguard (asserted).
func TestMessagesClients(t *testing.T) {
	runClients(t, &report{markers: "messages tables", clients: messagesClients}, startMessagesUpstream)
}

// TestMessagesFake proves the fake Messages upstream against the real
// clients, without toolguard: given a valid call, each client's tool loop
// runs the tool, sends its result back and gets the model's text, streamed
// and not.
func TestMessagesFake(t *testing.T) { proveFake(t, messagesClients, startMessagesUpstream) }
