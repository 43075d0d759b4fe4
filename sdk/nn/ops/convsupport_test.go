package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSupportSteps: the list is the steps at which some channel is
// nonzero (a NaN counts, -0 and +0 do not), increasing, against a scan
// of the values; it is accepted up to L/supportShare steps and refused
// one step above.
func TestSupportSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	negZero := float32(math.Copysign(0, -1))
	for trial := 0; trial < 300; trial++ {
		C, L := 1+r.IntN(5), 1+r.IntN(80)
		dy := make([]float32, C*L)
		for i := range dy {
			switch r.IntN(6) {
			case 0:
				dy[i] = float32(r.NormFloat64())
			case 1:
				dy[i] = negZero
			case 2:
				if r.IntN(10) == 0 {
					dy[i] = float32(math.NaN())
				}
			}
		}
		var want []int32
		for tt := 0; tt < L; tt++ {
			for c := 0; c < C; c++ {
				if v := dy[c*L+tt]; v != 0 || v != v {
					want = append(want, int32(tt))
					break
				}
			}
		}
		got, one, ok := new(convScratch).supportSteps(dy, C, L)
		if ok != (len(want)*supportShare <= L) {
			t.Fatalf("C %d L %d: %d steps accepted %v", C, L, len(want), ok)
		}
		if !ok {
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("C %d L %d: steps %v, want %v", C, L, got, want)
		}
		most := 0
		for c := 0; c < C; c++ {
			n := 0
			for _, v := range dy[c*L : (c+1)*L] {
				if v != 0 || v != v {
					n++
				}
			}
			most = max(most, n)
		}
		if one != (most <= 1) {
			t.Fatalf("C %d L %d: one a channel %v, but a channel has %d", C, L, one, most)
		}
		if cs := new(convScratch).channelSteps(dy, C, L, got); len(cs) != countNonzero(dy) {
			t.Fatalf("C %d L %d: channelSteps lists %d, %d are nonzero", C, L, len(cs), countNonzero(dy))
		} else {
			for k, s := range cs {
				if v := dy[s]; (v == 0 && v == v) || (k > 0 && s <= cs[k-1]) {
					t.Fatalf("C %d L %d: channelSteps %v: %d holds %v or is out of order", C, L, cs, s, v)
				}
			}
		}
	}
	// The bound exactly: L/4 steps accepted, one more refused.
	L := 40
	dy := make([]float32, L)
	for tt := 0; tt < L/supportShare; tt++ {
		dy[tt*supportShare] = 1
	}
	if _, _, ok := new(convScratch).supportSteps(dy, 1, L); !ok {
		t.Error("L/4 steps refused")
	}
	dy[1] = 1
	if _, _, ok := new(convScratch).supportSteps(dy, 1, L); ok {
		t.Error("L/4+1 steps accepted")
	}
	// A dense gradient is given up within the first blocks.
	long := make([]float32, 100*supportBlock)
	for i := range long {
		long[i] = 1
	}
	if list, _, ok := new(convScratch).supportSteps(long, 1, len(long)); ok || len(list) > 26*supportBlock {
		t.Errorf("a dense gradient: accepted %v after listing %d steps; want a refusal within %d", ok, len(list), 26*supportBlock)
	}
}

func countNonzero(x []float32) int {
	n := 0
	for _, v := range x {
		if v != 0 || v != v {
			n++
		}
	}
	return n
}
