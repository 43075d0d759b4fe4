package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// replicatedPlan is testPlan with its posterior once in each of 3
// replicates of seeds 11, 12, 13.
func replicatedPlan() Plan {
	p := testPlan(6, 2, 2, 4)
	ps := p.Posteriors[0]
	p.Posteriors = nil
	for r := range 3 {
		s := ps
		s.Replicate, s.Replicated = r, true
		p.Posteriors = append(p.Posteriors, s)
	}
	p.ReplicateSeeds = []uint64{11, 12, 13}
	return p
}

// TestReplicatesFitWithTheirSeeds: each replicate's posterior is fitted
// once, with its replicate and its replicate's seed, and its rows carry
// the replicate; a posterior that does not derive its seeds from the
// replicate is refused before anything is fitted.
func TestReplicatesFitWithTheirSeeds(t *testing.T) {
	f := newFakes(2)
	f.post.replicates = true
	res := runPlan(t, replicatedPlan(), f, nil)
	var got [][2]uint64
	for _, req := range f.post.fitted {
		got = append(got, [2]uint64{uint64(req.Replicate), req.Seed})
	}
	slices.SortFunc(got, func(a, b [2]uint64) int { return int(a[0]) - int(b[0]) })
	if want := [][2]uint64{{0, 11}, {1, 12}, {2, 13}}; !slices.Equal(got, want) {
		t.Errorf("fits (replicate, seed) %v, want %v", got, want)
	}
	var reps []int
	for _, r := range res.Rows {
		reps = append(reps, r.Replicate)
	}
	if !slices.Equal(reps, []int{0, 1, 2}) {
		t.Errorf("rows of replicates %v, want [0 1 2]", reps)
	}
	g := newFakes(2)
	_, _, err := Run(context.Background(), replicatedPlan(), g, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Fake (replicate 1): posterior.fake 1.0.0 does not derive its training seeds from the replicate") {
		t.Errorf("a posterior without Info.Replicates: %v", err)
	}
	if g.post.fits != 0 {
		t.Errorf("%d fits before the refusal", g.post.fits)
	}
}
