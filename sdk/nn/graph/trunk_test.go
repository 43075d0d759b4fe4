package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// trunkSpecs are graphs with a trunk plan: the windows' "edges" graph (2
// channels, pads, stride, dilation, groups, pools with padding), a
// paper-like network on 3 channels with a head of batchnorm, linear and
// ReLU layers, and a residual trunk with a softmax output.
func trunkSpecs() []Spec {
	paper := Spec{Name: "paper3", InChannels: 3, InLen: 41, Nodes: []Node{
		wnode("conv1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1}),
		wnode("relu1", "relu", nil, nil),
		wnode("conv2", "conv1d", nil, map[string]any{"out": 5, "kernel": 3}),
		wnode("relu2", "relu", nil, nil),
		wnode("pool", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 1}),
		wnode("bn1", "batchnorm1d", nil, nil),
		wnode("conv3", "conv1d", nil, map[string]any{"out": 6, "kernel": 3, "dilation": 2}),
		wnode("relu3", "relu", nil, nil),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("bn2", "batchnorm1d", nil, nil),
		wnode("flat", "flatten", nil, nil),
		wnode("fc1", "linear", nil, map[string]any{"out": 9}),
		wnode("relu5", "relu", nil, nil),
		wnode("bn3", "batchnorm1d", nil, nil),
		wnode("fc2", "linear", nil, map[string]any{"out": 4}),
	}}
	res := Spec{Name: "res-gmp", InChannels: 1, InLen: 30, Output: "probs", Nodes: []Node{
		wnode("a", "conv1d", nil, map[string]any{"out": 3, "kernel": 3, "padding": []int64{1, 1}}),
		wnode("ar", "relu", nil, nil),
		wnode("s", "conv1d", []string{"input"}, map[string]any{"out": 3, "kernel": 1}),
		wnode("add", "add", []string{"ar", "s"}, nil),
		wnode("d", "conv1d", nil, map[string]any{"out": 4, "kernel": 4, "stride": 2}),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 5}),
		wnode("lr", "leakyrelu", nil, map[string]any{"slope": 0.2}),
		wnode("fc2", "linear", nil, map[string]any{"out": 3}),
		wnode("probs", "softmax", nil, nil),
	}}
	// Every trunk node of stride 1 (the boundary plan on planes): a
	// residual join of a shortcut whose steps are never dirty, asymmetric
	// padding, a padded max pool, dilation.
	res1 := Spec{Name: "res-s1", InChannels: 2, InLen: 36, Nodes: []Node{
		wnode("a", "conv1d", nil, map[string]any{"out": 3, "kernel": 3, "padding": []int64{2, 0}}),
		wnode("ar", "relu", nil, nil),
		wnode("s", "conv1d", []string{"input"}, map[string]any{"out": 3, "kernel": 1}),
		wnode("add", "add", []string{"ar", "s"}, nil),
		wnode("mp", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 1, "padding": 1}),
		wnode("d", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "dilation": 2, "padding": []int64{2, 2}}),
		wnode("g", "gelu", nil, nil),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 3}),
	}}
	return []Spec{windowSpecs()[0], paper, res, res1}
}

// plainProb is p_class(x) by ForwardUnfolded.
func plainProb(t *testing.T, n *Net, x []float32, class int) float32 {
	t.Helper()
	p := make([]float32, n.Classes())
	if err := n.ForwardUnfolded(p, x); err != nil {
		t.Fatal(err)
	}
	return p[class]
}

