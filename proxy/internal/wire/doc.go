// Package wire holds the byte-level pieces that every wire format
// toolguard inspects shares: the strict JSON reader, the SSE splitter and
// the stream engine that drives a format's handling of events, splices and
// patches of JSON bodies, usage sums, and the OpenAI error shape. It knows
// no format's fields (each format passes the paths and shapes it reads) and
// imports nothing of toolguard.
//
// Guarantees:
//   - Bytes not touched are kept: a splice or a patch rewrites only what it
//     names, and ApplySplices builds its result in one pass.
//   - Every failure is returned: a patch that cannot be made is an error,
//     never the input unchanged.
//   - Strict refuses what common parsers read differently (duplicate
//     names, names differing in letter case, invalid UTF-8, NaN, trailing
//     data, a byte order mark) in one pass, without allocating per value.
//     Items of a conversation that a caller vouches were read strictly
//     before, byte for byte (StrictMembersKnown), are not read again; a body
//     not read strictly so is read again in full, for its error. A stream's
//     event that is the last one read in full with only strings and numbers
//     changed, each valid on its own, is not tokenised again
//     (EventReader); nor is a reply that is so the last one of the same
//     client read in full (Templates, kept apart by the client's
//     credentials, bounded); any other is read in full. An EventReader
//     says when an event repeated the one read before it, and where each
//     of the values that may differ is, so that what a format found in the
//     one before need not be looked for again. A reply that became a
//     template carries a plan a format made of it (Members.SetPlan), in
//     Places of the template: a reply that repeats the template finds
//     them where they are in it (Members.Span), and its values are read
//     again there.
//   - A Stream starts no goroutine: its work is done inside Read, and an
//     event that may wait on the network is held until the output before
//     it has gone out.
package wire
