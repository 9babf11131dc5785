// Package ladder is toolguard's inspect/repair/re-ask loop, on a
// representation of declared tools, calls and turns that no wire format
// shapes: it knows neither HTTP nor any JSON path of a request or a reply.
// A wire format (package chat, package responses) reads its bodies into
// Calls and Turns, and writes back what the ladder made of them.
//
// Guarantees:
//   - Check never invents: a call is valid when its arguments validate
//     against its tool's schema as sent or after repair mended their form
//     (package repair); every edit is recorded on the call.
//   - Settle asks again at most as many times as the rules of the invalid
//     calls allow (policy.ReaskBudget), and stops at once when its context
//     ends; a re-ask that fails stops the asking, and says why in GaveUp.
//   - The calls of a re-ask replace the invalid calls of their turn; the
//     valid calls are kept, and a valid call the model sends again is not
//     doubled.
//   - The validation work of all the calls of a request is bounded by one
//     budget (Exchange.Work). A call whose own check is over the per-call
//     bound passes as unchecked if its arguments are a JSON object, and the
//     outcome says so; a call the request's spent budget cannot cover is
//     invalid (Exchange.Spent), and no re-ask is made.
//   - MendHistory skips only a conversation prefix that a HistoryCache
//     remembers as needing nothing, for the same scope (format and client
//     credentials), byte for byte; the cache holds verdicts, never content,
//     and at most HistoryCacheEntries of them.
package ladder
