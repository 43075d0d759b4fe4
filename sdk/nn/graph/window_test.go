package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func wnode(name, op string, inputs []string, attrs map[string]any) Node {
	return Node{Name: name, Op: op, Inputs: inputs, Attrs: attrs}
}

// windowSpecs are graphs covering what the incremental path handles:
// asymmetric padding, a pad value, stride, dilation, groups, max and
// average pooling with padding, a residual addition, a concatenation of
// branches with different kernels (InceptionTime's module), a softmax
// output, flatten.
func windowSpecs() []Spec {
	edges := Spec{Name: "edges", InChannels: 2, InLen: 37, Nodes: []Node{
		wnode("p0", "pad", nil, map[string]any{"left": 2, "right": 1, "value": 0.5}),
		wnode("c1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "stride": 2, "dilation": 2, "padding": []int64{3, 1}, "groups": 2}),
		wnode("r1", "relu", nil, nil),
		wnode("mp", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 2, "padding": 1}),
		wnode("ap", "avgpool1d", nil, map[string]any{"kernel": 2, "stride": 1, "padding": 1}),
		wnode("c2", "conv1d", nil, map[string]any{"out": 6, "kernel": 4, "padding": []int64{1, 2}}),
		wnode("bn", "batchnorm1d", nil, nil),
		wnode("lr", "leakyrelu", nil, map[string]any{"slope": 0.1}),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 3}),
	}}
	res := Spec{Name: "residual", InChannels: 1, InLen: 50, Nodes: []Node{
		wnode("b1.conv1", "conv1d", []string{"input"}, map[string]any{"out": 4, "kernel": 5, "padding": []int64{2, 2}}),
		wnode("b1.bn1", "batchnorm1d", nil, nil),
		wnode("b1.relu1", "relu", nil, nil),
		wnode("b1.conv2", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 1}}),
		wnode("b1.short", "conv1d", []string{"input"}, map[string]any{"out": 4, "kernel": 1}),
		wnode("b1.add", "add", []string{"b1.conv2", "b1.short"}, nil),
		wnode("b1.relu2", "relu", nil, nil),
		wnode("b2.conv1", "conv1d", nil, map[string]any{"out": 5, "kernel": 4, "stride": 2, "padding": []int64{1, 2}}),
		wnode("b2.gelu", "gelu", nil, nil),
		wnode("b2.conv2", "conv1d", nil, map[string]any{"out": 5, "kernel": 3, "dilation": 3, "padding": []int64{3, 3}}),
		wnode("b2.add", "add", []string{"b2.gelu", "b2.conv2"}, nil),
		wnode("gap", "globalavgpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 4}),
		wnode("probs", "softmax", nil, nil),
	}}
	inc := Spec{Name: "inception", InChannels: 2, InLen: 45, Nodes: []Node{}}
	prev := "input"
	for m := 1; m <= 2; m++ {
		p := fmt.Sprintf("inc%d.", m)
		inc.Nodes = append(inc.Nodes,
			wnode(p+"bottleneck", "conv1d", []string{prev}, map[string]any{"out": 3, "kernel": 1, "bias": false}),
			wnode(p+"convs.0", "conv1d", []string{p + "bottleneck"}, map[string]any{"out": 3, "kernel": 3, "padding": []int64{1, 1}, "bias": false}),
			wnode(p+"convs.1", "conv1d", []string{p + "bottleneck"}, map[string]any{"out": 3, "kernel": 7, "padding": []int64{3, 3}, "bias": false}),
			wnode(p+"convs.2", "conv1d", []string{p + "bottleneck"}, map[string]any{"out": 3, "kernel": 10, "padding": []int64{4, 5}, "bias": false}),
			wnode(p+"pool", "maxpool1d", []string{prev}, map[string]any{"kernel": 3, "stride": 1, "padding": 1}),
			wnode(p+"pconv", "conv1d", nil, map[string]any{"out": 3, "kernel": 1, "bias": false}),
			wnode(p+"cat", "concat", []string{p + "convs.0", p + "convs.1", p + "convs.2", p + "pconv"}, nil),
			wnode(p+"bn", "batchnorm1d", nil, nil),
			wnode(p+"relu", "relu", nil, nil),
		)
		prev = p + "relu"
	}
	inc.Nodes = append(inc.Nodes, wnode("gap", "globalavgpool", nil, nil), wnode("fc", "linear", nil, map[string]any{"out": 3}))
	return []Spec{edges, res, inc, residualConcatSpec(false), residualConcatSpec(true)}
}

