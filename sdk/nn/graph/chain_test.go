package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// chainCase is a chain's edits, made in advance: edit k of chain b sets
// the samples idx[b][k] to vals[b][k] (cumulatively), or resets the whole
// copy to the input when reset[b][k] (an edit that rewrites the input);
// every chain restarts from its input before step k when restart[k] (the
// engine's ChainRestart).
type chainCase struct {
	idx     [][][]int
	vals    [][][]float32
	reset   [][]bool
	restart []bool
}

// randomChains makes K steps of edits for B chains of inputs C x T: most
// steps a run of up to 5 steps in one channel or all, some nothing, and
// when wild some a few scattered samples, some a reset; with restarts 1,
// about one step in three restarts the chains; with restarts 2, only
// step K-3 does.
func randomChains(rng *rand.Rand, B, K, C, T int, wild bool, restarts int) chainCase {
	cc := chainCase{idx: make([][][]int, B), vals: make([][][]float32, B), reset: make([][]bool, B), restart: make([]bool, K)}
	for k := 1; restarts == 1 && k < K; k++ {
		cc.restart[k] = rng.IntN(3) == 0
	}
	if restarts == 2 {
		cc.restart[K-3] = true
	}
	for b := range B {
		cc.idx[b], cc.vals[b], cc.reset[b] = make([][]int, K), make([][]float32, K), make([]bool, K)
		for k := range K {
			r := rng.IntN(10)
			if !wild && r <= 3 {
				r = 4 + r%2*6 // a run, or nothing
			}
			switch {
			case r == 0 || r == 10: // nothing
			case r == 1:
				cc.reset[b][k] = true
			case r <= 3: // scattered
				for range 1 + rng.IntN(3) {
					cc.idx[b][k] = append(cc.idx[b][k], rng.IntN(C*T))
				}
			default:
				w := 1 + rng.IntN(5)
				s := rng.IntN(T - w + 1)
				c0, c1 := 0, C
				if rng.IntN(2) == 0 {
					c0 = rng.IntN(C)
					c1 = c0 + 1
				}
				for c := c0; c < c1; c++ {
					for t := s; t < s+w; t++ {
						cc.idx[b][k] = append(cc.idx[b][k], c*T+t)
					}
				}
			}
			for range cc.idx[b][k] {
				cc.vals[b][k] = append(cc.vals[b][k], float32(rng.NormFloat64()))
			}
		}
	}
	return cc
}

// copies writes out every copy of every chain as the edits make it, by
// hand: chain b's copies, K of them, after chain b-1's.
func (cc chainCase) copies(xs []float32, n int) []float32 {
	var out []float32
	for b := range cc.idx {
		x := xs[b*n : (b+1)*n]
		cur := append([]float32(nil), x...)
		for k := range cc.idx[b] {
			if cc.reset[b][k] || cc.restart[k] {
				copy(cur, x)
			}
			for j, i := range cc.idx[b][k] {
				cur[i] = cc.vals[b][k][j]
			}
			out = append(out, cur...)
		}
	}
	return out
}

// restarts is the ChainRestart of cc (nil when it has none).
func (cc chainCase) restarts() ChainRestart {
	for _, r := range cc.restart {
		if r {
			return func(k int) bool { return cc.restart[k] }
		}
	}
	return nil
}

// edit is the ChainEdit of cc: it applies step k's edits and returns the
// hull of their steps.
func (cc chainCase) edit(xs []float32, C, T int) ChainEdit {
	return func(b, k int, cur []float32) (int, int) {
		if cc.reset[b][k] {
			copy(cur, xs[b*C*T:(b+1)*C*T])
			return 0, T
		}
		lo, hi := T, 0
		for j, i := range cc.idx[b][k] {
			cur[i] = cc.vals[b][k][j]
			lo, hi = min(lo, i%T), max(hi, i%T+1)
		}
		return lo, hi
	}
}

// TestChainOutputsMatchForward: on every graph of the window tests, for
// chains of random edits (runs, scattered samples, resets, no change),
// ChainOutputs equals forward passes of the copies written out by hand,
// for probabilities and logits, with 3 chains and with ChainBatch (runs
// only: below the passes' work), unfolded and folded (FoldEval), with
// and without restarts (the chains' start kept and copied back: undo logs
// of windows, and compacted into whole values).
func TestChainOutputsMatchForward(t *testing.T) {
	for si, spec := range windowSpecs() {
		n := randomNet(t, spec, uint64(60+si))
		in := n.InShape()
		K := n.Classes()
		for _, B := range []int{3, ChainBatch, -3, 4, -4, 5, 6} {
			restarts := map[int]int{4: 1, -4: 1, 5: 2, 6: 1}[B]
			if B < 0 { // the folded pass, against Forward's
				if n.FoldEval() == 0 && si > 0 {
					continue
				}
				B = -B
			}
			rng := rand.New(rand.NewPCG(uint64(si), uint64(B)))
			steps := 12
			xs := randVec(rng, B*in.Size())
			classes := make([]int, B)
			for b := range classes {
				classes[b] = rng.IntN(K)
			}
			cc := randomChains(rng, B, steps, in.C, in.T, B < ChainBatch, restarts)
			copies := cc.copies(xs, in.Size())
			probs := make([]float32, B*steps*K)
			if err := n.Forward(probs, copies); err != nil {
				t.Fatal(err)
			}
			logits := make([]float32, B*steps*K)
			if err := n.ForwardLogits(logits, copies); err != nil {
				t.Fatal(err)
			}
			for _, lg := range []bool{false, true} {
				ref := probs
				if lg {
					ref = logits
				}
				want := make([]float32, B*steps)
				for j := range want {
					want[j] = ref[j*K+classes[j/steps]]
				}
				got := make([]float32, B*steps)
				compactOver = 1
				if B == 5 || B == 6 { // undo logs compacted at every window
					compactOver = 0
				}
				p, err := n.ChainOutputs(got, xs, steps, classes, lg, cc.edit(xs, in.C, in.T), cc.restarts())
				compactOver = 1
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s B=%d logits %v restarts %v (%v)", spec.Name, B, lg, restarts, p)
				if d, ok := closeTo(got, want, 3e-6); !ok {
					t.Errorf("%s: differs from forward passes of the copies by %.3g of the largest value", what, d)
				}
				if B == ChainBatch && p.Fraction() >= 1 {
					t.Errorf("%s: runs of at most 5 steps did the passes' whole work", what)
				}
				if p.Copies != B*steps || p.Dense != float64(B*steps)*n.Cost() {
					t.Errorf("%s: path counts %d copies of work %g; want %d of %g", what, p.Copies, p.Dense, B*steps, float64(B*steps)*n.Cost())
				}
			}
		}
	}
}

