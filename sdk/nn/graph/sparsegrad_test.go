package graph

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// sparseSpec is the paper network's pattern in small: convolutions with
// ReLUs, a max pool and batchnorm, then two convolutions (one padded)
// with ReLUs before a global max pool, batchnorm and a linear head. With
// act "leakyrelu" the last activation does not take a sparse gradient
// (the hot gradient is formed); with extra set the global max pool's
// input is read twice (no hot gradient).
func sparseSpec(act string, extra bool) Spec {
	n := func(name, op string, inputs []string, attrs map[string]any) Node {
		return Node{Name: name, Op: op, Inputs: inputs, Attrs: attrs}
	}
	nodes := []Node{
		n("c1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3}),
		n("r1", "relu", nil, nil),
		n("mp", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 1}),
		n("bn1", "batchnorm1d", nil, nil),
		n("c3", "conv1d", nil, map[string]any{"out": 6, "kernel": 3, "padding": []int64{1, 2}}),
		n("r3", "relu", nil, nil),
		n("c4", "conv1d", nil, map[string]any{"out": 5, "kernel": 3}),
		n("r4", act, nil, nil),
		n("gmp", "globalmaxpool", nil, nil),
	}
	if extra {
		nodes = append(nodes, n("gap", "globalavgpool", []string{"r4"}, nil), n("sum", "add", []string{"gmp", "gap"}, nil))
	}
	nodes = append(nodes,
		n("bn2", "batchnorm1d", nil, nil),
		n("fc", "linear", nil, map[string]any{"out": 3}))
	return Spec{Name: "sparse", InChannels: 2, InLen: 60, Nodes: nodes}
}

// sparseCounts runs a training pass and its backward on net and counts
// the nodes that took a hot and a steps gradient.
func sparseCounts(t *testing.T, net *Net, B int) (hot, steps int) {
	t.Helper()
	net.backwardHook = func(_ int, c *Call) {
		if c.HotAt != nil {
			hot++
		}
		if c.Steps != nil {
			steps++
		}
	}
	defer func() { net.backwardHook = nil }()
	passes(t, net, B, true)
	return hot, steps
}

// TestSparseTrainingMatchesDense: a training pass that hands gradients
// on sparse (sparsegrad.go) gives the outputs and running statistics of
// the one that forms every gradient bit for bit, and its parameter and
// input gradients up to rounding (the sums skip exact zeros in another
// order), with the ReLUs folded into their convolutions or not; and the
// sparse path is taken where the op table allows it and not elsewhere.
func TestSparseTrainingMatchesDense(t *testing.T) {
	const B = 7
	for _, tc := range []struct {
		act        string
		extra      bool
		hot, steps bool
	}{
		{"relu", false, true, true},
		{"leakyrelu", false, false, false},
		{"relu", true, false, false},
	} {
		for _, fused := range []bool{true, false} {
			spec := sparseSpec(tc.act, tc.extra)
			ref := randomNet(t, spec, 3)
			net := randomNet(t, spec, 3)
			ref.denseGrads = true
			if !fused {
				ref.unfuse()
				net.unfuse()
			}
			hot, steps := sparseCounts(t, net, B)
			if (hot > 0) != tc.hot || (steps > 0) != tc.steps {
				t.Errorf("%s extra %v fused %v: %d nodes took a hot gradient, %d a steps one; want some: %v, %v", tc.act, tc.extra, fused, hot, steps, tc.hot, tc.steps)
			}
			net = randomNet(t, spec, 3)
			if !fused {
				net.unfuse()
			}
			want, got := passes(t, ref, B, true, true), passes(t, net, B, true, true)
			for k := range want {
				what := []string{"output", "dTheta", "dx", "Theta"}[k%4]
				if k%4 == 0 || k%4 == 3 {
					if !slices.Equal(got[k], want[k]) {
						t.Errorf("%s fused %v pass %d: %s differs from the dense pass's", tc.act, fused, k/4, what)
					}
					continue
				}
				scale := 0.0
				for _, v := range want[k] {
					scale = max(scale, math.Abs(float64(v)))
				}
				if scale == 0 {
					t.Fatalf("%s: zero %s: the test compares nothing", tc.act, what)
				}
				for j := range want[k] {
					if d := math.Abs(float64(got[k][j] - want[k][j])); !(d <= 1e-5*scale) {
						t.Errorf("%s fused %v pass %d: %s[%d] = %v, dense %v", tc.act, fused, k/4, what, j, got[k][j], want[k][j])
						break
					}
				}
			}
		}
	}
}

