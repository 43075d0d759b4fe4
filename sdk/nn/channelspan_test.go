package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// channelPerturbedRef returns x with each span set to baseline in its
// channel (every channel for AllChannels): the definition, written apart
// from channelPerturbed.
func channelPerturbedRef(x []float32, a Arch, spans []ChannelSpan, baseline float32) []float32 {
	out := append([]float32(nil), x...)
	for _, s := range spans {
		for c := range a.InChannels {
			if s.Ch != AllChannels && s.Ch != c {
				continue
			}
			for t := s.Lo; t < s.Hi; t++ {
				out[c*a.InLen+t] = baseline
			}
		}
	}
	return out
}

// paper3 is the paper's network on three input channels.
func paper3() Arch {
	a := PaperArch()
	a.Name, a.InChannels = "paper-3ch", 3
	return a
}

// randomChannelSpans draws perturbations as LIME's channel-segment
// features make them (segments of width w masked out per channel), plus
// overlapping and all-channel spans, spans too short for the boundary
// path, and the empty perturbation.
func randomChannelSpans(r *rand.Rand, C, T, w, n int) [][]ChannelSpan {
	out := [][]ChannelSpan{nil, {{AllChannels, 0, T}}, {{0, 0, T}}, {{C - 1, 3, 5}}}
	for range n {
		var sp []ChannelSpan
		for c := range C {
			for lo := 0; lo < T; lo += w {
				if r.IntN(2) == 0 {
					sp = append(sp, ChannelSpan{c, lo, min(lo+w, T)})
				}
			}
		}
		switch r.IntN(6) {
		case 0:
			sp = append(sp, ChannelSpan{AllChannels, r.IntN(T / 2), T/2 + r.IntN(T/2)})
		case 1:
			lo := r.IntN(T - 2)
			sp = append(sp, ChannelSpan{r.IntN(C), lo, lo + 1 + r.IntN(2)}) // too short
		case 2:
			r.Shuffle(len(sp), func(i, j int) { sp[i], sp[j] = sp[j], sp[i] })
		}
		out = append(out, sp)
	}
	return out
}

// TestChannelSpanProbsDefinition: ChannelSpanProbs and ChannelSpanPooled
// equal their definition, the forward pass of the perturbed input, within
// 1e-6, on networks of 2 and 3 channels (every local layer kind), for
// per-channel, all-channel, overlapping and unordered spans; most of the
// perturbations are valid for the boundary path, which is also forced
// (channelSpanPooled's always: with few inputs it does not pay).
func TestChannelSpanProbsDefinition(t *testing.T) {
	for _, tc := range []struct {
		a Arch
		w int
	}{{localBN(), 8}, {smallArch(), 8}, {paper3(), 16}} {
		a := tc.a
		_, p, x, _ := randomSetup(t, a, 1, 23)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		R := m.edge0().R()
		spans := randomChannelSpans(rand.New(rand.NewPCG(4, uint64(a.InLen))), a.InChannels, a.InLen, tc.w, 30)
		fast := 0
		cnt := make([]int, a.InChannels+1)
		for _, sp := range spans {
			if validRegions(regions(nil, sp, a.InChannels, a.InLen, cnt), R) {
				fast++
			}
		}
		if fast < len(spans)/2 {
			t.Fatalf("%s: only %d of %d perturbations take the boundary path", a.Name, fast, len(spans))
		}
		got := make([]float32, len(spans))
		m.ChannelSpanProbs(got, x, spans, 0.3, 1)
		P := m.PooledLen()
		pooled := make([]float32, len(spans)*P)
		m.ChannelSpanPooled(pooled, x, spans, 0.3)
		// The boundary path whether or not it pays.
		forced := make([]float32, len(spans)*P)
		m.channelSpanPooled(forced, x, spans, 0.3, true)
		ws := m.net.NewWorkspace(1)
		pr := make([]float32, m.Classes())
		for j, sp := range spans {
			xo := channelPerturbedRef(x, a, sp, 0.3)
			if err := m.Probs(context.Background(), pr, xo); err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(float64(got[j] - pr[1])); d > 1e-6 {
				t.Fatalf("%s: spans %v: ChannelSpanProbs %v, forward pass %v", a.Name, sp, got[j], pr[1])
			}
			m.net.forward(ws, m.folded, xo, false, nil, m.plan.g)
			within(t, a.Name+" pooled", pooled[j*P:(j+1)*P], ws.Act(m.plan.g), 1e-6)
			within(t, a.Name+" pooled, boundary path", forced[j*P:(j+1)*P], ws.Act(m.plan.g), 1e-6)
		}
	}
}

