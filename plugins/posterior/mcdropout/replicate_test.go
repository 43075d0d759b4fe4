package mcdropout

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// replicateSeed is sdk.ReplicateSeed recomputed from its documented
// formula.
func replicateSeed(seed, recipe uint64, r int) uint64 {
	if r == 0 {
		return seed
	}
	return rng.Key(seed, "replicate", fmt.Sprint(recipe), r, -1)
}

// TestReplicates: with its seed fixed by the table (and, second, from the
// recipe's seed), replicate r trains the dropout network from
// sdk.ReplicateSeed(seed, req), which Meta "seed" records: replicate 0
// the seed itself (today's network), and three different networks, each
// the plain nn.Train of its seed; the same request twice is the same
// network.
func TestReplicates(t *testing.T) {
	if !New().Info().Replicates {
		t.Error("Info.Replicates is false")
	}
	for _, cfg := range []sdk.Config{{"p": 0.3, "seed": int64(2031)}, {"p": 0.3}} {
		var nets [][]float32
		for r := range 3 {
			req := fitRequest(cfg)
			req.Training.Epochs = 1
			req.Seed, req.Replicate = 5, r // the same recipe seed: the replicate alone must tell them apart
			a, err := New().Fit(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			seed := req.Seed
			if _, ok := cfg["seed"]; ok {
				seed = 2031
			}
			want := replicateSeed(seed, req.Seed, r)
			if a.Meta["seed"] != strconv.FormatUint(want, 10) {
				t.Errorf("%v replicate %d: Meta seed %s, want %d", cfg, r, a.Meta["seed"], want)
			}
			arch, err := WithDropout(req.Arch, 0.3)
			if err != nil {
				t.Fatal(err)
			}
			res, err := nn.Train(context.Background(), arch, req.Train, req.Val, req.Training, want, nn.TrainOptions{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Tensors["map"], res.Params.Data) {
				t.Errorf("%v replicate %d: the network is not nn.Train with seed %d", cfg, r, want)
			}
			again, err := New().Fit(context.Background(), req)
			if err != nil || !slices.Equal(again.Tensors["map"], a.Tensors["map"]) {
				t.Errorf("%v replicate %d: the same request gave another network (%v)", cfg, r, err)
			}
			nets = append(nets, a.Tensors["map"])
		}
		for i := range nets {
			for j := range i {
				if slices.Equal(nets[i], nets[j]) {
					t.Errorf("%v: replicates %d and %d trained the same network", cfg, j, i)
				}
			}
		}
	}
}
