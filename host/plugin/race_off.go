//go:build !race

package plugin

// raceEnabled: see race_on.go.
const raceEnabled = false
