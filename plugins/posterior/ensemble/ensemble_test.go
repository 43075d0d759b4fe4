package ensemble

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// tinyArch keeps Fit fast.
func tinyArch() nn.Arch {
	return nn.Arch{Name: "tiny", InChannels: 1, InLen: 32, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 4, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindBatchNorm1D, Name: "bn1"},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
}

func tinyData(n int, seed uint64) sdk.Dataset {
	r := rand.New(rand.NewPCG(seed, 3))
	d := sdk.Dataset{N: n, Len: 32, Y: make([]int, n)}
	for i := 0; i < n; i++ {
		d.Y[i] = i % 3
		for t := 0; t < 32; t++ {
			d.X = append(d.X, float32(float64(d.Y[i])*0.5+r.NormFloat64()))
		}
	}
	return d
}

func trainCfg() nn.TrainConfig {
	c := nn.PaperTrainConfig()
	c.Epochs, c.Batch = 2, 8
	return c
}

func TestConformance(t *testing.T) {
	for _, p := range []*Posterior{New(), NewDeterministic()} {
		cfg := sdk.Config{"members": int64(2), "seeds": []any{int64(5), int64(6)}}
		draws := 2
		if p.Info().ID == "posterior.deterministic" {
			cfg, draws = sdk.Config{"seed": int64(4)}, 1
		}
		sdktest.Posterior(t, p, sdktest.PosteriorCase{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(), Config: cfg, Seed: 9, Draws: draws})
	}
}

// TestMembersAreIndependentTrainings: member i equals a plain nn.Train with
// seed i, and asking more draws than members is an error naming the limit.
func TestMembersAreIndependentTrainings(t *testing.T) {
	train, val := tinyData(48, 1), tinyData(12, 2)
	req := sdk.FitRequest{Arch: tinyArch(), Train: train, Val: val, Training: trainCfg(), Config: sdk.Config{"seeds": []any{int64(11), int64(12)}}, Workers: 2}
	a, err := New().Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, seed := range []uint64{11, 12} {
		res, err := nn.Train(context.Background(), tinyArch(), nn.Data{X: train.X, Y: train.Y, N: train.N, Len: train.Len}, nn.Data{X: val.X, Y: val.Y, N: val.N, Len: val.Len}, trainCfg(), seed, nn.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := a.Tensors[memberName(i)]
		for j := range got {
			if got[j] != res.Params.Data[j] {
				t.Fatalf("member %d differs from nn.Train with seed %d at %d", i, seed, j)
			}
		}
	}
	_, err = New().Sample(context.Background(), a, sdk.SampleRequest{Seeds: make([]uint64, 3)})
	if err == nil || !strings.Contains(err.Error(), "<= 2") {
		t.Errorf("3 draws of 2 members: %v", err)
	}
	for _, bad := range []sdk.Config{{"members": int64(0)}, {"seeds": "x"}, {"members": int64(2), "seeds": []any{int64(1)}}, {"member": int64(2)}} {
		if err := New().Check(bad, 1); err == nil {
			t.Errorf("config %v accepted", bad)
		}
	}
	if err := NewDeterministic().Check(sdk.Config{"members": int64(2)}, 1); err == nil {
		t.Error("the deterministic posterior accepted members")
	}
}

// TestConformanceOnAGraph: the ensemble and the deterministic posterior
// train a graph architecture (a residual block) and pass the conformance
// checks on it, parts and replicates included.
func TestConformanceOnAGraph(t *testing.T) {
	a := nn.GraphArch(graphtest.Residual(32))
	for _, p := range []*Posterior{New(), NewDeterministic()} {
		cfg, draws := sdk.Config{"members": int64(2), "seeds": []any{int64(5), int64(6)}}, 2
		if p.Info().ID == "posterior.deterministic" {
			cfg, draws = sdk.Config{"seed": int64(4)}, 1
		}
		sdktest.Posterior(t, p, sdktest.PosteriorCase{Arch: a, Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(), Config: cfg, Seed: 9, Draws: draws})
	}
}
