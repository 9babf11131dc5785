//go:build !race

package repair

const raceEnabled = false
