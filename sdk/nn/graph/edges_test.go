package graph

import (
	"fmt"
	"math/rand/v2"
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
