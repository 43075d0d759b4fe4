//go:build !linux

package plugin

import "os"

// waitExit returns false at once outside Linux: the caller's Wait reaps
// the plugin, and its group is not killed.
func waitExit(int) bool { return false }

// limitMemory does nothing outside Linux: a script process has the Go
// runtime's soft memory limit only.
func limitMemory(int64) error { return nil }

// signalOf is "" and false outside Linux: the exit is reported as it is.
func signalOf(*os.ProcessState) (string, bool) { return "", false }

// socketPathMax is the longest path a unix socket may have on the BSDs
// and macOS: sun_path's 104 bytes, less the NUL that ends it.
const socketPathMax = 103