// refProbs is p_class of every copy by one batched forward pass.
func refProbs(t *testing.T, n *Net, copies []float32, class int) []float32 {
	t.Helper()
	k := n.Classes()
	probs := make([]float32, len(copies)/n.InShape().Size()*k)
	if err := n.Forward(probs, copies); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(probs)/k)
	for j := range out {
		out[j] = probs[j*k+class]
	}
	return out
}

// windowCopies writes x with samples [s, s+width) of every channel
// replaced by z's (or the baseline), for each start s.
func windowCopies(x, z []float32, C, T int, starts []int, width int, baseline float32) []float32 {
	var out []float32
	for _, s := range starts {
		row := append([]float32(nil), x...)
		for c := 0; c < C; c++ {
			for t := s; t < s+width; t++ {
				if z != nil {
					row[c*T+t] = z[c*T+t]
				} else {
					row[c*T+t] = baseline
				}
			}
		}
		out = append(out, row...)
	}
	return out
}

// closeTo reports the largest difference of got and want relative to the
// largest probability of want, and whether it is at most tol.
func closeTo(got, want []float32, tol float64) (float64, bool) {
	var d, top float64
	for j := range want {
		d = max(d, math.Abs(float64(got[j]-want[j])))
		top = max(top, math.Abs(float64(want[j])))
	}
	return d / top, d <= tol*top
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestWindowProbsMatchesForward: on every graph, for windows of width 1,
// 3, about T/3 and T at every start (so at both edges), with a constant
// baseline and a baseline signal, WindowProbs equals forward passes of
// the occluded copies up to float32 rounding, and the work it reports is
// below the full passes' for a narrow window.
func TestWindowProbsMatchesForward(t *testing.T) {
	for si, spec := range windowSpecs() {
		n := randomNet(t, spec, uint64(40+si))
		in := n.InShape()
		rng := rand.New(rand.NewPCG(uint64(si), 2))
		x, z := randVec(rng, in.Size()), randVec(rng, in.Size())
		class := si % n.Classes()
		for _, width := range []int{1, 3, in.T / 3, in.T} {
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
				p, err := n.WindowProbs(got, x, zz, starts, width, -0.75, class)
				if err != nil {
					t.Fatal(err)
				}
				want := refProbs(t, n, windowCopies(x, zz, in.C, in.T, starts, width, -0.75), class)
				what := fmt.Sprintf("%s width %d signal %v (%v)", spec.Name, width, sig, p)
				if d, ok := closeTo(got, want, 2e-6); !ok {
					t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
				}
				if p.Copies != len(starts) || p.Dense != float64(len(starts))*n.Cost() {
					t.Errorf("%s: path counts %d copies of work %g; want %d of %g", what, p.Copies, p.Dense, len(starts), float64(len(starts))*n.Cost())
				}
				if width == 1 && (p.Incremental != p.Copies || p.Fraction() >= 1) {
					t.Errorf("%s: a one-step window took no incremental path", what)
				}
				if width == in.T && (p.Incremental != 0 || p.Fraction() != 1) {
					t.Errorf("%s: a window of the whole input took the incremental path", what)
				}
			}
		}
	}
}

