// Package policy holds toolguard's configuration and the decisions it drives:
// which steps of the ladder run, how many times the model may be re-asked,
// and what happens to a call that cannot be made valid.
//
// Guarantees:
//   - The configuration is read once, from environment variables only.
//   - Load reports every bad value at once, each naming its variable and what
//     it accepts; it has no side effects. A bad configuration never starts.
//   - Every setting has a default that is safe in production.
package policy
