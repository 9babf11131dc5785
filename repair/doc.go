// Package repair mends tool-call arguments that a model got wrong in form but
// not in meaning: ladder steps 1 to 3 of toolguard's contract.
//
// Guarantees:
//   - Never invent, never guess. No value is made up for a missing property;
//     a rename or a wrap happens only when exactly one target fits; a type is
//     changed only when nothing is lost ("5.0" may become 5, "5.5" may not
//     become an integer). When in doubt the call is left invalid, with its
//     validation errors, for the re-ask step.
//   - Every edit is recorded as an Edit (kind, JSON pointer, before, after).
//   - Arguments that are valid as received are returned as received, with no
//     edit, at the cost of one validation.
//   - A result without errors is a JSON object that validates against the
//     tool's schema; mending it again changes nothing.
//   - Work is bounded by the size of the input: no step loops on its own
//     output.
package repair
