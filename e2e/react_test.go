package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// reactSteps are what the scripted ReAct model answers, in text, one per
// turn: a search, a calculation, the final answer.
var reactSteps = []string{
	"Thought: I need the population of Paris.\nAction: search\nAction Input: population of Paris",
	"Thought: Paris has 2148000 inhabitants; I need twice that.\nAction: calculator\nAction Input: 2148000 * 2",
	"Thought: I now know the final answer\nFinal Answer: 4296000",
}

// startReActUpstream starts a model that answers in ReAct text: its step is
// the number of observations the conversation holds (tool results, or
// "Observation:" messages).
func startReActUpstream(t *testing.T) *upstream {
	return startScripted(t, scenario{name: "react"}, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if !readScripted(w, r, "/v1/chat/completions", func(body []byte) bool { return json.Unmarshal(body, &req) == nil }) {
			return
		}
		step := 0
		for _, m := range req.Messages {
			if m.Role == "tool" || (m.Role == "user" && strings.Contains(string(m.Content), "Observation:")) {
				step++
			}
		}
		n := u.record(kindFirst)
		m := reply{content: reactSteps[min(step, len(reactSteps)-1)]}
		id := fmt.Sprintf("chatcmpl-react%d", n)
		if req.Stream {
			writeStream(w, id, m, false)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completion(id, m))
	})
}

// TestReActAgent runs a ReAct-style agent against a model that answers in
// ReAct text. Straight to the model, the agent takes the first Action for a
// final answer and stops; through toolguard, with TOOLGUARD_TEXT_CALLS=all,
// the Action lines become real tool calls and the agent completes its loop.
func TestReActAgent(t *testing.T) {
	if why := nodeMissing(); why != "" {
		t.Skip(why)
	}
	agent := nodeClient("react-agent", "react-agent.mjs")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			before := agent.run(t.Context(), startReActUpstream(t).baseURL(), scenario{name: "react"}, m.stream)
			if before.OK {
				t.Errorf("straight to the model the agent completed its loop: %s", before.Observed)
			}
			tg := startToolguard(t, startReActUpstream(t).baseURL(), "TOOLGUARD_TEXT_CALLS=all")
			after := agent.run(t.Context(), tg.baseURL, scenario{name: "react"}, m.stream)
			if !after.OK {
				t.Errorf("through toolguard: %s\nobserved: %s\n%s", after.Detail, after.Observed, after.Output)
			}
			t.Logf("before: %s\nafter:  %s", before.Observed, after.Observed)
		})
	}
}