// TestWindowProbsCachedMatchesForward: on every trunk graph, for windows
// of width 1, 2, about T/3 and T at every start (both edges included),
// with a constant baseline and a baseline signal, WindowProbsCached
// equals forward passes of the occluded copies up to float32 rounding,
// and its unperturbed probability is ForwardUnfolded's bit for bit.
func TestWindowProbsCachedMatchesForward(t *testing.T) {
	for si, spec := range trunkSpecs() {
		n := randomNet(t, spec, uint64(70+si))
		if n.PooledLen() == 0 {
			t.Fatalf("%s: no trunk plan", spec.Name)
		}
		in := n.InShape()
		rng := rand.New(rand.NewPCG(uint64(si), 9))
		x, z := randVec(rng, in.Size()), randVec(rng, in.Size())
		class := (si + 1) % n.Classes()
		for _, width := range []int{1, 2, in.T / 3, in.T} {
			var starts []int
			for s := 0; s+width <= in.T; s++ {
				starts = append(starts, s)
			}
			for _, sig := range []bool{false, true} {
				zz := z
				if !sig {
					zz = nil
				}
				got := make([]float32, len(starts))
				p0, p, err := n.WindowProbsCached(got, x, zz, starts, width, -0.75, class, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := refProbs(t, n, windowCopies(x, zz, in.C, in.T, starts, width, -0.75), class)
				what := fmt.Sprintf("%s width %d signal %v (%v)", spec.Name, width, sig, p)
				if d, ok := closeTo(got, want, 2e-6); !ok {
					t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
				}
				if pp := plainProb(t, n, x, class); math.Float32bits(p0) != math.Float32bits(pp) {
					t.Errorf("%s: unperturbed probability %v, ForwardUnfolded's %v", what, p0, pp)
				}
				if p.Copies != len(starts) {
					t.Errorf("%s: path counts %d copies, want %d", what, p.Copies, len(starts))
				}
			}
		}
	}
}

// TestTrunkCacheSharedOnlyBySameTrunk: a network that differs from
// another only after the global max pool (an MC-dropout draw) reads its
// entry and gets the bytes it computes without the cache; one whose trunk
// differs by one ulp of one parameter, or by an attribute, or that is
// asked about another input, width or baseline, misses and gets its own
// result.
func TestTrunkCacheSharedOnlyBySameTrunk(t *testing.T) {
	spec := trunkSpecs()[1]
	a := randomNet(t, spec, 5)
	in := a.InShape()
	rng := rand.New(rand.NewPCG(1, 2))
	x := randVec(rng, in.Size())
	starts := []int{0, 3, 10, in.T - 7}
	const width = 7
	clone := func(s Spec) *Net {
		n, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		copy(n.Theta, a.Theta)
		return n
	}
	param := func(n *Net, name string) []float32 {
		for _, p := range n.Params() {
			if p.Name == name {
				return n.Theta[p.Offset : p.Offset+p.Len]
			}
		}
		t.Fatalf("no parameter %s", name)
		return nil
	}
	head := clone(spec) // another draw: fc2 differs
	for i := range param(head, "fc2.weight") {
		param(head, "fc2.weight")[i] *= 0.5
	}
	ulp := clone(spec) // a trunk parameter one ulp away
	w := param(ulp, "conv3.weight")
	w[2] = math.Nextafter32(w[2], float32(math.Inf(1)))
	attr := spec // a trunk attribute differs: conv1's padding
	attr.Nodes = append([]Node(nil), spec.Nodes...)
	attr.Nodes[0] = wnode("conv1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": []int64{2, 0}})
	other := clone(attr)

	c := NewTrunkCache(1 << 20)
	run := func(n *Net, x []float32, width int, baseline float32, cache *TrunkCache) ([]float32, float32) {
		t.Helper()
		got := make([]float32, len(starts))
		p0, _, err := n.WindowProbsCached(got, x, nil, starts, width, baseline, 1, cache)
		if err != nil {
			t.Fatal(err)
		}
		return got, p0
	}
	same := func(what string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s: copy %d: %v with the cache, %v without", what, i, a[i], b[i])
			}
		}
	}
	run(a, x, width, 0, c)
	if h, m := c.Stats(); h != 0 || m != 1 {
		t.Fatalf("first lookup: %d hits %d misses", h, m)
	}
	got, p0 := run(head, x, width, 0, c)
	if h, _ := c.Stats(); h != 1 {
		t.Fatalf("a draw differing after the pool missed the entry (%d hits)", h)
	}
	want, wp0 := run(head, x, width, 0, nil)
	same("same trunk", append(got, p0), append(want, wp0))
	x2 := append([]float32(nil), x...)
	x2[5] = math.Nextafter32(x2[5], 10)
	for _, k := range []struct {
		what     string
		n        *Net
		x        []float32
		width    int
		baseline float32
	}{
		{"a trunk parameter one ulp away", ulp, x, width, 0},
		{"a trunk attribute differs", other, x, width, 0},
		{"an input one ulp away", head, x2, width, 0},
		{"another width", head, x, width - 1, 0},
		{"another baseline", head, x, width, 0.5},
	} {
		h0, _ := c.Stats()
		got, p0 := run(k.n, k.x, k.width, k.baseline, c)
		if h, _ := c.Stats(); h != h0 {
			t.Errorf("%s: read another network's or input's entry", k.what)
		}
		want, wp0 := run(k.n, k.x, k.width, k.baseline, nil)
		same(k.what, append(got, p0), append(want, wp0))
	}
	h0, _ := c.Stats() // the same network after its trunk changed in place
	w2 := param(head, "conv1.weight")
	w2[0] = math.Nextafter32(w2[0], float32(math.Inf(-1)))
	got, p0 = run(head, x, width, 0, c)
	if h, _ := c.Stats(); h != h0 {
		t.Error("a network whose trunk changed in place read its old entry")
	}
	want, wp0 = run(head, x, width, 0, nil)
	same("a trunk changed in place", append(got, p0), append(want, wp0))
	if _, _, err := randomNet(t, windowSpecs()[1], 1).WindowProbsCached(make([]float32, 1), make([]float32, 50), nil, []int{0}, 3, 0, 0, c); err == nil {
		t.Error("a network without a global max pool took WindowProbsCached")
	}
}

