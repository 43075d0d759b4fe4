//go:build race

package plugin

// raceEnabled: this is a build with the race detector, whose
// ThreadSanitizer maps far more memory than the program uses; a script
// process of such a build gets no memory limit (its stacks are still
// limited).
const raceEnabled = true
