// Package memtest measures what a piece of code allocates, for tests that
// bound memory (a property, never a speed).
//
// The bytes a function allocates, for tests that bound memory (Allocated).
package memtest
