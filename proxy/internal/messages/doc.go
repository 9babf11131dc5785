// Package messages is the Anthropic Messages API wire format (POST
// /v1/messages): tools declared with an input_schema, tool_use content
// blocks in a reply, tool_result blocks in a re-ask's user turn, usage in
// input_tokens, output_tokens and the cache counters, stop_reason.
//
// Guarantees:
//   - A reply whose tool_use blocks need no change is returned as it came,
//     byte for byte; otherwise only its content array, stop_reason, model
//     and usage are rewritten.
//   - Each tool_use block's input goes out as a JSON object that validates
//     against its tool's input_schema, or not at all.
//   - Re-asks are stateless: the request's messages, an assistant turn with
//     the model's blocks (thinking and text as sent, each tool_use with an
//     object input) and a user turn with a tool_result for every tool_use
//     (is_error: true and the errors for an invalid one), then the
//     instruction.
//   - Server tools (web search, code execution...) and their blocks pass as
//     they are; a reply that holds tool_use next to a block of a type
//     toolguard does not know is refused, as is a request whose message
//     holds one next to tool_use or tool_result blocks.
//   - In a stream, events pass as they come but for tool_use blocks, each
//     held from its content_block_start to its content_block_stop and
//     checked; blocks are numbered in the order they go out, and the
//     message_delta's stop_reason and usage agree with what was sent.
//     Text, thinking, signatures and redacted thinking pass at once.
//   - A tool_use input the client sends back in its history as a string is
//     sent upstream as the object it holds (MendHistory).
//   - stop_reason stays consistent: tool_use while a call is left, end_turn
//     when every call was dropped.
//   - Calls written as text in a text block that no tool_use block comes
//     before are read, streamed or not (textcalls.go): they become tool_use
//     blocks after the content's last block, the text around them stays,
//     and a text block left empty is never sent.
package messages
