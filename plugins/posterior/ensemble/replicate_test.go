package ensemble

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// replicateSeed is sdk.ReplicateSeed recomputed from its documented
// formula, so that these tests do not take the sdk's word for it.
func replicateSeed(seed, recipe uint64, r int) uint64 {
	if r == 0 {
		return seed
	}
	return rng.Key(seed, "replicate", fmt.Sprint(recipe), r, -1)
}

// replicaRecipeSeed is the seed a host sends in replicate r (any seed
// will do; replicate 0's is the recipe's).
func replicaRecipeSeed(r int) uint64 {
	if r == 0 {
		return 9
	}
	return rng.Key(9, "test-replicate", "", r, -1)
}

func oneEpoch() sdk.FitRequest {
	tc := trainCfg()
	tc.Epochs = 1
	return sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: tc, Workers: 2}
}

// TestReplicates: three replicates of an ensemble of two members whose
// table fixes the seeds train each member from
// sdk.ReplicateSeed(table seed, req) (replicate 0: the table's seeds as
// they are, today's run), so 3 x 2 distinct seeds and distinct networks,
// each the plain nn.Train of its recorded seed; the same request twice is
// the same artifact. Without a table, the members' default seeds go the
// same way.
func TestReplicates(t *testing.T) {
	table := []uint64{2026, 2027}
	seen := map[uint64]string{}
	var nets [][]float32
	for r := range 3 {
		req := oneEpoch()
		req.Config = sdk.Config{"seeds": []any{int64(table[0]), int64(table[1])}}
		req.Seed, req.Replicate = replicaRecipeSeed(r), r
		a := fitWithin(t, New(), req)
		want := []uint64{replicateSeed(table[0], req.Seed, r), replicateSeed(table[1], req.Seed, r)}
		checkMembers(t, a, req, want)
		for i, s := range want {
			where := fmt.Sprintf("replicate %d member %d", r, i)
			if other, ok := seen[s]; ok {
				t.Errorf("%s trains from seed %d, as %s does", where, s, other)
			}
			seen[s] = where
			nets = append(nets, a.Tensors[memberName(i)])
		}
		sameArtifact(t, fmt.Sprintf("replicate %d fitted twice", r), fitWithin(t, New(), req), a)
	}
	for i := range nets {
		for j := range i {
			if slices.Equal(nets[i], nets[j]) {
				t.Errorf("networks %d and %d (replicate %d member %d, replicate %d member %d) are the same", j, i, j/2, j%2, i/2, i%2)
			}
		}
	}

	// Default seeds: member i of replicate r trains from the replicate's
	// keyed stream i, mapped again.
	for r := range 2 {
		req := oneEpoch()
		req.Config = sdk.Config{"members": int64(2)}
		req.Seed, req.Replicate = replicaRecipeSeed(r), r
		var want []uint64
		for i := range 2 {
			want = append(want, replicateSeed(rng.Key(req.Seed, "ensemble-member", "", i, -1), req.Seed, r))
		}
		checkMembers(t, fitWithin(t, New(), req), req, want)
	}
}

// TestDeterministicReplicates: posterior.deterministic with seed = 2031
// in its table trains from 2031 in replicate 0 (today's network) and from
// sdk.ReplicateSeed(2031, req) in replicates 1 and 2, three different
// networks, even when the host sends the same seed in every replicate.
func TestDeterministicReplicates(t *testing.T) {
	for _, sameRecipeSeed := range []bool{false, true} {
		var nets [][]float32
		for r := range 3 {
			req := oneEpoch()
			req.Config = sdk.Config{"seed": int64(2031)}
			req.Seed, req.Replicate = replicaRecipeSeed(r), r
			if sameRecipeSeed {
				req.Seed = replicaRecipeSeed(0)
			}
			a := fitWithin(t, NewDeterministic(), req)
			checkMembers(t, a, req, []uint64{replicateSeed(2031, req.Seed, r)})
			if r == 0 && a.Meta["seed.0"] != "2031" {
				t.Errorf("replicate 0 trains from seed %s, want the table's 2031", a.Meta["seed.0"])
			}
			nets = append(nets, a.Tensors[memberName(0)])
		}
		for i := range nets {
			for j := range i {
				if slices.Equal(nets[i], nets[j]) {
					t.Errorf("same recipe seed %v: replicates %d and %d trained the same network", sameRecipeSeed, j, i)
				}
			}
		}
	}
}

// TestReplicateZeroIsTheRunWithout: a request with Replicate = 0 gives
// the artifact of the same request without the field (the zero value,
// what a host before replicates sent), bit for bit, for both plugins;
// and its members are the table's seeds, as TestMembersAreIndependentTrainings
// checks against nn.Train.
func TestReplicateZeroIsTheRunWithout(t *testing.T) {
	for _, p := range []*Posterior{New(), NewDeterministic()} {
		without := oneEpoch()
		without.Seed = 9
		if p.id == ID {
			without.Config = sdk.Config{"seeds": []any{int64(3), int64(4)}}
		} else {
			without.Config = sdk.Config{"seed": int64(3)}
		}
		with := without
		with.Replicate = 0
		a, b := fitWithin(t, p, without), fitWithin(t, p, with)
		sameArtifact(t, p.id+": replicate 0 vs the request without a replicate", a, b)
		if a.Meta["seed.0"] != strconv.Itoa(3) {
			t.Errorf("%s: replicate 0 member 0 trains from seed %s, want the table's 3", p.id, a.Meta["seed.0"])
		}
	}
}

// TestReplicatesInfo: both plugins say they honour replicates.
func TestReplicatesInfo(t *testing.T) {
	for _, p := range []*Posterior{New(), NewDeterministic()} {
		if !p.Info().Replicates {
			t.Errorf("%s: Info.Replicates is false", p.id)
		}
	}
}

// TestReplicatePart: a part of replicate r is member Part of the whole
// replicate-r fit, so a parted replicate joins as replicate 0 does.
func TestReplicatePart(t *testing.T) {
	req := oneEpoch()
	req.Config = sdk.Config{"seeds": []any{int64(5), int64(6)}}
	req.Seed, req.Replicate = replicaRecipeSeed(2), 2
	whole := fitWithin(t, New(), req)
	for k := range 2 {
		part := req
		part.Part, part.Parts, part.Workers = k, 2, 1
		a := fitWithin(t, New(), part)
		name := memberName(k)
		if !slices.Equal(a.Tensors[name], whole.Tensors[name]) || a.Meta["seed."+strconv.Itoa(k)] != whole.Meta["seed."+strconv.Itoa(k)] {
			t.Errorf("replicate 2 part %d is not member %d of the whole replicate-2 fit", k, k)
		}
	}
}
