//go:build purego

package kern

// puregoTag: built with -tags purego, which must turn the assembly off.
const puregoTag = true
