package sdk

import (
	"strconv"

	"github.com/uaxai/uaxai/sdk/rng"
)

// ReplicateSeed is the training seed a posterior uses, in replicate
// req.Replicate of an experiment repeated over training seeds, for a seed
// it would use in the run without replicates: one fixed by its recipe
// table ("seed", "seeds"), or one it derives from req.Seed. Every
// training seed of a posterior that sets Info.Replicates goes through it:
//
//	ReplicateSeed(seed, req) = seed                                                          if req.Replicate == 0
//	ReplicateSeed(seed, req) = rng.Key(seed, "replicate", decimal(req.Seed), req.Replicate, -1)  otherwise
//
// where decimal(req.Seed) is strconv.FormatUint(req.Seed, 10), the
// replicate's seed. Replicate 0 is the run without replicates, seed for
// seed and byte for byte. A replicate r >= 1 gets an independent-looking
// stream for each distinct (seed, req.Seed, r), so a network whose seed
// the table fixes is trained anew in every replicate. For one replicate
// (fixed req.Seed and r), rng.Key is a bijection of seed: distinct seeds
// (two posteriors' tables, an ensemble's members) stay distinct. For one
// seed and req.Seed, distinct r >= 1 give distinct seeds too.
//
// A negative Replicate is a programmer's error that the server (Serve)
// and the host's driver refuse before Fit; ReplicateSeed hashes it like
// any other and never panics.
func ReplicateSeed(seed uint64, req FitRequest) uint64 {
	if req.Replicate == 0 {
		return seed
	}
	return rng.Key(seed, "replicate", strconv.FormatUint(req.Seed, 10), req.Replicate, -1)
}
