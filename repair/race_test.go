//go:build race

package repair

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