// TestSparseTrainingSameBits: the sparse training backward gives the
// same bytes with the ReLUs folded or not and on 1 or 2 workers (the
// chunks' split depends on the batch only), twice in a row.
func TestSparseTrainingSameBits(t *testing.T) {
	const B = 9
	pass := func(fused bool, workers int) [][]float32 {
		net := randomNet(t, sparseSpec("relu", false), 5)
		if !fused {
			net.unfuse()
		}
		net.Workers = workers
		return passes(t, net, B, true, true)
	}
	want := pass(false, 1)
	for _, c := range []struct {
		fused   bool
		workers int
	}{{true, 1}, {true, 2}, {false, 2}} {
		got := pass(c.fused, c.workers)
		for k := range want {
			if !slices.Equal(got[k], want[k]) {
				t.Errorf("fused %v, %d workers: result %d (pass %d: output, dTheta, dx, Theta) differs from the unfused pass on 1 worker", c.fused, c.workers, k, k/4)
			}
		}
	}
}

// TestTrainStepAllocs: a training step (Run and Backprop) allocates
// nothing once its buffers exist, sparse gradients included, on 1 and 2
// workers (the helpers of stage.go are started by the first step).
func TestTrainStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers: allocation counts say nothing")
	}
	for _, workers := range []int{1, 2} {
		net := randomNet(t, sparseSpec("relu", false), 2)
		net.Workers = workers
		const B = 8
		x := make([]float32, B*net.InShape().Size())
		for j := range x {
			x[j] = float32(j%11)/5 - 1
		}
		dOut := make([]float32, B*net.Classes())
		for j := range dOut {
			dOut[j] = float32(j%3) - 1
		}
		gp, gx := make([]float32, net.NumParams()), make([]float32, len(x))
		rnd := rand.New(rand.NewPCG(1, 2))
		step := func() {
			if _, err := net.Run(x, true, rnd); err != nil {
				t.Fatal(err)
			}
			net.Backprop(dOut, gp, gx)
		}
		hot, steps := sparseCounts(t, net, B)
		if hot == 0 || steps == 0 {
			t.Fatalf("the step takes no sparse gradient (%d hot, %d steps): the test measures the dense path", hot, steps)
		}
		step()
		if a := testing.AllocsPerRun(10, step); a != 0 {
			t.Errorf("%d workers: %v allocations per training step", workers, a)
		}
	}
}

// ownGradBuffers gives every value's gradient a buffer of its own (no
// slot shared by liveness): the reference of the training runs' buffer
// claims (samples.go).
func (n *Net) ownGradBuffers() {
	n.bwdSlot, n.bwdSize = make([]int, len(n.shapes)), make([]int, len(n.shapes))
	for v := 1; v < len(n.shapes); v++ {
		n.bwdSlot[v], n.bwdSize[v] = v, n.shapes[v].Size()
	}
	n.ws = nil
}

// TestTrainingRunsShareNoBuffer: a training pass on the liveness plan's
// shared gradient buffers gives the bytes of one whose every gradient
// has its own (a run that let two values of different sizes share a
// buffer would mix their samples), on residual and concatenating graphs
// and the golden networks, on 1 and 2 workers.
func TestTrainingRunsShareNoBuffer(t *testing.T) {
	specs := []Spec{fuseSpec(), residualConcatSpec(false), residualConcatSpec(true), sparseSpec("relu", true)}
	for _, name := range []string{"resnet1d", "inceptiontime"} {
		spec, err := ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", name+".toml"))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	for _, spec := range specs {
		for _, workers := range []int{1, 2} {
			net, own := randomNet(t, spec, 4), randomNet(t, spec, 4)
			net.Workers, own.Workers = workers, workers
			own.ownGradBuffers()
			want, got := passes(t, own, 6, true, true), passes(t, net, 6, true, true)
			for k := range want {
				if !slices.Equal(got[k], want[k]) {
					t.Errorf("%s, %d workers: result %d (pass %d: output, dTheta, dx, Theta) differs with buffers of its own", spec.Name, workers, k, k/4)
				}
			}
		}
	}
}
