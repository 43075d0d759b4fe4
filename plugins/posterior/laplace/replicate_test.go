package laplace

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// TestReplicates: the approximation's own randomness (the calibration's
// draws) comes from sdk.ReplicateSeed(req.Seed, req): replicate r with
// seed S is, bit for bit, replicate 0 with seed rng.Key(S, "replicate",
// decimal(S), r, -1) (the documented formula), and replicate 1 differs
// from replicate 0 of the same seed. (The base network of replicate r is
// the host's: it fits posterior.deterministic with the same replicate.)
func TestReplicates(t *testing.T) {
	if !New().Info().Replicates {
		t.Error("Info.Replicates is false")
	}
	ctx := context.Background()
	for _, cfg := range []sdk.Config{{"scale": 0.5, "delta": 2.0}, {"calibration_draws": int64(3), "delta": 2.0}} {
		fit := func(seed uint64, r int) sdk.Artifact {
			t.Helper()
			req := fitRequest(cfg)
			req.Seed, req.Replicate = seed, r
			a, err := New().Fit(ctx, req)
			if err != nil {
				t.Fatalf("%v, seed %d, replicate %d: %v", cfg, seed, r, err)
			}
			return a
		}
		r0 := fit(9, 0)
		for _, r := range []int{1, 2} {
			got := fit(9, r)
			want := fit(rng.Key(9, "replicate", fmt.Sprint(9), r, -1), 0)
			if !maps.Equal(got.Meta, want.Meta) {
				t.Errorf("%v replicate %d: meta %v, want replicate 0's of the mapped seed, %v", cfg, r, got.Meta, want.Meta)
			}
			if maps.Equal(got.Meta, r0.Meta) {
				t.Errorf("%v replicate %d: the same calibration as replicate 0 (meta %v)", cfg, r, got.Meta)
			}
		}
	}
}
