// Package echo holds the trivial plugins the host/plugin tests serve,
// built in and as a binary.
package echo
