// Package e2e proves toolguard with real clients, unmodified: the Go
// openai-go SDK, the openai npm package, LangChain JS and the Vercel AI SDK.
//
// Its tests build the toolguard binary, start it as a process in front of a
// scripted fake upstream, and run every client against it for every scenario
// of broken tool calls, streamed and not. They guarantee:
//   - the tool code of each client receives exactly {"selector": "myCoolButton"}
//     with the declared types, whether the model sent a bare string, a
//     near-miss key, truncated JSON, or left out a required field that a
//     re-ask brings;
//   - a model that never corrects itself surfaces in each client as that
//     client's own error, carrying toolguard's message, and is not retried;
//   - the assertions are made inside the client code: the Node clients are
//     scripts in node/ that exit non-zero when their assertions fail.
//
// The same runs straight against the fake upstream record what each client
// does on its own with the broken calls (the "before" picture); see README.md
// for both tables and the command that produces them.
//
// TestResponsesClients does the same on the Responses API (POST
// /v1/responses) with openai-go, the openai npm package and the AI SDK's
// openai(model) provider; TestTextCallClients with a model that writes its
// call as text; TestStructuredClients with the clients' structured-output
// helpers and a model that answers broken JSON; TestReActAgent with a ReAct
// agent and a model that answers in ReAct text.
//
// The Node clients need node on PATH and node/node_modules (npm ci in node/);
// without them those tests skip and say why.
package e2e
