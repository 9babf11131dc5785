// Package proxy is toolguard's HTTP face: an OpenAI-compatible reverse proxy
// that checks the tool calls of chat completions on their way back to the
// client.
//
// Guarantees:
//   - Requests to /v1/<rest> go to <upstream>/<rest>, with the upstream taken
//     from configuration only; no request can choose another host.
//   - Only POST /v1/chat/completions with function tools declared is
//     inspected. Everything else (other routes, error replies, bodies that
//     are not JSON) passes through unchanged, status, headers and body.
//   - A response that needs no change reaches the client byte for byte.
//   - In every 2xx chat completion that reaches the client, each tool call
//     names a declared tool and its arguments are a JSON object that
//     validates against that tool's schema; otherwise the client gets the
//     configured failure (an OpenAI-shaped 400 by default).
//   - At most TOOLGUARD_MAX_REASKS extra upstream requests per client
//     request; when the client goes away, upstream work stops.
//   - Every read is bounded: request bodies by TOOLGUARD_MAX_BODY_BYTES,
//     inspected responses by TOOLGUARD_MAX_RESPONSE_BYTES.
//   - The usage reported to the client is the sum over all upstream attempts.
//   - Only the last re-ask goes to the fallback model or endpoint, and the
//     upstream's key never goes to the fallback endpoint.
//   - While a circuit breaker is open its upstream gets no request; clients
//     get an OpenAI-shaped 503 with Retry-After at once.
package proxy
