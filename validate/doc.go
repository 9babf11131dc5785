// Package validate compiles the JSON Schemas that clients declare for their
// tools and checks tool-call arguments against them.
//
// Guarantees:
//   - A schema never makes the compiler read a file or reach the network: every
//     URL that a schema names ($ref, $schema of an unknown draft, $id-relative
//     references) is refused, and the schema fails to compile instead.
//   - Each draft is honoured as the schema declares it with $schema; a schema
//     that declares none is read as draft 2020-12.
//   - Compiled schemas are cached by their bytes (compared in full on a hit;
//     a failure, by their SHA-256) in a cache of bounded size (least recently
//     used entries are evicted), failures included, so a schema is compiled
//     at most once while it stays in the cache.
//   - Validation errors are flat: one Error per failed leaf keyword, each with
//     the JSON pointer of the offending value inside the arguments.
//   - Arguments must be a JSON object, whatever the schema says: that is what
//     the OpenAI tool-call contract promises to tool code.
//   - A schema over MaxSchemaBytes or nested deeper than MaxSchemaDepth is not
//     compiled; patterns are Go regular expressions (RE2), which run in time
//     linear in their input, so no pattern can backtrack catastrophically; a
//     schema that refers to itself validates as deep as the arguments go, and
//     a reference loop that consumes nothing does not compile.
//   - Numbers are decoded as json.Number, so no precision is lost on the way;
//     a number of more than 400 digits or beyond float64's range is an invalid
//     argument, and makes a schema that holds it not compile.
//   - The work of validating is bounded: before the validator runs, a walk
//     over a plan made at compile time counts the visits it could make and
//     stops at MaxSteps (or what is left of a shared Budget); arguments over
//     it are not checked and Validate says so with one error of keyword
//     KeywordBudget (see Unchecked), or KeywordSpent when what was left of
//     the shared Budget, less than MaxSteps, was the bound (see Spent).
//     Steps are calibrated on what the validator costs (BenchmarkStepCost):
//     bounds and uniqueItems weigh more than a plain visit, and the fast
//     path's visits a sixteenth of one. A request's Budget is RequestSteps.
//     Patterns whose program is over MaxPatternInsts do not compile. A string
//     whose format "regex" is asserted counts two steps a byte: the
//     validator compiles it.
//   - At most MaxErrors errors are kept per call, each message bounded; an
//     enum is described by its size and a few values, never quoted whole.
//   - The cache is bounded by estimated memory (SetMaxBytes) as well as by
//     count.
//   - A flat schema (typed properties, enums, required, and the like) is
//     checked by a fast path made at compile time that allocates nothing. It
//     only ever answers "valid", and only for arguments the validator finds
//     valid. It charges the work budget what the walk would.
//   - For arguments the fast path did not prove valid, explain says the
//     errors of the commonest failures (type, required, additionalProperties,
//     enum and const of scalars, sizes) in the validator's words, from its
//     compiled schema, at a sixth of its time or less (BenchmarkExplain);
//     any other failure, and the
//     validator runs. Errors are the validator's either way, except in order:
//     the validator reports an object's properties in map order, explain in
//     the order of their names. The budget walk runs before either.
package validate