// TestChannelSpansOfAllChannels: spans of every channel give SpanProbs'
// values (within 1e-6), whether written as AllChannels or one span a
// channel; on the one-channel paper network too.
func TestChannelSpansOfAllChannels(t *testing.T) {
	for _, a := range []Arch{PaperArch(), paper3()} {
		_, p, x, _ := randomSetup(t, a, 1, 29)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(8, 8))
		var spans [][]Span
		var all, each [][]ChannelSpan
		for range 20 {
			var sp []Span
			var sa, se []ChannelSpan
			for lo := 0; lo < a.InLen; lo += 16 {
				if r.IntN(2) == 0 {
					continue
				}
				hi := min(lo+16, a.InLen)
				if k := len(sp) - 1; k >= 0 && sp[k].Hi == lo {
					sp[k].Hi = hi
				} else {
					sp = append(sp, Span{lo, hi})
				}
				sa = append(sa, ChannelSpan{AllChannels, lo, hi})
				for c := range a.InChannels {
					se = append(se, ChannelSpan{c, lo, hi})
				}
			}
			spans, all, each = append(spans, sp), append(all, sa), append(each, se)
		}
		want := make([]float32, len(spans))
		m.SpanProbs(want, x, spans, -0.2, 2)
		for _, cs := range [][][]ChannelSpan{all, each} {
			got := make([]float32, len(cs))
			m.ChannelSpanProbs(got, x, cs, -0.2, 2)
			within(t, a.Name+" all channels", got, want, 1e-6)
		}
	}
}

// TestRegions: the runs of equally replaced channels of a perturbation,
// adjacent equal runs merged, overlaps as unions.
func TestRegions(t *testing.T) {
	const C, T = 3, 20
	for _, c := range []struct {
		spans []ChannelSpan
		want  []region
	}{
		{nil, []region{{0, 0}}},
		{[]ChannelSpan{{AllChannels, 0, T}}, []region{{0, 7}}},
		{[]ChannelSpan{{1, 0, 5}, {1, 5, 10}, {0, 8, 12}}, []region{{0, 2}, {8, 3}, {10, 1}, {12, 0}}},
		{[]ChannelSpan{{2, 4, 9}, {AllChannels, 6, 8}, {2, 3, 5}}, []region{{0, 0}, {3, 4}, {6, 7}, {8, 4}, {9, 0}}},
		{[]ChannelSpan{{0, 15, 20}, {1, 15, 20}, {2, 15, 20}}, []region{{0, 0}, {15, 7}}},
		{[]ChannelSpan{{0, 3, 3}}, []region{{0, 0}}},
	} {
		got := regions(nil, c.spans, C, T, make([]int, C+1))
		if !slices.Equal(got, c.want) {
			t.Errorf("regions(%v) = %v, want %v", c.spans, got, c.want)
		}
	}
}

// TestChannelSpanProbsWithoutPool: on a network without a global max pool
// after a local stack, ChannelSpanProbs is forward passes.
func TestChannelSpanProbsWithoutPool(t *testing.T) {
	a := Arch{Name: "dense", InChannels: 2, InLen: 10, Layers: []Layer{{Kind: KindFlatten}, {Kind: KindDense, Name: "d", Out: 3}}}
	_, p, x, _ := randomSetup(t, a, 1, 31)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	spans := [][]ChannelSpan{{{1, 2, 7}}, {{0, 0, 10}, {AllChannels, 9, 10}}}
	got := make([]float32, 2)
	m.ChannelSpanProbs(got, x, spans, 0.5, 2)
	pr := make([]float32, 3)
	for j, sp := range spans {
		if err := m.Probs(context.Background(), pr, channelPerturbedRef(x, a, sp, 0.5)); err != nil {
			t.Fatal(err)
		}
		if got[j] != pr[2] {
			t.Errorf("perturbation %d: %v, forward pass %v", j, got[j], pr[2])
		}
	}
}