// TestTrunkCacheEvicts: entries beyond the limit are dropped, least
// recently used first, and an entry larger than the limit is not kept.
func TestTrunkCacheEvicts(t *testing.T) {
	n := randomNet(t, trunkSpecs()[1], 3)
	in := n.InShape()
	rng := rand.New(rand.NewPCG(3, 4))
	starts := []int{0, 1, 2}
	xs := [][]float32{randVec(rng, in.Size()), randVec(rng, in.Size()), randVec(rng, in.Size())}
	one := int64(4*in.Size() + 8*len(starts) + 4*(len(starts)+1)*n.PooledLen() + 160)
	c := NewTrunkCache(2 * one)
	look := func(x []float32) bool {
		h0, _ := c.Stats()
		if _, _, err := n.WindowProbsCached(make([]float32, 3), x, nil, starts, 2, 0, 0, c); err != nil {
			t.Fatal(err)
		}
		h, _ := c.Stats()
		return h > h0
	}
	look(xs[0])
	look(xs[1])
	if !look(xs[0]) { // xs[0] most recent now
		t.Fatal("a stored entry missed")
	}
	look(xs[2]) // evicts xs[1]
	if look(xs[1]) {
		t.Error("the least recently used entry was kept beyond the limit")
	}
	if !look(xs[2]) {
		t.Error("a recent entry was dropped")
	}
	small := NewTrunkCache(one - 1)
	for range 2 {
		if _, _, err := n.WindowProbsCached(make([]float32, 3), xs[0], nil, starts, 2, 0, 0, small); err != nil {
			t.Fatal(err)
		}
	}
	if h, m := small.Stats(); h != 0 || m != 2 {
		t.Errorf("an entry above the limit was kept: %d hits %d misses", h, m)
	}
}

// TestHeadColumnsBits: the head in columns gives each pooled vector
// equal to the reference (the unperturbed input's) the bits of the head
// run a vector at a time by the ops' Forward, and every other vector
// those up to float32 rounding (the float32 exponential).
func TestHeadColumnsBits(t *testing.T) {
	for si, spec := range trunkSpecs() {
		n := randomNet(t, spec, uint64(90+si))
		p := n.trunk()
		if !p.columns {
			t.Fatalf("%s: the head does not run in columns", spec.Name)
		}
		rng := rand.New(rand.NewPCG(uint64(si), 3))
		N := 2*headBatch + 7
		pooled := randVec(rng, N*p.P)
		ref := append([]float32(nil), pooled[5*p.P:6*p.P]...)
		for j := 0; j < N; j += 3 {
			copy(pooled[j*p.P:], ref)
		}
		cols, rows := make([]float32, N), make([]float32, N)
		if err := n.headProbs(cols, pooled, ref, 0); err != nil {
			t.Fatal(err)
		}
		p.columns = false
		if err := n.headProbs(rows, pooled, nil, 0); err != nil {
			t.Fatal(err)
		}
		p.columns = true
		for j := range cols {
			if sameBits(pooled[j*p.P:(j+1)*p.P], ref) && math.Float32bits(cols[j]) != math.Float32bits(rows[j]) {
				t.Fatalf("%s: vector %d (the reference): %v in columns, %v by rows", spec.Name, j, cols[j], rows[j])
			}
		}
		if d, ok := closeTo(cols, rows, 1e-6); !ok {
			t.Errorf("%s: columns differ from rows by %.3g of the largest probability", spec.Name, d)
		}
	}
}

