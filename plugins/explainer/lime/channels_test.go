package lime

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// net3 is the paper's network on C channels of T samples, randomly
// initialised; edit changes its parameters before the model is built.
func net3(t *testing.T, C, T int, seed uint64, edit func(lay *nn.Layout, p []float32)) (*nn.GraphModel, []float32) {
	t.Helper()
	a := nn.PaperArch()
	a.Name, a.InChannels, a.InLen = "paper-multi", C, T
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	nn.Init(lay, p, rng.For(seed, "test", "lime-channels", -1, -1))
	if edit != nil {
		edit(lay, p)
	}
	m, err := nn.NewModel(nn.Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, C*T)
	r := rng.New(seed + 1)
	for i := range x {
		x[i] = float32(math.Sin(float64(i%T)/5+float64(i/T)) + 0.3*r.NormFloat64())
	}
	return m, x
}

// plainModel hides a model's span paths, so LIME takes forward passes.
type plainModel struct{ nn.Model }

// TestExplainChannels: on three channels, with "channel-segment" (the
// default) and "segment", the map is the OLS surrogate of Sample's masks,
// the forward passes of Sample's perturbed inputs and their weights
// (within 1e-6 of the span path's, whose outputs differ by rounding), and
// map[c*T+t] is coefficient c*K+t/w, or t/w across channels; the span
// path gives the same maps as forward passes within that tolerance.
func TestExplainChannels(t *testing.T) {
	const C, T, w, n = 3, 96, 16, 64
	m, x := net3(t, C, T, 3, nil)
	for _, tc := range []struct {
		cfg sdk.Config
		fs  Features
	}{
		{sdk.Config{}, Features{C, T, w, true}},
		{sdk.Config{"features": ChannelSegment}, Features{C, T, w, true}},
		{sdk.Config{"features": Segment}, Features{C, T, w, false}},
	} {
		F := tc.fs.Len()
		masks := make([][]bool, n)
		for i := range masks {
			masks[i] = make([]bool, F)
		}
		xs, wt := make([]float32, n*C*T), make([]float64, n)
		Sample(masks, xs, wt, x, tc.fs, 1, 9)
		for i, mk := range masks {
			for c := range C {
				for t0 := range T {
					j := t0 / w
					if tc.fs.PerChannel {
						j += c * (T / w)
					}
					want := float32(0)
					if mk[j] {
						want = x[c*T+t0]
					}
					if xs[i*C*T+c*T+t0] != want {
						t.Fatalf("%v: sample %d channel %d position %d: %v, want %v", tc.cfg, i, c, t0, xs[i*C*T+c*T+t0], want)
					}
				}
			}
		}
		pr := make([]float32, n*16)
		if err := m.Probs(context.Background(), pr, xs); err != nil {
			t.Fatal(err)
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(pr[i*16+5])
		}
		c, _ := OLS(masks, out, wt)
		cfg := sdk.Config{"samples": int64(n), "surrogate": "ols"}
		for k, v := range tc.cfg {
			cfg[k] = v
		}
		req := sdk.ExplainRequest{X: x, Targets: []int{5}, Seeds: []uint64{9}, Config: cfg}
		fast, err := New().Explain(context.Background(), m, req)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := New().Explain(context.Background(), plainModel{m}, req)
		if err != nil {
			t.Fatal(err)
		}
		scale := 0.0
		for _, v := range c {
			scale = math.Max(scale, math.Abs(v))
		}
		for i := range plain[0] {
			if plain[0][i] != c[tc.fs.Of(i)] {
				t.Fatalf("%v: forward passes: value %d: %v, want coefficient %d = %v", tc.cfg, i, plain[0][i], tc.fs.Of(i), c[tc.fs.Of(i)])
			}
			if d := math.Abs(fast[0][i] - plain[0][i]); d > 1e-4*scale {
				t.Fatalf("%v: span path: value %d: %v, forward passes %v", tc.cfg, i, fast[0][i], plain[0][i])
			}
		}
	}
}

// TestFeaturesOneChannel: for one channel both layouts are the segments
// t/w, and their spans those of Spans.
func TestFeaturesOneChannel(t *testing.T) {
	for _, per := range []bool{false, true} {
		fs := Features{C: 1, T: 50, Width: 7, PerChannel: per}
		if fs.Len() != 8 {
			t.Fatalf("%d features, want 8", fs.Len())
		}
		for i := range 50 {
			if fs.Of(i) != i/7 {
				t.Fatalf("value %d: feature %d, want %d", i, fs.Of(i), i/7)
			}
		}
	}
	masks := [][]bool{{false, false, true, true, true, true, true, false}}
	cs := Features{C: 2, T: 50, Width: 7}.ChannelSpans(nil, masks)
	if want := []nn.ChannelSpan{{Ch: nn.AllChannels, Lo: 0, Hi: 14}, {Ch: nn.AllChannels, Lo: 49, Hi: 50}}; len(cs[0]) != 2 || cs[0][0] != want[0] || cs[0][1] != want[1] {
		t.Errorf("segment spans %v, want %v", cs[0], want)
	}
	per := Features{C: 2, T: 10, Width: 5, PerChannel: true}.ChannelSpans(nil, [][]bool{{false, false, true, false}})
	if want := []nn.ChannelSpan{{Ch: 0, Lo: 0, Hi: 10}, {Ch: 1, Lo: 5, Hi: 10}}; len(per[0]) != 2 || per[0][0] != want[0] || per[0][1] != want[1] {
		t.Errorf("channel-segment spans %v, want %v", per[0], want)
	}
}

