// Package rng derives independent, reproducible random streams from a key
// (seed, purpose, split, record, draw), so that results never depend on
// which goroutine, worker or shard computed them.
//
// Keyed random streams: (seed, purpose, split, record, draw) -> seed.
package rng
