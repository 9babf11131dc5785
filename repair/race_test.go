//go:build race

package repair

// raceEnabled: under the race detector, sync.Pool drops what is put in it
// at random, so the regexp and buffer pools allocate anew and bytes
// allocated say little about the work done: bounds on them are checked in
// builds without it (and in the fuzz runs).
const raceEnabled = true
