//go:build !unix

package driver

// removeStale does nothing where processes cannot be probed by signal.
func removeStale(string) {}
