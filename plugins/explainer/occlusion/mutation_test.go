package occlusion

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// These tests close gaps that mutation testing (scripts/mutation) found:
// the paper's network has one input channel, a golden test runs only
// window 60, and nothing checked the targets' upper bound or a window as
// long as the input.

// twoChannelModel is a small randomly initialised network with two input
// channels, so that the channel offsets of the occluded copies and of the
// map rows matter.
func twoChannelModel(t *testing.T, T int) *nn.GraphModel {
	t.Helper()
	a := nn.Arch{Name: "two-channel", InChannels: 2, InLen: T, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv", Out: 3, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 4},
	}}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	nn.Init(lay, p, rng.For(3, "test", "occlusion", -1, -1))
	m, err := nn.NewModel(nn.Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// strictModel checks the nn.Model contract of every Probs call Explain
// makes: dst holds exactly Classes() values per input.
type strictModel struct {
	nn.Model
	t *testing.T
}

func (s strictModel) Probs(ctx context.Context, dst, x []float32) error {
	if b := len(x) / s.InputLen(); len(dst) != b*s.Classes() {
		s.t.Errorf("Probs: len(dst) = %d for %d inputs of %d classes", len(dst), b, s.Classes())
	}
	return s.Model.Probs(ctx, dst, x)
}

// bruteForce is the definition in the package comment, one forward pass a
// window. With channels "all": map[ch*T+t] = mean over the windows s
// covering t of p_y(x) - p_y(x with samples s..s+w-1 of every channel
// taken from the baseline signal z, len(z) = len(x)); with "each", the
// window of row ch replaces the samples of channel ch alone.
func bruteForce(t *testing.T, m nn.Model, x []float32, y, window, stride int, z []float32, channels string) []float64 {
	T, n, k := m.Arch().InLen, m.InputLen(), m.Classes()
	C := n / T
	p := make([]float32, k)
	if err := m.Probs(context.Background(), p, x); err != nil {
		t.Fatal(err)
	}
	p0 := float64(p[y])
	out := make([]float64, n)
	xo := make([]float32, n)
	rows := [][]int{{}}
	for ch := 0; ch < C; ch++ {
		rows[0] = append(rows[0], ch) // "all": one row, every channel
	}
	if channels == Each {
		rows = rows[:0]
		for ch := 0; ch < C; ch++ {
			rows = append(rows, []int{ch})
		}
	}
	for _, occluded := range rows {
		sum, cnt := make([]float64, T), make([]int, T)
		for s := 0; s+window <= T; s += stride {
			copy(xo, x)
			for _, ch := range occluded {
				for t := s; t < s+window; t++ {
					xo[ch*T+t] = z[ch*T+t]
				}
			}
			if err := m.Probs(context.Background(), p, xo); err != nil {
				t.Fatal(err)
			}
			for t := s; t < s+window; t++ {
				sum[t] += p0 - float64(p[y])
				cnt[t]++
			}
		}
		for ch := 0; ch < C; ch++ {
			if channels == Each && ch != occluded[0] {
				continue
			}
			for t := range T {
				if cnt[t] > 0 {
					out[ch*T+t] = sum[t] / float64(cnt[t])
				}
			}
		}
	}
	return out
}

// constant is the baseline signal of a number: v at every sample.
func constant(n int, v float32) []float32 {
	z := make([]float32, n)
	for i := range z {
		z[i] = v
	}
	return z
}

// TestExplainMatchesDefinition compares Explain, on the batched path and
// on the model's WindowProbs, with the definition computed window by
// window: two channels, more windows than one batch of 64, a stride that
// leaves a tail, and a window as long as the input (one window, allowed).
func TestExplainMatchesDefinition(t *testing.T) {
	const T = 80
	m := twoChannelModel(t, T)
	n, k := m.InputLen(), m.Classes()
	r := rng.For(4, "test", "occlusion-x", -1, -1)
	const B = 3
	x := make([]float32, B*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	targets := []int{0, k - 1, 2}
	for _, c := range []struct{ window, stride int }{{3, 1}, {7, 5}, {T, 1}, {1, 1}} {
		for _, channels := range []string{All, Each} {
			cfg := sdk.Config{"window": int64(c.window), "stride": int64(c.stride), "baseline": 0.25, "channels": channels}
			for name, model := range map[string]nn.Model{"batched": strictModel{plainModel{m}, t}, "WindowProbs": m} {
				maps, err := New().Explain(context.Background(), model, sdk.ExplainRequest{X: x, Targets: targets, Config: cfg})
				if err != nil {
					t.Fatalf("window %d stride %d, %s: %v", c.window, c.stride, name, err)
				}
				for b := range B {
					want := bruteForce(t, m, x[b*n:(b+1)*n], targets[b], c.window, c.stride, constant(n, 0.25), channels)
					for i, w := range want {
						if math.Abs(maps[b][i]-w) > 1e-6 {
							t.Fatalf("window %d stride %d channels %s, %s: input %d: map[%d] (channel %d, t %d) = %v, definition %v",
								c.window, c.stride, channels, name, b, i, i/T, i%T, maps[b][i], w)
						}
					}
				}
			}
		}
	}
}

// TestExplainRejectsTargets: targets are classes 0..k-1; k is the first
// one out of range, for the last input as for the others.
func TestExplainRejectsTargets(t *testing.T) {
	m := twoChannelModel(t, 10)
	n, k := m.InputLen(), m.Classes()
	x := make([]float32, 2*n)
	for _, targets := range [][]int{{0, k}, {k, 0}, {-1, 0}} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("targets %v: panic %v, want an error", targets, r)
				}
			}()
			_, err = New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: targets, Config: sdk.Config{"window": int64(2)}})
		}()
		if err == nil {
			t.Errorf("targets %v: no error", targets)
		} else if want := fmt.Sprintf("out of range 0..%d", k-1); !strings.Contains(err.Error(), want) {
			t.Errorf("targets %v: error %q, want it to contain %q", targets, err, want)
		}
	}
	if _, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:n], Targets: []int{0}, Config: sdk.Config{"window": int64(11)}}); err == nil {
		t.Error("window 11 on 10 samples: no error")
	}
}
