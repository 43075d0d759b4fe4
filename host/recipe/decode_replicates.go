package recipe

import (
	"strconv"

	"github.com/uaxai/uaxai/sdk/rng"
)

// Replicates is the [replicates] table: the whole experiment repeated
// Count times with independent training seeds for every posterior
// (sdk.FitRequest.Replicate, sdk.ReplicateSeed), the test splits and the
// explainers' seeds the same in every replicate, so that what differs
// between replicates is the training.
type Replicates struct {
	Count int `toml:"count"`
	// Seeds are the replicates' seeds, one a replicate; nil: derived
	// (Seed).
	Seeds []uint64 `toml:"seeds,omitempty"`
	// ResampleSplits draws each replicate's test splits anew, from its
	// seed (replicate 0 keeps the recipe's): the difference between
	// replicates is then the training and the test data. Source "pqd" only.
	ResampleSplits bool `toml:"resample_splits,omitempty"`
}

// MaxReplicates bounds [replicates] count: each replicate fits every
// posterior again.
const MaxReplicates = 1000

// Seed is the seed of replicate i of a recipe whose seed is seed: the
// i-th of Seeds when they are given, else seed for replicate 0 (so that
// replicate 0 is the run without [replicates], byte for byte) and
//
//	rng.Key(seed, "replicate", "", i, 0)
//
// for i >= 1. It is the FitRequest.Seed of every fit of the replicate.
func (r *Replicates) Seed(seed uint64, i int) uint64 {
	if r != nil && len(r.Seeds) > 0 {
		return r.Seeds[i]
	}
	if i == 0 {
		return seed
	}
	return rng.Key(seed, "replicate", "", i, 0)
}

// N is the number of replicates: Count, or 1 without [replicates].
func (r *Replicates) N() int {
	if r == nil {
		return 1
	}
	return r.Count
}

// replicates decodes [replicates].
func (d *decoder) replicates(v any) (*Replicates, error) {
	path := []string{"replicates"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return nil, err
	}
	out := &Replicates{}
	var seeds []any
	err = d.table(tbl, path, []field{
		{"count", d.setInt(&out.Count)},
		{"resample_splits", d.setBool(&out.ResampleSplits)},
		{"seeds", func(v any, p []string) error {
			list, ok := v.([]any)
			if !ok {
				return d.keyErr(p, "want an array of integers (one seed a replicate), got %s", describe(v))
			}
			seeds = list
			return nil
		}},
	})
	if err != nil {
		return nil, err
	}
	count := sub(path, "count")
	if _, ok := tbl["count"]; !ok {
		return nil, d.errAt(path, "[replicates] needs count (accepted: 1..%d, the replicates of the experiment)", MaxReplicates)
	}
	if out.Count < 1 {
		return nil, d.keyErr(count, "%d is less than 1 (accepted: 1..%d replicates)", out.Count, MaxReplicates)
	}
	if err := d.checkCount(count, out.Count, MaxReplicates, "each replicate fits every posterior again"); err != nil {
		return nil, err
	}
	if seeds != nil {
		if len(seeds) != out.Count {
			return nil, d.keyErr(sub(path, "seeds"), "has %d entries, count = %d (accepted: one seed a replicate, or no seeds to derive them from the recipe's seed)", len(seeds), out.Count)
		}
		seen := map[int64]int{}
		for i, s := range seeds {
			p := sub(path, "seeds", strconv.Itoa(i))
			n, ok := s.(int64)
			if !ok || n < 0 {
				return nil, d.keyErr(p, "%s is not a seed (accepted: an integer >= 0)", describe(s))
			}
			if j, dup := seen[n]; dup {
				return nil, d.keyErr(p, "%d is also the seed of replicate %d (accepted: distinct seeds: two replicates of one seed are the same networks)", n, j)
			}
			seen[n] = i
			out.Seeds = append(out.Seeds, uint64(n))
		}
	}
	return out, nil
}
