// Package paper loads the golden paper network and its inputs for the
// tests of plugins (internal/golden cannot import sdk/nn: nn's own tests
// import it).
package paper
