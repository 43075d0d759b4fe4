// Package check holds the request checks that both sides of the plugin
// protocol apply, so that a bad batch gets the same error in process, on
// the host and in the plugin: they take plain values, not sdk types.
package check
