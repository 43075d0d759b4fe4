package occlusion

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// signalOnly offers the uncached path of nn.GraphModel and nothing else.
type signalOnly struct{ plainModel }

func (s signalOnly) PerturbedProbs(ctx context.Context, req nn.Perturbation, dst []float32) (bool, error) {
	req.Cache = nil
	return s.Model.(*nn.GraphModel).PerturbedProbs(ctx, req, dst)
}

// relWorst returns the largest |got - want| of each record's map over
// that map's largest |want|, the worst over records (maps of n values).
func relWorst(t *testing.T, got [][]float64, want []float32, n int) float64 {
	t.Helper()
	if len(want) != len(got)*n {
		t.Fatalf("%d reference values for %d maps of %d", len(want), len(got), n)
	}
	worst := 0.0
	for r := range got {
		w := want[r*n : (r+1)*n]
		scale, diff := 0.0, 0.0
		for i, v := range w {
			scale = math.Max(scale, math.Abs(float64(v)))
			diff = math.Max(diff, math.Abs(got[r][i]-float64(v)))
		}
		if scale == 0 {
			t.Fatalf("record %d: the reference map is all zero", r)
		}
		worst = math.Max(worst, diff/scale)
	}
	return worst
}

// TestGoldenThreeChannelOcclusion: channels "each" and "all" against
// Captum's Occlusion with sliding_window_shapes (1, w) and (3, w), for a
// window on the boundary path (60) and a narrow one (5), by every path:
// the trunk-cached one (every record), the uncached signal one and
// forward passes (two records).
func TestGoldenThreeChannelOcclusion(t *testing.T) {
	m, x, y, ref := paper.ThreeChannel(t)
	n := m.InputLen()
	for _, w := range []int{60, 5} {
		for _, ch := range []string{"", Each, All} {
			cfg := sdk.Config{"window": int64(w), "stride": int64(1)}
			want := ref[fmt.Sprintf("occlusion_each_w%d", w)]
			if ch != "" {
				cfg["channels"] = ch
			}
			if ch == All {
				want = ref[fmt.Sprintf("occlusion_all_w%d", w)]
			}
			for name, model := range map[string]nn.Model{"plain": plainModel{m}, "signal": signalOnly{plainModel{m}}, "model": m} {
				if name != "model" && w == 5 && ch == "" {
					continue // the default is "each", already run
				}
				B := len(y)
				if name != "model" {
					B = 2 // a forward pass a window: two records are enough
				}
				maps, err := New().Explain(context.Background(), model, sdk.ExplainRequest{X: x[:B*n], Targets: y[:B], Config: cfg})
				if err != nil {
					t.Fatal(err)
				}
				worst := relWorst(t, maps, want[:B*n], n)
				if worst > 1e-4 {
					t.Errorf("window %d channels %q %s: max |diff| to Captum / max |map| = %.3g, want <= 1e-4", w, ch, name, worst)
				}
				t.Logf("window %d channels %q %s: max |diff| to Captum / max |map| = %.3g", w, ch, name, worst)
			}
		}
	}
}

// TestChannelsOneChannelSame: with one channel, "each", "all" and no key
// give the same bytes.
func TestChannelsOneChannelSame(t *testing.T) {
	m, x, y, _ := paper.Inference(t)
	var first [][]float64
	for _, ch := range []string{"", Each, All} {
		cfg := sdk.Config{"window": int64(30), "stride": int64(7), "baseline": Mean}
		if ch != "" {
			cfg["channels"] = ch
		}
		got, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:2*640], Targets: y[:2], Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = got
			continue
		}
		for b := range got {
			for i, v := range got[b] {
				if math.Float64bits(v) != math.Float64bits(first[b][i]) {
					t.Fatalf("channels %q: map %d[%d] = %v, %v without the key", ch, b, i, v, first[b][i])
				}
			}
		}
	}
}

func TestChannelsCheck(t *testing.T) {
	for _, v := range []any{"every", "Each", int64(1), true} {
		err := New().Check(sdk.Config{"channels": v})
		if err == nil {
			t.Fatalf("channels = %v accepted", v)
		}
		for _, s := range []string{`"channels"`, `"each"`, `"all"`} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("channels = %v: error %q does not name %s", v, err, s)
			}
		}
	}
	for _, v := range []string{Each, All} {
		if err := New().Check(sdk.Config{"channels": v}); err != nil {
			t.Errorf("channels = %q: %v", v, err)
		}
	}
}

// conv1Weights returns the conv1 weights (8, 3, 3) of p, a view.
func conv1Weights(t *testing.T, p nn.Params) []float32 {
	lay, err := nn.NewLayout(p.Arch)
	if err != nil {
		t.Fatal(err)
	}
	return lay.View(p.Data, "conv1.weight")
}

func explain3(t *testing.T, p nn.Params, x []float32, y []int, cfg sdk.Config) [][]float64 {
	t.Helper()
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return maps
}

