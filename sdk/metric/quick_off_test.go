//go:build !mutation

package metric

// quickGolden is false in go test ./...: every golden case is replayed.
const quickGolden = false