// TestWindowProbsPathTaken: on a deep residual net (ResNet1D-like: 8/5/3
// convolutions in three blocks) of 400 steps, narrow windows are
// recomputed incrementally at well under half the full passes' work, in
// full from the global pool on, and the result equals forward passes.
func TestWindowProbsPathTaken(t *testing.T) {
	s := Spec{Name: "deep", InChannels: 1, InLen: 400}
	prev := "input"
	for b := 1; b <= 3; b++ {
		p := fmt.Sprintf("block%d.", b)
		s.Nodes = append(s.Nodes,
			wnode(p+"pad1", "pad", []string{prev}, map[string]any{"left": 3, "right": 4}),
			wnode(p+"conv1", "conv1d", nil, map[string]any{"out": 8, "kernel": 8}),
			wnode(p+"relu1", "relu", nil, nil),
			wnode(p+"conv2", "conv1d", nil, map[string]any{"out": 8, "kernel": 5, "padding": []int64{2, 2}}),
			wnode(p+"relu2", "relu", nil, nil),
			wnode(p+"conv3", "conv1d", nil, map[string]any{"out": 8, "kernel": 3, "padding": []int64{1, 1}}),
			wnode(p+"short", "conv1d", []string{prev}, map[string]any{"out": 8, "kernel": 1}),
			wnode(p+"add", "add", []string{p + "conv3", p + "short"}, nil),
			wnode(p+"relu", "relu", nil, nil),
		)
		prev = p + "relu"
	}
	s.Nodes = append(s.Nodes, wnode("gap", "globalavgpool", nil, nil), wnode("fc", "linear", nil, map[string]any{"out": 3}))
	n := randomNet(t, s, 7)
	rng := rand.New(rand.NewPCG(3, 3))
	x := randVec(rng, 400)
	var starts []int
	for st := 0; st+20 <= 400; st += 10 {
		starts = append(starts, st)
	}
	got := make([]float32, len(starts))
	p, err := n.WindowProbs(got, x, nil, starts, 20, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A window of 20 grows by 7+4+2 steps a block: at most 20+39 of 400
	// steps a node, plus the unperturbed pass.
	bound := (float64(len(starts))*(20+39)/400 + 1) / float64(len(starts))
	if p.Incremental != len(starts) || p.Full != "gap" || p.Fraction() > bound {
		t.Errorf("path %v: want every copy incremental, in full from \"gap\", at most %.3f of the work", p, bound)
	}
	want := refProbs(t, n, windowCopies(x, nil, 1, 400, starts, 20, 0), 1)
	if d, ok := closeTo(got, want, 2e-6); !ok {
		t.Errorf("differs from forward passes by %.3g of the largest probability", d)
	}
	// The same bytes on a second call.
	again := make([]float32, len(starts))
	if _, err := n.WindowProbs(again, x, nil, starts, 20, 0, 1); err != nil {
		t.Fatal(err)
	}
	for j := range got {
		if math.Float32bits(got[j]) != math.Float32bits(again[j]) {
			t.Fatalf("window %d: %v, then %v", j, got[j], again[j])
		}
	}
}

// TestWindowProbsFallback: a local op whose padding the incremental path
// cannot write out (a replicating pad, unknown to it) is computed in full
// for every copy from that node on, and the result still equals forward
// passes.
func TestWindowProbsFallback(t *testing.T) {
	list := opList()
	list = append(list, &Op{
		Kind: "reppad", Inputs: 1,
		Shape: func(_ Attrs, in []Shape) (Shape, error) { return Shape{in[0].C, in[0].T + 1}, nil },
		Field: func(Attrs) Field { return Field{Local: true, Kernel: 1, Stride: 1, Dilation: 1, PadLeft: 1} },
		Forward: func(c *Call) {
			T := c.In[0].T
			for r := 0; r < len(c.X[0])/T; r++ {
				c.Y[r*(T+1)] = c.X[0][r*T]
				copy(c.Y[r*(T+1)+1:(r+1)*(T+1)], c.X[0][r*T:(r+1)*T])
			}
		},
	})
	// Most of the work is before the pad, so that the incremental path
	// pays.
	spec := Spec{Name: "fallback", InChannels: 1, InLen: 30, Nodes: []Node{
		wnode("c1", "conv1d", nil, map[string]any{"out": 8, "kernel": 3, "padding": []int64{1, 1}}),
		wnode("c2", "conv1d", nil, map[string]any{"out": 8, "kernel": 5, "padding": []int64{2, 2}}),
		wnode("rp", "reppad", nil, nil),
		wnode("c3", "conv1d", nil, map[string]any{"out": 2, "kernel": 2}),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 2}),
	}}
	n, err := compile(spec, newTable(list))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range n.Theta {
		n.Theta[i] = float32(rng.NormFloat64() * 0.4)
	}
	x := randVec(rng, 30)
	starts := []int{0, 4, 13, 27}
	got := make([]float32, len(starts))
	p, err := n.WindowProbs(got, x, nil, starts, 3, 1.5, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Full != "rp" || p.Incremental != len(starts) {
		t.Errorf("path %v: want it incremental, in full from node \"rp\"", p)
	}
	want := refProbs(t, n, windowCopies(x, nil, 1, 30, starts, 3, 1.5), 0)
	if d, ok := closeTo(got, want, 2e-6); !ok {
		t.Errorf("differs from forward passes by %.3g of the largest probability", d)
	}
}

