package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// edgesUsed reports how many boundaries the last call's boundary plan
// computed (0: it did not run).
func edgesUsed(n *Net) int {
	if n.win == nil || n.win.edge == nil {
		return 0
	}
	k := len(n.win.edge.list)
	n.win.edge.list = n.win.edge.list[:0]
	return k
}

// TestEdgesWindowsMatchForward: on every trunk graph (multichannel
// inputs, pads, strides, dilation, a residual join), windows at least
// the trunk's reach-1 wide, at every start (both edges), with a constant
// baseline and a baseline signal, take the boundary plan and equal
// forward passes of the occluded copies up to float32 rounding.
func TestEdgesWindowsMatchForward(t *testing.T) {
	for si, spec := range trunkSpecs() {
		n := randomNet(t, spec, uint64(20+si))
		in := n.InShape()
		R := n.trunk().reach()
		rng := rand.New(rand.NewPCG(uint64(si), 21))
		x, z := randVec(rng, in.Size()), randVec(rng, in.Size())
		for _, width := range []int{R - 1, R, in.T / 2} {
			if width < R-1 || width >= in.T {
				continue
			}
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
				p, err := n.WindowProbs(got, x, zz, starts, width, 0.3, 0)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s width %d (reach %d) signal %v (%v)", spec.Name, width, R, sig, p)
				if edgesUsed(n) == 0 {
					t.Errorf("%s: the boundary plan did not run", what)
				}
				want := refProbs(t, n, windowCopies(x, zz, in.C, in.T, starts, width, 0.3), 0)
				if d, ok := closeTo(got, want, 2e-6); !ok {
					t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
				}
				if p.Incremental != len(starts) || p.Fraction() >= 1 {
					t.Errorf("%s: path %+v", what, p)
				}
			}
		}
	}
}

// TestEdgesSpansMatchForward: LIME's masks (segments of every channel at
// least reach-1 wide, some runs merged, the first and last segment
// included, nothing or everything masked) take the boundary plan and
// equal forward passes; spans closer than the reach, or of one channel,
// take the other paths and equal them too.
func TestEdgesSpansMatchForward(t *testing.T) {
	for si, spec := range trunkSpecs() {
		n := randomNet(t, spec, uint64(30+si))
		in := n.InShape()
		R := n.trunk().reach()
		rng := rand.New(rand.NewPCG(uint64(si), 31))
		x := randVec(rng, in.Size())
		for _, kind := range []string{"segments", "overlapping", "close", "channel"} {
			f := max(R-1, 1)
			var spans [][]ChannelSpan
			spans = append(spans, nil, []ChannelSpan{{AllChannels, 0, in.T}})
			for range 60 {
				var sp []ChannelSpan
				switch kind {
				case "segments", "close":
					w := f
					if kind == "close" {
						w = max(f/2, 1)
					}
					for lo := 0; lo < in.T; lo += w {
						if rng.IntN(2) == 0 {
							sp = append(sp, ChannelSpan{AllChannels, lo, min(lo+w, in.T)})
						}
					}
				case "overlapping": // segments given twice, overlapping, out of order
					for lo := 0; lo < in.T; lo += f {
						if rng.IntN(2) == 0 {
							sp = append(sp, ChannelSpan{AllChannels, min(lo+1, in.T), min(lo+f, in.T)}, ChannelSpan{AllChannels, lo, min(lo+f, in.T)})
						}
					}
					rng.Shuffle(len(sp), func(i, j int) { sp[i], sp[j] = sp[j], sp[i] })
				case "channel":
					lo := rng.IntN(in.T)
					sp = append(sp, ChannelSpan{rng.IntN(in.C), lo, min(lo+f, in.T)})
				}
				spans = append(spans, sp)
			}
			got := make([]float32, len(spans))
			p, err := n.SpanProbs(got, x, spans, -0.4, 1)
			if err != nil {
				t.Fatal(err)
			}
			used := edgesUsed(n)
			var copies []float32
			for _, sp := range spans {
				row := append([]float32(nil), x...)
				for _, s := range sp {
					for c := 0; c < in.C; c++ {
						if s.Ch == AllChannels || s.Ch == c {
							for t := s.Lo; t < s.Hi; t++ {
								row[c*in.T+t] = -0.4
							}
						}
					}
				}
				copies = append(copies, row...)
			}
			want := refProbs(t, n, copies, 1)
			what := fmt.Sprintf("%s %s (reach %d, %v)", spec.Name, kind, R, p)
			if d, ok := closeTo(got, want, 2e-6); !ok {
				t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
			}
			if (kind == "segments" || kind == "overlapping") != (used > 0) {
				t.Errorf("%s: boundary plan ran for %d boundaries", what, used)
			}
		}
	}
}

