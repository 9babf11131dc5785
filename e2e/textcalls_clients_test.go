package e2e

import "testing"

// TestTextCallClients runs the click clients against a model that writes
// its call as text in the content (Hermes and Mistral formats): straight to
// the model they see a text answer and never call the tool; through
// toolguard, the call reaches the tool as a real call.
func TestTextCallClients(t *testing.T) {
	runClients(t, &report{markers: "text-call tables", clients: clients, scenarios: textScenarios}, startUpstream)
}

// TestMessagesTextCallClients is TestTextCallClients on the Messages API:
// the Anthropic clients against a model served on /v1/messages that writes
// its call as text in a text block.
func TestMessagesTextCallClients(t *testing.T) {
	runClients(t, &report{markers: "messages text-call tables", clients: messagesClients, scenarios: textScenarios}, startMessagesUpstream)
}