// TestTrunkPlanWhere: the plan is found where the output reads the input
// only through a global max pool after local nodes of one stride, and
// nowhere else; a pool on the input itself (an empty trunk) computes
// like the rest.
func TestTrunkPlanWhere(t *testing.T) {
	conv := func(name string, in []string, k, s int) Node {
		return wnode(name, "conv1d", in, map[string]any{"out": 2, "kernel": k, "stride": s})
	}
	for _, c := range []struct {
		spec  Spec
		plan  bool
		reach int
	}{
		{Spec{Name: "gap", InChannels: 1, InLen: 20, Nodes: []Node{conv("c", nil, 3, 1), wnode("g", "globalavgpool", nil, nil), wnode("fc", "linear", nil, map[string]any{"out": 2})}}, false, 0},
		{Spec{Name: "skip-around", InChannels: 1, InLen: 20, Nodes: []Node{conv("c", nil, 3, 1), wnode("m", "globalmaxpool", nil, nil),
			wnode("a", "globalavgpool", []string{"c"}, nil), wnode("s", "add", []string{"m", "a"}, nil), wnode("fc", "linear", nil, map[string]any{"out": 2})}}, false, 0},
		{Spec{Name: "strides", InChannels: 1, InLen: 20, Nodes: []Node{conv("a", []string{"input"}, 1, 1), conv("b", []string{"input"}, 2, 2),
			conv("a2", []string{"a"}, 2, 2), wnode("cat", "concat", []string{"a2", "b"}, nil), wnode("m", "globalmaxpool", nil, nil), wnode("fc", "linear", nil, map[string]any{"out": 2})}}, true, 2},
		{Spec{Name: "mixed-strides", InChannels: 1, InLen: 20, Nodes: []Node{conv("a", []string{"input"}, 2, 2), conv("b", []string{"input"}, 1, 1),
			conv("b2", []string{"b"}, 11, 1), wnode("cat", "concat", []string{"a", "b2"}, nil), wnode("m", "globalmaxpool", nil, nil), wnode("fc", "linear", nil, map[string]any{"out": 2})}}, false, 0},
		{Spec{Name: "odd-join", InChannels: 1, InLen: 20, Nodes: []Node{conv("a", []string{"input"}, 3, 1), conv("b", []string{"input"}, 2, 2),
			wnode("pa", "maxpool1d", []string{"a"}, map[string]any{"kernel": 2, "stride": 1}), conv("b2", []string{"b"}, 1, 1),
			wnode("m1", "globalmaxpool", []string{"pa"}, nil), wnode("m2", "globalmaxpool", []string{"b2"}, nil), wnode("s", "add", []string{"m1", "m2"}, nil), wnode("fc", "linear", nil, map[string]any{"out": 2})}}, false, 0},
		{Spec{Name: "pool-first", InChannels: 2, InLen: 20, Nodes: []Node{wnode("m", "globalmaxpool", nil, nil), wnode("fc", "linear", nil, map[string]any{"out": 3})}}, true, 1},
	} {
		n := randomNet(t, c.spec, 4)
		p := n.trunk()
		if (p != nil) != c.plan {
			t.Errorf("%s: plan %v, want %v", c.spec.Name, p != nil, c.plan)
			continue
		}
		if p == nil {
			if n.PooledLen() != 0 {
				t.Errorf("%s: PooledLen %d without a plan", c.spec.Name, n.PooledLen())
			}
			if _, err := n.TrunkDigest(); err == nil {
				t.Errorf("%s: a digest without a trunk", c.spec.Name)
			}
			continue
		}
		if p.reach() != c.reach {
			t.Errorf("%s: reach %d, want %d", c.spec.Name, p.reach(), c.reach)
		}
		in := n.InShape()
		rng := rand.New(rand.NewPCG(4, 5))
		x := randVec(rng, in.Size())
		for _, width := range []int{1, 5} {
			var starts []int
			for s := 0; s+width <= in.T; s++ {
				starts = append(starts, s)
			}
			got := make([]float32, len(starts))
			if _, _, err := n.WindowProbsCached(got, x, nil, starts, width, 0.5, 1, nil); err != nil {
				t.Fatal(err)
			}
			want := refProbs(t, n, windowCopies(x, nil, in.C, in.T, starts, width, 0.5), 1)
			if d, ok := closeTo(got, want, 2e-6); !ok {
				t.Errorf("%s width %d: differs from forward passes by %.3g", c.spec.Name, width, d)
			}
		}
	}
}
