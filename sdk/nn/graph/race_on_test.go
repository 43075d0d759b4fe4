//go:build race

package graph

// raceEnabled: the race detector is on; sync.Pool then drops a random
// share of what is put back, so allocation counts say nothing.
const raceEnabled = true
