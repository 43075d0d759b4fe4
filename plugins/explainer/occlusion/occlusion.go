// Package occlusion is the attribution operator "explainer.occlusion",
// Captum's Occlusion on the class probability: windows of `window` samples
// starting at s = 0, stride, 2 stride, ... (s + window <= N) are set to
// `baseline`, and
//
//	map[t] = (1 / |W_t|) sum_{s in W_t} (p_c(x) - p_c(x with window s set to the baseline))
//
// where W_t is the set of windows covering t. A position no window covers
// (when the stride leaves a tail) gets 0. The map stays signed. With several
// input channels a window occludes every channel at once, and each channel's
// map row is the same time map.
package occlusion

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ID is the plugin's ID.
const ID = "explainer.occlusion"

// Explainer is the occlusion operator. It keeps the pooled vectors of the
// inputs it explained (nn.TrunkCache, at most CacheBytes), so that the
// next draw of a posterior whose draws share the layers up to the global
// max pool (MC dropout) runs only the layers after it. The maps are the
// same bytes with or without the cache.
type Explainer struct {
	trunks *nn.TrunkCache
}

// CacheBytes bounds the memory of an Explainer's trunk cache: 64 MiB,
// about 1,500 inputs of the paper's network at window 60, stride 1 (the
// engine explains a batch under every draw before the next batch, so a
// worker needs one batch of entries at a time).
const CacheBytes = 64 << 20

// New returns the occlusion explainer.
func New() *Explainer { return &Explainer{trunks: nn.NewTrunkCache(CacheBytes)} }

// Info describes the plugin.
func (*Explainer) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.1.0", Summary: "sliding-window occlusion of the class probability (window, stride, baseline)", Needs: sdk.NeedsProbs}
}

type config struct {
	window, stride int
	baseline       float32
}

func parse(cfg sdk.Config) (config, error) {
	if err := cfg.Only("window", "stride", "baseline"); err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	w, err := cfg.IntRange("window", 60, 1, 1<<20)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	s, err := cfg.IntRange("stride", 1, 1, 1<<20)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if s > w {
		return config{}, fmt.Errorf("%s: key %q: %d is larger than the window (%d), so the samples between windows would never be occluded (accepted: 1 <= stride <= window)", ID, "stride", s, w)
	}
	b, err := cfg.Float("baseline", 0)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	return config{window: w, stride: s, baseline: float32(b)}, nil
}

// Check validates window (>= 1, default 60), stride (>= 1, default 1) and
// baseline (a number, default 0).
func (*Explainer) Check(cfg sdk.Config) error { _, err := parse(cfg); return err }

// WindowProber is implemented by models that compute the probabilities of
// occluded copies of an input faster than a full forward pass each (see
// nn.Inference.WindowProbs). Results must equal the plain computation.
type WindowProber interface {
	WindowProbs(dst []float32, x []float32, starts []int, width int, baseline float32, class int)
}

// CachedWindowProber computes what WindowProber does, and the class
// probability of the unperturbed input by the same computation, taking
// what the layers up to the global max pool give from a cache shared
// between models (see nn.TrunkCache), when PooledLen() > 0.
type CachedWindowProber interface {
	PooledLen() int
	WindowProbsCached(dst []float32, x []float32, starts []int, width int, baseline float32, class int, c *nn.TrunkCache) float32
}

// Explain computes one occlusion map per input.
func (e *Explainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	c, err := parse(req.Config)
	if err != nil {
		return nil, err
	}
	n := m.InputLen()
	if c.window > m.Arch().InLen {
		return nil, fmt.Errorf("%s: key %q: window %d is longer than the input (%d samples)", ID, "window", c.window, m.Arch().InLen)
	}
	B := len(req.Targets)
	if len(req.X) != B*n {
		return nil, fmt.Errorf("%s: %d input values for %d targets of %d samples", ID, len(req.X), B, n)
	}
	T := m.Arch().InLen // windows slide over time, across every channel
	var starts []int
	for s := 0; s+c.window <= T; s += c.stride {
		starts = append(starts, s)
	}
	k := m.Classes()
	fast, _ := m.(WindowProber)
	cached, _ := m.(CachedWindowProber)
	if cached != nil && (cached.PooledLen() == 0 || e.trunks == nil) {
		cached = nil
	}
	var base []float32 // the class probabilities of the inputs, unless cached computes them
	if cached == nil {
		base = make([]float32, B*k)
		m.Probs(base, req.X)
	}
	const chunk = 64
	buf := make([]float32, chunk*n)
	probs := make([]float32, chunk*k)
	pw := make([]float32, len(starts))
	out := make([][]float64, B)
	for b := 0; b < B; b++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		y := req.Targets[b]
		if y < 0 || y >= k {
			return nil, fmt.Errorf("%s: input %d: target class %d out of range 0..%d", ID, b, y, k-1)
		}
		x := req.X[b*n : (b+1)*n]
		var p0 float32
		if cached != nil {
			p0 = cached.WindowProbsCached(pw, x, starts, c.window, c.baseline, y, e.trunks)
		} else if fast != nil {
			fast.WindowProbs(pw, x, starts, c.window, c.baseline, y)
		} else {
			for s0 := 0; s0 < len(starts); s0 += chunk {
				s1 := min(s0+chunk, len(starts))
				for j := s0; j < s1; j++ {
					row := buf[(j-s0)*n : (j-s0+1)*n]
					copy(row, x)
					for ch := 0; ch < n/T; ch++ {
						for t := starts[j]; t < starts[j]+c.window; t++ {
							row[ch*T+t] = c.baseline
						}
					}
				}
				m.Probs(probs[:(s1-s0)*k], buf[:(s1-s0)*n])
				for j := s0; j < s1; j++ {
					pw[j] = probs[(j-s0)*k+y]
				}
			}
		}
		if cached == nil {
			p0 = base[b*k+y]
		}
		row := Accumulate(make([]float64, T), p0, pw, starts, c.window)
		out[b] = make([]float64, n)
		for ch := 0; ch < n/T; ch++ {
			copy(out[b][ch*T:], row)
		}
	}
	return out, nil
}

// Accumulate writes map[t] = mean over the windows s covering t of
// (p0 - pw[s]) into dst (0 where no window covers t), and returns dst.
// starts must not decrease. The windows covering t are a run j0..j1-1 of
// starts, so the sum is P[j1] - P[j0] with P the prefix sums of the
// differences, in float64: O(len(dst) + len(starts)).
func Accumulate(dst []float64, p0 float32, pw []float32, starts []int, window int) []float64 {
	prefix := make([]float64, len(starts)+1)
	for j, s := range starts {
		if j > 0 && s < starts[j-1] {
			panic("occlusion: Accumulate: starts decrease")
		}
		prefix[j+1] = prefix[j] + (float64(p0) - float64(pw[j]))
	}
	j0, j1 := 0, 0
	for t := range dst {
		for j1 < len(starts) && starts[j1] <= t {
			j1++
		}
		for j0 < j1 && starts[j0]+window <= t {
			j0++
		}
		dst[t] = 0
		if j1 > j0 {
			dst[t] = (prefix[j1] - prefix[j0]) / float64(j1-j0)
		}
	}
	return dst
}
