//go:build race

package proxy

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
