// Package chat is the OpenAI Chat Completions wire format: the only code
// that knows choices, message.tool_calls, the legacy functions and
// function_call, delta, finish_reason and [DONE]. It reads a request's
// declared tools and the calls of a reply into the ladder's Calls and
// Turns, writes back what the ladder made of them, writes the body of a
// re-ask, and handles the events of a streamed reply.
//
// Guarantees:
//   - A reply whose calls need no change is returned as it came, byte for
//     byte; a changed choice is rewritten on its own bytes, the rest kept.
//   - Calls in a shape a client would read differently from toolguard
//     (tool_calls that is not an array, both tool_calls and a
//     function_call, indexes that are not plain integers) are an error,
//     never "no calls".
//   - In a stream, text passes as it comes; tool-call deltas are held per
//     choice and call until the call is complete and checked, and calls
//     valid as received go out as the upstream's own events.
//   - What a stream holds is bounded: maxStreamChoices choices,
//     maxStreamCalls calls per choice, the content and arguments held by
//     TOOLGUARD_MAX_RESPONSE_BYTES, and what is read to decide holds of
//     text by wire.MaxTextHoldWork over all the stream's choices.
package chat
