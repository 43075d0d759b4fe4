//go:build race

package runner

// raceEnabled: the race detector slows training about tenfold.
const raceEnabled = true