// TestEdgesOnlyWhenTheyPay: the boundary plan runs when its two passes,
// boundaries and head cost less than the copies' forward passes (it is
// refused for two windows, taken for many), and its path's work is the
// two passes', the boundaries' and the head's: between those of two
// passes and of the copies' passes; copies whose boundaries come closer
// than the reach, or lie outside the input, are refused.
func TestEdgesOnlyWhenTheyPay(t *testing.T) {
	n := randomNet(t, trunkSpecs()[1], 8)
	in := n.InShape()
	R := n.trunk().reach()
	x := randVec(rand.New(rand.NewPCG(8, 9)), in.Size())
	width := R + 2
	var all []int
	for s := 0; s+width <= in.T; s++ {
		all = append(all, s)
	}
	for _, c := range []struct {
		starts []int
		edges  bool
	}{{all[:2], false}, {all, true}} {
		got := make([]float32, len(c.starts))
		p, err := n.WindowProbs(got, x, nil, c.starts, width, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if used := edgesUsed(n) > 0; used != c.edges {
			t.Errorf("%d windows: boundary plan %v, want %v (%v)", len(c.starts), used, c.edges, p)
		}
		if c.edges && !(p.Done > 2*n.Cost() && p.Done < p.Dense && p.Dense == float64(len(c.starts))*n.Cost()) {
			t.Errorf("%d windows: work %g of %g (a pass %g)", len(c.starts), p.Done, p.Dense, n.Cost())
		}
	}
	many := func(cut cutCopy) []cutCopy {
		cps := make([]cutCopy, 2*in.T)
		for i := range cps {
			cps[i] = cut
		}
		return cps
	}
	for _, c := range []struct {
		cut cutCopy
		ok  bool
	}{
		{cutCopy{bnd: []int{3, 3 + R - 1}}, true},
		{cutCopy{bnd: []int{3, 3 + R - 2}}, false},
		{cutCopy{bnd: []int{0}}, false},
		{cutCopy{bnd: []int{in.T}}, false},
		{cutCopy{bnd: []int{1}}, true},
		{cutCopy{bnd: []int{in.T - 1}}, true},
	} {
		if ok := n.edgeOK(many(c.cut)); ok != c.ok {
			t.Errorf("boundaries %v (reach %d): edgeOK %v, want %v", c.cut.bnd, R, ok, c.ok)
		}
	}
}

// TestSpanCuts: spans become the boundaries of their union in order:
// overlapping and adjacent spans merge, empty ones vanish, a span from 0
// makes the first region the baseline's, one to T has no boundary there;
// a span of one channel is refused.
func TestSpanCuts(t *testing.T) {
	n := randomNet(t, trunkSpecs()[1], 1)
	T := n.InShape().T
	A := AllChannels
	for _, c := range []struct {
		spans  []ChannelSpan
		bnd    []int
		firstU bool
	}{
		{nil, nil, false},
		{[]ChannelSpan{{A, 5, 5}}, nil, false},
		{[]ChannelSpan{{A, 5, 9}}, []int{5, 9}, false},
		{[]ChannelSpan{{A, 12, 20}, {A, 5, 9}}, []int{5, 9, 12, 20}, false},
		{[]ChannelSpan{{A, 5, 9}, {A, 9, 12}}, []int{5, 12}, false},
		{[]ChannelSpan{{A, 5, 10}, {A, 7, 9}}, []int{5, 10}, false},
		{[]ChannelSpan{{A, 5, 10}, {A, 7, 15}}, []int{5, 15}, false},
		{[]ChannelSpan{{A, 0, 4}, {A, 20, T}}, []int{4, 20}, true},
		{[]ChannelSpan{{A, 0, T}}, nil, true},
	} {
		cps, ok := n.spanCuts([][]ChannelSpan{c.spans})
		if !ok || !slices.Equal(cps[0].bnd, c.bnd) || cps[0].firstU != c.firstU {
			t.Errorf("%v: %v %+v, want boundaries %v, first the baseline %v", c.spans, ok, cps, c.bnd, c.firstU)
		}
	}
	if _, ok := n.spanCuts([][]ChannelSpan{{{A, 1, 3}}, {{0, 1, 3}}}); ok {
		t.Error("a span of one channel was cut for the boundary plan")
	}
	cps := n.windowCuts([]int{0, 4, T - 6}, 6)
	want := []cutCopy{{[]int{6}, true}, {[]int{4, 10}, false}, {[]int{T - 6}, false}}
	for j := range want {
		if !slices.Equal(cps[j].bnd, want[j].bnd) || cps[j].firstU != want[j].firstU {
			t.Errorf("window %d: %+v, want %+v", j, cps[j], want[j])
		}
	}
}

// TestCutBoundaries: the count of distinct boundaries equals a count by
// a set of (position, direction) pairs, the direction of a copy's k-th
// boundary being a rise exactly when the region before it is u (firstU
// for even k); copies out of order, too close or outside (0, T) are
// refused.
func TestCutBoundaries(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const T, gap = 200, 7
	for trial := 0; trial < 200; trial++ {
		cps := make([]cutCopy, 1+r.IntN(20))
		want := map[[2]int]bool{}
		for j := range cps {
			b := 1 + r.IntN(30)
			for b < T && r.IntN(4) > 0 {
				cps[j].bnd = append(cps[j].bnd, b)
				b += gap + r.IntN(40)
			}
			cps[j].firstU = r.IntN(2) == 0
			for k, b := range cps[j].bnd {
				want[[2]int{b, boolInt(cps[j].firstU == (k%2 == 0))}] = true
			}
		}
		nb, ok := cutBoundaries(cps, T, gap)
		if !ok || nb != len(want) {
			t.Fatalf("trial %d: cutBoundaries = %d, %v; want %d distinct boundaries, true", trial, nb, ok, len(want))
		}
	}
	for _, bad := range [][]int{{0}, {T}, {-3}, {10, 10 + gap - 1}, {50, 20}} {
		if _, ok := cutBoundaries([]cutCopy{{bnd: []int{5, 5 + gap}}, {bnd: bad}}, T, gap); ok {
			t.Errorf("boundaries %v of an input of %d steps, gap %d: accepted", bad, T, gap)
		}
	}
	if nb, ok := cutBoundaries([]cutCopy{{bnd: []int{10, 10 + gap}}}, T, gap); !ok || nb != 2 {
		t.Errorf("boundaries exactly %d apart: %d, %v; want 2, true", gap, nb, ok)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
