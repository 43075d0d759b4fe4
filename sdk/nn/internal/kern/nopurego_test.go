//go:build !purego

package kern

// puregoTag: built without -tags purego.
const puregoTag = false
