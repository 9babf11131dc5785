// Package responses is the OpenAI Responses API wire format (POST
// /v1/responses): flat function tools and namespaces in the request,
// function_call items in a reply's output, function_call_output items in a
// re-ask's input, and the named events of a stream (response.created,
// response.output_item.added and .done, response.function_call_arguments.delta
// and .done, response.completed), with their sequence_number and
// output_index.
//
// Guarantees:
//   - A reply whose calls need no change is returned as it came, byte for
//     byte; otherwise only its output array (and usage, and the model that
//     answered last) is rewritten.
//   - Re-asks are stateless: the request's input, the model's calls
//     (without their ids) and a function_call_output for each, saying
//     what was wrong with it or that it was kept. A request that relies on
//     stored state (previous_response_id, conversation) is never re-asked
//     (Stateful).
//   - In a stream, events pass as they come but for function_call items,
//     which are held from their output_item.added until they are complete
//     and checked; what the client sees has strictly increasing
//     sequence_number values and output_index values given in the order
//     items are emitted, and its response.completed holds exactly the items
//     it was sent, with the usage summed over every attempt.
//   - Items of other types (messages, reasoning, built-in and custom tool
//     calls) pass as they are.
package responses
