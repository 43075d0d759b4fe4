package sdk

import (
	"fmt"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// TestReplicateSeed recomputes ReplicateSeed from its documented formula
// with sdk/rng: the seed itself in replicate 0, else
// rng.Key(seed, "replicate", decimal(req.Seed), r, -1); and checks the
// properties the documentation promises of it.
func TestReplicateSeed(t *testing.T) {
	seeds := []uint64{0, 1, 2031, 2026, 2027, 1<<63 + 5, ^uint64(0)}
	recipe := []uint64{0, 7, 1 << 40, ^uint64(0)}
	for _, seed := range seeds {
		for _, rs := range recipe {
			req := FitRequest{Seed: rs}
			if got := ReplicateSeed(seed, req); got != seed {
				t.Errorf("replicate 0, seed %d, req.Seed %d: %d, want the seed itself", seed, rs, got)
			}
			for _, r := range []int{1, 2, 3, 1000, -1} {
				req.Replicate = r
				want := rng.Key(seed, "replicate", fmt.Sprintf("%d", rs), r, -1)
				if got := ReplicateSeed(seed, req); got != want {
					t.Errorf("replicate %d, seed %d, req.Seed %d: %d, want rng.Key(...) = %d", r, seed, rs, got, want)
				}
			}
		}
	}

	// Distinct across (seed, req.Seed, r) for r in 0..3: the seeds of
	// every posterior and member in every replicate differ, and a seed
	// the table fixes (the same seed under every req.Seed) still gets a
	// new one in each replicate r >= 1, and under each recipe seed.
	seen := map[uint64]string{}
	for _, seed := range seeds {
		for _, rs := range recipe {
			for r := range 4 {
				if r == 0 && rs != recipe[0] {
					continue // replicate 0 is the seed itself, whatever req.Seed
				}
				got := ReplicateSeed(seed, FitRequest{Seed: rs, Replicate: r})
				key := fmt.Sprintf("seed %d req.Seed %d replicate %d", seed, rs, r)
				if other, ok := seen[got]; ok {
					t.Errorf("%s and %s share the seed %d", key, other, got)
				}
				seen[got] = key
			}
		}
	}
}
