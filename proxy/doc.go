// Package proxy is toolguard's HTTP face: an OpenAI-compatible reverse proxy
// that checks the tool calls of chat completions on their way back to the
// client.
//
// Guarantees:
//   - Requests to /v1/<rest> go to <upstream>/<rest>, with the upstream taken
//     from configuration only; no request can choose another host.
//   - Only a POST to /v1/chat/completions (or to another path under /v1
//     ending in /chat/completions, where servers route chat completions
//     too) or to /v1/responses with function tools declared is inspected. Everything else (other routes, error replies) passes
//     through unchanged, status, headers and body, but for what an
//     upstream must not say to a client: its X-Toolguard-* headers, the
//     configured keys, redirects to itself.
//   - Fail closed: toolguard reads requests and replies exactly as the
//     other side would, or refuses them. Under /v1, paths an upstream could
//     route differently, methods the API does not use, method overrides
//     and upgrades are refused; a chat
//     request that is not strictly one JSON object, or that servers read
//     differently (duplicate names, names in another letter case), is a 400
//     and never goes upstream; a reply or stream chunk that clients read
//     differently is a 502 or an error event, never passed on.
//   - A response that needs no change reaches the client byte for byte; in
//     a stream, calls valid as received go out as the upstream's events.
//   - In every 2xx chat completion or response that reaches the client,
//     each tool call names a declared tool and its arguments are a JSON
//     object that validates against that tool's schema, or the outcome says
//     unchecked
//     (its schema could not be checked); otherwise the client gets the
//     configured failure (an OpenAI-shaped 400 by default).
//   - The work per request is bounded, not only the bytes: validation by a
//     step budget, re-ask feedback and failure bodies by size, and every
//     rewrite of a body is one pass over it.
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