// TestSpanProbsMatchesForward: copies with spans set to the baseline in
// one channel or every channel, overlapping and in any order, narrow
// (incremental) and LIME-like (half of 8 features of every channel: as
// dear as forward passes, which are taken), equal forward passes.
func TestSpanProbsMatchesForward(t *testing.T) {
	for si, spec := range windowSpecs() {
		n := randomNet(t, spec, uint64(60+si))
		in := n.InShape()
		rng := rand.New(rand.NewPCG(uint64(si), 7))
		x := randVec(rng, in.Size())
		for _, wide := range []bool{false, true} {
			var spans [][]ChannelSpan
			for range 70 {
				var sp []ChannelSpan
				if wide {
					f := (in.T + 7) / 8
					for j := range 8 {
						if rng.IntN(2) == 0 {
							sp = append(sp, ChannelSpan{AllChannels, j * f, min((j+1)*f, in.T)})
						}
					}
				} else {
					for range rng.IntN(3) {
						lo := rng.IntN(in.T)
						sp = append(sp, ChannelSpan{rng.IntN(in.C+1) - 1, lo, min(lo+1+rng.IntN(4), in.T)})
					}
				}
				spans = append(spans, sp)
			}
			got := make([]float32, len(spans))
			p, err := n.SpanProbs(got, x, spans, 0.25, 1)
			if err != nil {
				t.Fatal(err)
			}
			var copies []float32
			for _, sp := range spans {
				row := append([]float32(nil), x...)
				for _, s := range sp {
					for c := 0; c < in.C; c++ {
						if s.Ch == AllChannels || s.Ch == c {
							for t := s.Lo; t < s.Hi; t++ {
								row[c*in.T+t] = 0.25
							}
						}
					}
				}
				copies = append(copies, row...)
			}
			want := refProbs(t, n, copies, 1)
			what := fmt.Sprintf("%s wide %v (%v)", spec.Name, wide, p)
			if d, ok := closeTo(got, want, 2e-6); !ok {
				t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
			}
			if !wide && p.Incremental != p.Copies {
				t.Errorf("%s: narrow spans took forward passes", what)
			}
		}
	}
}

// TestWindowProbsErrors: bad arguments are errors saying what is
// accepted.
func TestWindowProbsErrors(t *testing.T) {
	n := randomNet(t, windowSpecs()[0], 1)
	in := n.InShape()
	x := make([]float32, in.Size())
	dst := make([]float32, 2)
	nan := float32(nanValue())
	bad := append([]float32(nil), x...)
	bad[in.T+3] = nan
	cases := []struct {
		name string
		err  func() error
		want []string
	}{
		{"short input", func() error { _, err := n.WindowProbs(dst, x[1:], nil, []int{0}, 2, 0, 0); return err }, []string{"73 values", "74"}},
		{"short signal", func() error { _, err := n.WindowProbs(dst, x, x[1:], []int{0}, 2, 0, 0); return err }, []string{"baseline signal of 73", "74"}},
		{"NaN input", func() error { _, err := n.WindowProbs(dst, bad, nil, []int{0}, 2, 0, 0); return err }, []string{"input value 40 (channel 1, step 3)", "NaN", "finite"}},
		{"NaN signal", func() error { _, err := n.WindowProbs(dst, x, bad, []int{0}, 2, 0, 0); return err }, []string{"baseline signal value 40", "finite"}},
		{"NaN baseline", func() error { _, err := n.WindowProbs(dst, x, nil, []int{0}, 2, nan, 0); return err }, []string{"baseline NaN", "finite"}},
		{"width 0", func() error { _, err := n.WindowProbs(dst, x, nil, []int{0}, 0, 0, 0); return err }, []string{"width 0", "1 <= width <= 37"}},
		{"window past the end", func() error { _, err := n.WindowProbs(dst, x, nil, []int{0, 36}, 2, 0, 0); return err }, []string{"window 1 starts at 36", "0 <= start <= 35"}},
		{"negative start", func() error { _, err := n.WindowProbs(dst, x, nil, []int{-1}, 2, 0, 0); return err }, []string{"window 0 starts at -1"}},
		{"class", func() error { _, err := n.WindowProbs(dst, x, nil, []int{0}, 2, 0, 3); return err }, []string{"class 3", "0 <= class < 3"}},
		{"span channel", func() error {
			_, err := n.SpanProbs(dst, x, [][]ChannelSpan{{{2, 0, 1}}}, 0, 0)
			return err
		}, []string{"perturbation 0", "channel -1 (every channel) or 0..1"}},
		{"span order", func() error {
			_, err := n.SpanProbs(dst, x, [][]ChannelSpan{nil, {{0, 5, 4}}}, 0, 0)
			return err
		}, []string{"perturbation 1", "0 <= Lo <= Hi <= 37"}},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.err(), c.want)
	}
}

// TestWindowProbsAllocations: once the workspace is built, a call
// allocates the same for 10 windows as for 200 (nothing a window or a
// batch).
func TestWindowProbsAllocations(t *testing.T) {
	n := randomNet(t, windowSpecs()[2], 3)
	in := n.InShape()
	x := randVec(rand.New(rand.NewPCG(1, 1)), in.Size())
	allocs := func(windows int) float64 {
		starts := make([]int, windows)
		for j := range starts {
			starts[j] = j % (in.T - 4)
		}
		dst := make([]float32, windows)
		return testing.AllocsPerRun(5, func() {
			if _, err := n.WindowProbs(dst, x, x, starts, 4, 0, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
	allocs(200)
	if a, b := allocs(10), allocs(200); a != b {
		t.Errorf("%v allocations for 10 windows, %v for 200", a, b)
	}
}
