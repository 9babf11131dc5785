// Package repair mends tool-call arguments that a model got wrong in form but
// not in meaning: ladder steps 1 to 3 of toolguard's contract.
//
// Arguments checks a call against its tool's schema, mends its syntax (step
// 2) and then its shape as the validation errors point out (step 3). Syntax
// mends the arguments of calls in a request's history, without a schema.
// ToolName maps a tool name written in another style to the declared tool it
// names.
// TextCalls reads the calls that a model wrote as text in a message's content
// (Hermes, Qwen3-Coder, GLM, Mistral, Llama, DeepSeek, pythonic, fenced JSON,
// ReAct) without knowing any API's JSON; TextCallHold tells a stream what to
// hold back while a call may be starting.
//
// Guarantees:
//   - Never invent, never guess. No value is made up for a missing property;
//     a wrap happens only when exactly one target fits; a type is changed
//     only when nothing is lost ("5.0" may become 5, "5.5" may not
//     become an integer, "007" stays a string, "1e400" is no number). When in
//     doubt the call is left invalid, with its validation errors, for the
//     re-ask step.
//   - A name is mended only when it is the same words as one declared name:
//     another case or separator style (maxPrice, Max-Price for max_price),
//     a namespace (functions.get_user), singular for plural. Another word is
//     never mended however close its spelling (min_price is not max_price,
//     lock_door not unlock_door, element not selector, a typo not the word):
//     the errors then end with a hint naming what the schema declares
//     (KeywordUnknown), and a key that resembles a declared name is not
//     dropped. Calls written as text follow the same rule; one behind an
//     explicit marker keeps a name that is not declared, for the re-ask.
//   - The JSON repairer (github.com/kaptinlin/jsonrepair) runs only on text
//     that is not valid JSON, and only where its result cannot differ from
//     what was sent: text cut off inside a string, a number, a literal or
//     after a key is refused (closing it would guess the rest), and a repair
//     must keep the kind of value the text starts with (prose never becomes
//     a string, an object never an array).
//   - Two or more JSON objects run together where one was due are mended
//     only when they are all equal: the model repeated itself, and one copy
//     says the same. When they differ, choosing one is a guess and merging
//     them an invention, so the call is left for the re-ask. Several
//     different code blocks, or prose holding more JSON after the first
//     object, are refused for the same reason.
//   - A call written as text is taken all or nothing: only when every call in
//     the text names exactly one declared tool (or keeps its name behind an
//     explicit marker) and has arguments that read without guessing; text in <think> blocks, inline code and code blocks,
//     or introduced as an example, is never a call.
//   - Every edit is recorded as an Edit (kind, JSON pointer, before, after).
//   - Arguments that are valid as received are returned as received, byte for
//     byte, with no edit, at the cost of one validation.
//   - A result without errors is a JSON object that validates against the
//     tool's schema, written as compact JSON without HTML escaping (edited
//     objects have their keys sorted); mending it again changes nothing.
//   - Work is bounded: arguments over MaxInput bytes are only checked, the
//     syntax step peels at most a few layers, brackets nest at most 64 deep
//     for the repairer, the repairer (whose work grows with the square of
//     its input, and with the cube of text dense with quotes) is handed at
//     most 8 KiB at a time, each text charged its work and a request's
//     texts at most a Quota's (about 8 KiB squared, at most 4,096 texts;
//     raw control characters in strings, when they are the only fault, are
//     escaped without it),
//     and the schema-guided step runs a bounded number of rounds; text calls are read from at most 1 MiB of text, 64 calls, in
//     about linear time. No input makes a function of this package panic.
package repair
