// Package limits is the recipe's [limits] table, defined once: the type
// that host/recipe decodes and that host/plugin's Manager enforces, its
// defaults, and its keys. Limits never change a number a run computes, so
// no hash covers them.
//
// The recipe's decoding of the table (durations and sizes as [limits]
// writes them, errors naming the key and line) and its canonical form stay
// in host/recipe; what a call of a plugin is bounded by stays in
// host/plugin.
//
// The recipe's [limits], defined once: the type that host/recipe decodes
// (and writes in the canonical form) and the plugin manager enforces, its
// defaults (Default, printed in host/recipe/REFERENCE.md, which a test
// checks), its duration keys (Durations), OrDefault.
package limits