// TestChainOutputsWork: a chain that replaces a run of 4 steps at a time
// on the deep residual net does a small share of the passes' work, and
// the share grows with the run's length; a chain of no edits does one
// pass of each input and gives the input's own output at every step.
func TestChainOutputsWork(t *testing.T) {
	s := Spec{Name: "deep", InChannels: 1, InLen: 400, Nodes: []Node{
		wnode("pad1", "pad", nil, map[string]any{"left": 3, "right": 4}),
		wnode("conv1", "conv1d", nil, map[string]any{"out": 8, "kernel": 8}),
		wnode("relu1", "relu", nil, nil),
		wnode("conv2", "conv1d", nil, map[string]any{"out": 8, "kernel": 5, "padding": []int64{2, 2}}),
		wnode("relu2", "relu", nil, nil),
		wnode("gap", "globalavgpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 3}),
	}}
	n := randomNet(t, s, 9)
	rng := rand.New(rand.NewPCG(9, 9))
	B, steps := 5, 20
	xs := randVec(rng, B*400)
	classes := []int{0, 1, 2, 0, 1}
	frac := func(run int) float64 {
		got := make([]float32, B*steps)
		p, err := n.ChainOutputs(got, xs, steps, classes, false, func(b, k int, cur []float32) (int, int) {
			lo := k * run
			for t := lo; t < lo+run; t++ {
				cur[t] = 0
			}
			return lo, lo + run
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.Fraction()
	}
	f4, f16 := frac(4), frac(16)
	// a step recomputes run + 11 steps of conv1's output of 400 and run +
	// 15 of conv2's (their fields), plus one pass of each input in 20 steps
	if f4 > 1/float64(steps)+20.0/400 || f4 < 1/float64(steps) {
		t.Errorf("runs of 4: %.3f of the passes' work; want between %.3f and %.3f", f4, 1/float64(steps), 1/float64(steps)+20.0/400)
	}
	if f16 <= f4 {
		t.Errorf("runs of 16 cost %.3f of the passes, runs of 4 %.3f: want more for the longer run", f16, f4)
	}
	got := make([]float32, B*steps)
	p, err := n.ChainOutputs(got, xs, steps, classes, false, func(int, int, []float32) (int, int) { return 0, 0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 / float64(steps); math.Abs(p.Fraction()-want) > 1e-12 {
		t.Errorf("no edits: %.4f of the passes' work; want one pass in %d steps, %.4f", p.Fraction(), steps, want)
	}
	probs := make([]float32, B*3)
	if err := n.ForwardUnfolded(probs, xs); err != nil {
		t.Fatal(err)
	}
	for b := range B {
		for k := range steps {
			if got[b*steps+k] != probs[b*3+classes[b]] {
				t.Fatalf("no edits: chain %d step %d gives %v; want the input's own %v", b, k, got[b*steps+k], probs[b*3+classes[b]])
			}
		}
	}
}

// TestChainOutputsErrors: bad inputs, classes and edits are errors that
// say what is wrong, and a bad call shape panics.
func TestChainOutputsErrors(t *testing.T) {
	n := randomNet(t, windowSpecs()[1], 3)
	in := n.InShape()
	x := make([]float32, 2*in.Size())
	none := func(int, int, []float32) (int, int) { return 0, 0 }
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"short input", func() error {
			_, err := n.ChainOutputs(make([]float32, 2), x[:in.Size()], 1, []int{0, 1}, false, none, nil)
			return err
		}, "need 2 inputs"},
		{"class", func() error {
			_, err := n.ChainOutputs(make([]float32, 2), x, 1, []int{0, 4}, false, none, nil)
			return err
		}, "chain 1: class 4"},
		{"nan input", func() error {
			y := append([]float32(nil), x...)
			y[in.Size()+3] = float32(math.NaN())
			_, err := n.ChainOutputs(make([]float32, 2), y, 1, []int{0, 1}, false, none, nil)
			return err
		}, "step 3"},
		{"nan edit", func() error {
			_, err := n.ChainOutputs(make([]float32, 4), x, 2, []int{0, 1}, false, func(b, k int, cur []float32) (int, int) {
				if b == 1 && k == 1 {
					cur[7] = float32(math.Inf(1))
					return 7, 8
				}
				return 0, 0
			}, nil)
			return err
		}, "chain 1 step 1: edited input value 7"},
	}
	for _, c := range cases {
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one saying %q", c.name, err, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a dst of the wrong length did not panic")
		}
	}()
	_, _ = n.ChainOutputs(make([]float32, 3), x, 1, []int{0, 1}, false, none, nil)
}
