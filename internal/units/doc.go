// Package units formats durations as the recipe's [limits] writes them,
// for the recipe decoder and the plugin manager alike.
//
// Durations as [limits] writes them (the recipe and the plugin manager).
package units