func TestFeaturesConfig(t *testing.T) {
	err := New().Check(sdk.Config{"features": "channels"})
	if err == nil || !strings.Contains(err.Error(), `key "features" is "channels" (accepted: "channel-segment", "segment")`) {
		t.Errorf("features = channels: %v", err)
	}
	for _, v := range []string{ChannelSegment, Segment} {
		if err := New().Check(sdk.Config{"features": v}); err != nil {
			t.Errorf("features = %s: %v", v, err)
		}
	}
}

// TestZeroWeightChannel: with "channel-segment", a channel whose
// first-layer weights are zero does not move the outputs LIME fits: the
// outputs of every sample equal those of the same sample with that
// channel's features all kept (within 1e-6, the span path's rounding).
// (Its coefficients are not exactly zero: a least-squares surrogate of
// random samples gives an irrelevant feature the chance correlation of its
// bits with the outputs' residual.)
func TestZeroWeightChannel(t *testing.T) {
	const C, T, w, n = 3, 96, 16, 64
	m, x := net3(t, C, T, 4, func(lay *nn.Layout, p []float32) {
		v := lay.View(p, "conv1.weight") // (8, C, 3)
		for o := range 8 {
			for j := range 3 {
				v[(o*C+1)*3+j] = 0
			}
		}
	})
	fs := Features{C, T, w, true}
	K := fs.Segments()
	masks := make([][]bool, n)
	kept := make([][]bool, n)
	for i := range masks {
		masks[i] = make([]bool, fs.Len())
	}
	Draw(masks, 12)
	for i, mk := range masks {
		kept[i] = append([]bool(nil), mk...)
		for k := range K {
			kept[i][K+k] = true
		}
	}
	var c Config
	c.KernelWidth = 1
	a, b := newScratch(n, C*T), newScratch(n, C*T)
	if err := c.outputs(context.Background(), m, x, 2, fs, masks, a); err != nil {
		t.Fatal(err)
	}
	if err := c.outputs(context.Background(), m, x, 2, fs, kept, b); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for i := range a.out {
		if d := math.Abs(a.out[i] - b.out[i]); d > 1e-6 {
			t.Fatalf("sample %d: output %v with channel 1 masked as drawn, %v with it kept", i, a.out[i], b.out[i])
		}
		if a.out[i] != a.out[0] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the outputs do not depend on the masks at all")
	}
}

// TestPermutedChannels: permuting the input's channels and the
// first-layer weights' input channels the same way, with the same samples
// (the masks' channel blocks permuted alike), permutes the outputs'
// inputs only: outputs within 1e-6, weights within 1e-12, and the OLS
// map's channel rows permute (within 1e-4 of the largest coefficient).
func TestPermutedChannels(t *testing.T) {
	const C, T, w, n = 3, 96, 16, 64
	perm := [C]int{2, 0, 1} // channel c goes to perm[c]
	m, x := net3(t, C, T, 5, nil)
	mp, _ := net3(t, C, T, 5, func(lay *nn.Layout, p []float32) {
		v := lay.View(p, "conv1.weight")
		old := append([]float32(nil), v...)
		for o := range 8 {
			for c := range C {
				for j := range 3 {
					v[(o*C+perm[c])*3+j] = old[(o*C+c)*3+j]
				}
			}
		}
	})
	xp := make([]float32, C*T)
	for c := range C {
		copy(xp[perm[c]*T:(perm[c]+1)*T], x[c*T:(c+1)*T])
	}
	fs := Features{C, T, w, true}
	K := fs.Segments()
	masks := make([][]bool, n)
	pm := make([][]bool, n)
	for i := range masks {
		masks[i] = make([]bool, fs.Len())
		pm[i] = make([]bool, fs.Len())
	}
	Draw(masks, 21)
	for i, mk := range masks {
		for c := range C {
			copy(pm[i][perm[c]*K:(perm[c]+1)*K], mk[c*K:(c+1)*K])
		}
	}
	c := Config{KernelWidth: 1}
	a, b := newScratch(n, C*T), newScratch(n, C*T)
	if err := c.outputs(context.Background(), m, x, 7, fs, masks, a); err != nil {
		t.Fatal(err)
	}
	if err := c.outputs(context.Background(), mp, xp, 7, fs, pm, b); err != nil {
		t.Fatal(err)
	}
	for i := range a.out {
		if math.Abs(a.out[i]-b.out[i]) > 1e-6 || math.Abs(a.w[i]-b.w[i]) > 1e-12 {
			t.Fatalf("sample %d: output %v weight %v; permuted %v, %v", i, a.out[i], a.w[i], b.out[i], b.w[i])
		}
	}
	ca, cb := c.fit(masks, a), c.fit(pm, b)
	scale := 0.0
	for _, v := range ca {
		scale = math.Max(scale, math.Abs(v))
	}
	if scale == 0 {
		t.Fatal("all coefficients zero")
	}
	for ch := range C {
		for k := range K {
			if d := math.Abs(ca[ch*K+k] - cb[perm[ch]*K+k]); d > 1e-4*scale {
				t.Fatalf("channel %d segment %d: %v, permuted %v", ch, k, ca[ch*K+k], cb[perm[ch]*K+k])
			}
		}
	}
}
