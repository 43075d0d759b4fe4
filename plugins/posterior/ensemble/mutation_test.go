package ensemble

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// These tests close gaps that mutation testing (scripts/mutation) found:
// every Fit in the other tests names its seeds and its workers, so the
// default seeds, Workers = 0 and seed 0 were never run.

// fitWithin runs Fit and fails if it does not return within a generous
// limit (a tiny network trains in milliseconds, seconds on a loaded
// machine): a worker semaphore of size 0 would block it forever.
func fitWithin(t *testing.T, p *Posterior, req sdk.FitRequest) sdk.Artifact {
	t.Helper()
	type result struct {
		a   sdk.Artifact
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := p.Fit(context.Background(), req)
		done <- result{a, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%s: Fit: %v", p.id, r.err)
		}
		return r.a
	case <-time.After(5 * time.Minute): // a blocked Fit never returns: any bound tells it, and a loaded machine needs this one
		t.Fatalf("%s: Fit with Workers = %d did not return in 5 minutes", p.id, req.Workers)
		return sdk.Artifact{}
	}
}

// checkMembers checks that the artifact has the given members, each the
// plain nn.Train of the seed recorded for it.
func checkMembers(t *testing.T, a sdk.Artifact, req sdk.FitRequest, seeds []uint64) {
	t.Helper()
	if a.Meta["members"] != strconv.Itoa(len(seeds)) {
		t.Fatalf("members = %q, want %d", a.Meta["members"], len(seeds))
	}
	train := nn.Data{X: req.Train.X, Y: req.Train.Y, N: req.Train.N, Len: req.Train.Len}
	val := nn.Data{X: req.Val.X, Y: req.Val.Y, N: req.Val.N, Len: req.Val.Len}
	for i, seed := range seeds {
		if got := a.Meta["seed."+strconv.Itoa(i)]; got != strconv.FormatUint(seed, 10) {
			t.Errorf("member %d: recorded seed %q, want %d", i, got, seed)
		}
		res, err := nn.Train(context.Background(), req.Arch, train, val, req.Training, seed, nn.TrainOptions{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Tensors[memberName(i)], res.Params.Data) {
			t.Errorf("member %d is not nn.Train with seed %d", i, seed)
		}
	}
}

// TestDefaultSeeds: without "seeds", member i trains from the keyed stream
// i of the recipe seed (so that a member keeps its seed when members are
// added), and Workers = 0 means GOMAXPROCS workers.
func TestDefaultSeeds(t *testing.T) {
	req := sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(),
		Config: sdk.Config{"members": int64(3)}, Seed: 9, Workers: 0}
	a := fitWithin(t, New(), req)
	var seeds []uint64
	for i := range 3 {
		seeds = append(seeds, rng.Key(9, "ensemble-member", "", i, -1))
	}
	checkMembers(t, a, req, seeds)

	// The deterministic baseline trains from the recipe seed itself.
	req.Config = sdk.Config{}
	checkMembers(t, fitWithin(t, NewDeterministic(), req), req, []uint64{9})
}

// TestSeedZero: seeds are nonnegative integers, so 0 is one.
func TestSeedZero(t *testing.T) {
	req := sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(),
		Config: sdk.Config{"seeds": []any{int64(0), int64(7)}}, Seed: 9, Workers: 1}
	checkMembers(t, fitWithin(t, New(), req), req, []uint64{0, 7})
	req.Config = sdk.Config{"seed": int64(0)}
	checkMembers(t, fitWithin(t, NewDeterministic(), req), req, []uint64{0})
}

// TestProgress: Fit reports every epoch of every member once, numbering
// the members 1..k as a user reads them, with Done counting up to Total.
func TestProgress(t *testing.T) {
	var mu sync.Mutex
	var done []int
	var msgs []string
	req := sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(),
		Config: sdk.Config{"seeds": []any{int64(3), int64(4)}}, Workers: 2,
		Progress: func(p sdk.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if p.Total != 2*trainCfg().Epochs {
				t.Errorf("Total = %d, want %d", p.Total, 2*trainCfg().Epochs)
			}
			done = append(done, p.Done)
			msgs = append(msgs, p.Message)
		}}
	fitWithin(t, New(), req)
	slices.Sort(done)
	want := make([]int, 2*trainCfg().Epochs)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(done, want) {
		t.Errorf("Done values %v, want %v", done, want)
	}
	per := map[string]int{}
	for _, m := range msgs {
		per[strings.SplitN(m, " (", 2)[0]]++
	}
	if e := trainCfg().Epochs; per["member 1/2"] != e || per["member 2/2"] != e || len(per) != 2 {
		t.Errorf("messages per member %v, want %d each of member 1/2 and member 2/2", per, e)
	}
}