// TestEachPermutesWithChannels: permuting the input channels together with
// conv1's input-channel weights leaves the network's function unchanged,
// so the "each" map's rows are permuted the same way; and they differ (a
// copied time map would pass the first check alone).
func TestEachPermutesWithChannels(t *testing.T) {
	p := paper.ThreeChannelParams(t)
	_, x, y, _ := paper.ThreeChannel(t)
	const T = 640
	x, y = x[:3*3*T], y[:3]
	perm := []int{2, 0, 1} // new channel c is old channel perm[c]
	q := nn.Params{Arch: p.Arch, Data: append([]float32(nil), p.Data...)}
	w, wq := conv1Weights(t, p), conv1Weights(t, q)
	for o := 0; o < 8; o++ {
		for c := 0; c < 3; c++ {
			copy(wq[o*9+c*3:o*9+c*3+3], w[o*9+perm[c]*3:o*9+perm[c]*3+3])
		}
	}
	xq := make([]float32, len(x))
	for b := range y {
		for c := 0; c < 3; c++ {
			copy(xq[b*3*T+c*T:b*3*T+(c+1)*T], x[b*3*T+perm[c]*T:b*3*T+(perm[c]+1)*T])
		}
	}
	for _, baseline := range []any{0.0, Mean} {
		cfg := sdk.Config{"window": int64(40), "stride": int64(5), "baseline": baseline}
		a, bq := explain3(t, p, x, y, cfg), explain3(t, q, xq, y, cfg)
		for r := range y {
			scale, worst, spread := 0.0, 0.0, 0.0
			for c := 0; c < 3; c++ {
				for s := 0; s < T; s++ {
					v := a[r][perm[c]*T+s]
					scale = math.Max(scale, math.Abs(v))
					worst = math.Max(worst, math.Abs(bq[r][c*T+s]-v))
					spread = math.Max(spread, math.Abs(a[r][c*T+s]-a[r][s]))
				}
			}
			if worst > 1e-5*scale {
				t.Errorf("baseline %v record %d: permuted map differs by %.3g (max |map| %.3g)", baseline, r, worst, scale)
			}
			if spread < 1e-2*scale {
				t.Errorf("baseline %v record %d: the channels' rows differ by %.3g only (max |map| %.3g): not a per-channel map", baseline, r, spread, scale)
			}
		}
	}
}

// TestEachZeroWeightChannel: a channel whose conv1 weights are all zero
// does not reach the output, so its "each" row is zero, while the other
// channels' rows are not. Zero up to float32 rounding: p_y(x) and the
// windows' probabilities come from different float32 paths (the pooled
// vector of x itself, the boundary maxima of the windows), which may
// differ by a few ulps of a probability, so |row| <= 1e-6 (8 ulps of 1).
func TestEachZeroWeightChannel(t *testing.T) {
	p := paper.ThreeChannelParams(t)
	_, x, y, _ := paper.ThreeChannel(t)
	const T = 640
	x, y = x[:4*3*T], y[:4]
	for dead := 0; dead < 3; dead++ {
		q := nn.Params{Arch: p.Arch, Data: append([]float32(nil), p.Data...)}
		wq := conv1Weights(t, q)
		for o := 0; o < 8; o++ {
			clear(wq[o*9+dead*3 : o*9+dead*3+3])
		}
		for _, window := range []int64{60, 5} {
			for _, baseline := range []any{0.0, 3.0, Noise} {
				maps := explain3(t, q, x, y, sdk.Config{"window": window, "stride": int64(3), "baseline": baseline})
				for r := range y {
					live, deadMax := 0.0, 0.0
					for c := 0; c < 3; c++ {
						for s := 0; s < T; s++ {
							v := math.Abs(maps[r][c*T+s])
							if c == dead {
								deadMax = math.Max(deadMax, v)
							} else {
								live = math.Max(live, v)
							}
						}
					}
					if deadMax > 1e-6 || live < 1e-3 {
						t.Errorf("channel %d dead, window %d, baseline %v, record %d: max |row| %.3g, others %.3g; want <= 1e-6 and >= 1e-3", dead, window, baseline, r, deadMax, live)
					}
				}
			}
		}
	}
}

// TestEachDefinition: "each" under per-channel signal baselines against
// its definition, forward passes of copies with one channel's window set
// to that channel's baseline signal.
func TestEachDefinition(t *testing.T) {
	m, x, y, _ := paper.ThreeChannel(t)
	const T, w, stride = 640, 50, 37
	x, y = x[3*3*T:4*3*T], y[3:4]
	for _, baseline := range []any{Mean, Noise, Fundamental, -0.5} {
		maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"window": int64(w), "stride": int64(stride), "baseline": baseline}})
		if err != nil {
			t.Fatal(err)
		}
		z := make([]float32, len(x))
		switch baseline {
		case Mean:
			MeanSignal(z, x, T)
		case Noise:
			NoiseSignal(z, x, T, 0)
		case Fundamental:
			f, err := newFundamentalFit(T, 64)
			if err != nil {
				t.Fatal(err)
			}
			f.Signal(z, x)
		default:
			for i := range z {
				z[i] = -0.5
			}
		}
		probs := make([]float32, m.Classes())
		if err := m.Probs(context.Background(), probs, x); err != nil {
			t.Fatal(err)
		}
		p0 := float64(probs[y[0]])
		for c := 0; c < 3; c++ {
			sum, cnt := make([]float64, T), make([]float64, T)
			for s := 0; s+w <= T; s += stride {
				xo := append([]float32(nil), x...)
				copy(xo[c*T+s:c*T+s+w], z[c*T+s:c*T+s+w])
				if err := m.Probs(context.Background(), probs, xo); err != nil {
					t.Fatal(err)
				}
				for u := s; u < s+w; u++ {
					sum[u] += p0 - float64(probs[y[0]])
					cnt[u]++
				}
			}
			scale, worst := 0.0, 0.0
			for u := 0; u < T; u++ {
				want := 0.0
				if cnt[u] > 0 {
					want = sum[u] / cnt[u]
				}
				scale = math.Max(scale, math.Abs(want))
				worst = math.Max(worst, math.Abs(maps[0][c*T+u]-want))
			}
			if scale == 0 || worst > 1e-4*scale {
				t.Errorf("baseline %v channel %d: max |map - definition| %.3g, max |definition| %.3g", baseline, c, worst, scale)
			}
		}
	}
}
