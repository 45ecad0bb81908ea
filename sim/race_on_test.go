//go:build race

package sim

// raceEnabled reports whether the tests run under the race detector, whose overhead makes
// real-time measurements meaningless.
const raceEnabled = true
