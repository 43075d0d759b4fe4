package occlusion

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
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
	return sdk.Info{ID: ID, Version: "1.3.0", Summary: "sliding-window occlusion of the class probability (window, stride, baseline: a number, mean, noise or fundamental; channels: each or all)", Needs: sdk.NeedsProbs}
}

// The baselines other than a number.
const (
	Mean        = "mean"
	Noise       = "noise"
	Fundamental = "fundamental"
)

// acceptedBaselines is what the key baseline accepts, for error messages.
const acceptedBaselines = `a number, "mean", "noise", "fundamental"`

// The values of the key channels.
const (
	Each = "each"
	All  = "all"
)

type config struct {
	window, stride int
	baseline       float32 // the constant, when kind is ""
	kind           string  // "", Mean, Noise or Fundamental
	seed           uint64  // Noise
	period         float64 // Fundamental
	all            bool    // channels = "all": a window occludes every channel
}

func parse(cfg sdk.Config) (config, error) {
	if err := cfg.Only("window", "stride", "baseline", "seed", "period", "channels"); err != nil {
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
	c := config{window: w, stride: s}
	switch v := cfg["channels"].(type) {
	case nil:
	case string:
		switch v {
		case Each:
		case All:
			c.all = true
		default:
			return config{}, fmt.Errorf("%s: key %q: %s is not a choice (accepted: %q, the default, or %q)", ID, "channels", sdk.Quote(v), Each, All)
		}
	default:
		return config{}, fmt.Errorf("%s: key %q: want %q or %q, got %T %s", ID, "channels", Each, All, v, sdk.Quote(v))
	}
	switch v := cfg["baseline"].(type) {
	case string:
		switch v {
		case Mean, Noise, Fundamental:
			c.kind = v
		default:
			return config{}, fmt.Errorf("%s: key %q: %s is not a baseline (accepted: %s)", ID, "baseline", sdk.Quote(v), acceptedBaselines)
		}
	case nil, float64, float32, int64, int:
		b, err := cfg.Float("baseline", 0)
		if err != nil {
			return config{}, fmt.Errorf("%s: %w (accepted: %s)", ID, err, acceptedBaselines)
		}
		if math.Abs(b) > math.MaxFloat32 {
			return config{}, fmt.Errorf("%s: key %q: %v is beyond float32 (accepted: %s)", ID, "baseline", b, acceptedBaselines)
		}
		c.baseline = float32(b)
	default:
		return config{}, fmt.Errorf("%s: key %q: want %s, got %T %s", ID, "baseline", acceptedBaselines, v, sdk.Quote(v))
	}
	if _, ok := cfg["seed"]; ok && c.kind != Noise {
		return config{}, fmt.Errorf("%s: key %q applies only to baseline = %q (the baseline is %s)", ID, "seed", Noise, baselineName(c))
	}
	if _, ok := cfg["period"]; ok && c.kind != Fundamental {
		return config{}, fmt.Errorf("%s: key %q applies only to baseline = %q (the baseline is %s)", ID, "period", Fundamental, baselineName(c))
	}
	seed, err := cfg.IntRange("seed", 0, 0, 1<<53)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	c.seed = uint64(seed)
	c.period, err = cfg.Float("period", 64)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if !(c.period > 2 && c.period <= 1<<20) {
		return config{}, fmt.Errorf("%s: key %q: %v samples a cycle (accepted: 2 < period <= %d; at 2 or less the sine is not resolved)", ID, "period", c.period, 1<<20)
	}
	return c, nil
}

// baselineName is the baseline of c as a recipe writes it.
func baselineName(c config) string {
	if c.kind != "" {
		return strconv.Quote(c.kind)
	}
	return strconv.FormatFloat(float64(c.baseline), 'g', -1, 32)
}

// Check validates window (>= 1, default 60), stride (1..window, default 1),
// baseline (a number, default 0, or "mean", "noise", "fundamental"), seed
// (only with "noise"; 0..2^53, default 0) and period (only with
// "fundamental"; samples a cycle, > 2, default 64) and channels ("each",
// the default, or "all").
func (*Explainer) Check(cfg sdk.Config) error { _, err := parse(cfg); return err }

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
	T := m.Arch().InLen // windows slide over time
	var starts []int
	for s := 0; s+c.window <= T; s += c.stride {
		starts = append(starts, s)
	}
	var z []float32 // the baseline signal of the current input, unless the baseline is a number
	var fit *fundamentalFit
	if c.kind != "" {
		z = make([]float32, n)
		if c.kind == Fundamental {
			if fit, err = newFundamentalFit(T, c.period); err != nil {
				return nil, err
			}
		}
	}
	k := m.Classes()
	C := n / T
	each := !c.all && C > 1              // one channel at a time
	pw := make([]float32, len(starts)+1) // the windows', then x's probability
	for i, v := range req.X {
		if v-v != 0 { // NaN or ±Inf: the model has no probabilities for it
			b, j := i/n, i%n
			if c.kind != "" {
				return nil, fmt.Errorf("%s: input %d: sample %d (channel %d, t %d) is %v, so the record has no %s baseline", ID, b, j, j/T, j%T, v, c.kind)
			}
			return nil, fmt.Errorf("%s: input %d: sample %d (channel %d, t %d) is %v (accepted: finite samples)", ID, b, j, j/T, j%T, v)
		}
	}
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
		if z != nil {
			if err := baselineSignal(z, x, T, c, fit); err != nil {
				return nil, fmt.Errorf("%s: input %d: %w", ID, b, err)
			}
		}
		// Every call asks for x's own probability by the windows'
		// computation, so that a window that changes nothing scores 0.
		r := nn.Perturbation{X: x, Class: y, Baseline: c.baseline, Signal: z, Starts: starts, Width: c.window, Channel: nn.AllChannels, Unperturbed: true, Cache: e.trunks}
		out[b] = make([]float64, n)
		if !each {
			if err := nn.Perturbed(ctx, m, r, pw); err != nil {
				return nil, fmt.Errorf("%s: input %d: %w", ID, b, err)
			}
			row := Accumulate(out[b][:T], pw[len(starts)], pw[:len(starts)], starts, c.window)
			for ch := 1; ch < C; ch++ {
				copy(out[b][ch*T:], row)
			}
			continue
		}
		// x's probability does not depend on the channel: the first
		// channel's call computes it, the others reuse it.
		var p0 float32
		for ch := 0; ch < C; ch++ {
			r.Channel, r.Unperturbed = ch, ch == 0
			dst := pw
			if ch > 0 {
				dst = pw[:len(starts)]
			}
			if err := nn.Perturbed(ctx, m, r, dst); err != nil {
				return nil, fmt.Errorf("%s: input %d, channel %d: %w", ID, b, ch, err)
			}
			if ch == 0 {
				p0 = pw[len(starts)]
			}
			Accumulate(out[b][ch*T:(ch+1)*T], p0, pw[:len(starts)], starts, c.window)
		}
	}
	return out, nil
}

// baselineSignal writes the baseline signal of c (Mean, Noise or
// Fundamental; see the package comment) for the record x of n/T channels
// of T samples into dst (len(x)). fit is the fit of Fundamental. A record
// with non-finite values, or whose baseline overflows float32, is an error.
func baselineSignal(dst, x []float32, T int, c config, fit *fundamentalFit) error {
	if len(dst) != len(x) || len(x)%T != 0 {
		panic("occlusion: baselineSignal: lengths")
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("sample %d (channel %d, t %d) is %v, so the record has no %s baseline", i, i/T, i%T, v, c.kind)
		}
	}
	switch c.kind {
	case Mean:
		MeanSignal(dst, x, T)
	case Noise:
		NoiseSignal(dst, x, T, c.seed)
	case Fundamental:
		fit.Signal(dst, x)
	default:
		panic("occlusion: baselineSignal: baseline " + c.kind)
	}
	for i, v := range dst {
		if math.IsInf(float64(v), 0) {
			return fmt.Errorf("the %s baseline at sample %d (channel %d, t %d) overflows float32", c.kind, i, i/T, i%T)
		}
	}
	return nil
}

// meanStd returns the mean mu = (1/T) sum_t r[t] and the standard
// deviation sigma = sqrt((1/T) sum_t (r[t] - mu)^2) of one channel's row,
// in float64.
func meanStd(r []float32) (mu, sigma float64) {
	for _, v := range r {
		mu += float64(v)
	}
	mu /= float64(len(r))
	for _, v := range r {
		d := float64(v) - mu
		sigma += d * d
	}
	return mu, math.Sqrt(sigma / float64(len(r)))
}

// MeanSignal writes dst[c*T+t] = mu_c = (1/T) sum_u x[c*T+u], each
// channel's mean over the record, and returns dst.
func MeanSignal(dst, x []float32, T int) []float32 {
	if len(dst) != len(x) || T < 1 || len(x)%T != 0 {
		panic("occlusion: MeanSignal: lengths")
	}
	for c := 0; c < len(x)/T; c++ {
		mu, _ := meanStd(x[c*T : (c+1)*T])
		row := dst[c*T : (c+1)*T]
		for t := range row {
			row[t] = float32(mu)
		}
	}
	return dst
}

// NoiseKey is the key (sdk/rng) of the noise stream of record x under
// seed: rng.Key(seed, "explainer.occlusion noise", h, -1, -1) with h the
// FNV-1a hash of x's float32 bits (little endian) in hexadecimal.
func NoiseKey(x []float32, seed uint64) uint64 {
	f := fnv.New64a()
	var b [4]byte
	for _, v := range x {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		f.Write(b[:])
	}
	return rng.Key(seed, "explainer.occlusion noise", strconv.FormatUint(f.Sum64(), 16), -1, -1)
}

// NoiseSignal writes dst[c*T+t] = mu_c + sigma_c e[c*T+t], mu_c and
// sigma_c channel c's mean and standard deviation over the record (1/T)
// and e standard normal draws of the stream rng.New(NoiseKey(x, seed)) in
// index order, and returns dst.
func NoiseSignal(dst, x []float32, T int, seed uint64) []float32 {
	if len(dst) != len(x) || T < 1 || len(x)%T != 0 {
		panic("occlusion: NoiseSignal: lengths")
	}
	r := rng.New(NoiseKey(x, seed))
	for c := 0; c < len(x)/T; c++ {
		mu, sigma := meanStd(x[c*T : (c+1)*T])
		row := dst[c*T : (c+1)*T]
		for t := range row {
			row[t] = float32(mu + sigma*r.NormFloat64())
		}
	}
	return dst
}

// fundamentalFit is the least-squares fit of m + a sin(w t) + b cos(w t),
// w = 2 pi / period, over t = 0..T-1: the basis and the inverse of its
// Gram matrix, which depend only on T and the period.
type fundamentalFit struct {
	T      int
	sin    []float64
	cos    []float64
	inv    [3][3]float64
	period float64
}

// newFundamentalFit prepares the fit over T samples; it fails when the
// basis 1, sin, cos is (numerically) dependent over T samples.
func newFundamentalFit(T int, period float64) (*fundamentalFit, error) {
	f := &fundamentalFit{T: T, sin: make([]float64, T), cos: make([]float64, T), period: period}
	var g [3][3]float64
	for t := range T {
		s, c := math.Sincos(2 * math.Pi * float64(t) / period)
		f.sin[t], f.cos[t] = s, c
		u := [3]float64{1, s, c}
		for i := range 3 {
			for j := range 3 {
				g[i][j] += u[i] * u[j]
			}
		}
	}
	// The inverse by the adjugate: inv = adj(g) / det(g).
	det := g[0][0]*(g[1][1]*g[2][2]-g[1][2]*g[2][1]) - g[0][1]*(g[1][0]*g[2][2]-g[1][2]*g[2][0]) + g[0][2]*(g[1][0]*g[2][1]-g[1][1]*g[2][0])
	if !(det > 1e-9*g[0][0]*g[1][1]*g[2][2]) {
		return nil, fmt.Errorf("%s: key %q: a sine of %v samples a cycle cannot be fitted over %d samples (its Gram matrix is singular): use more samples or another period", ID, "period", period, T)
	}
	for i := range 3 {
		for j := range 3 {
			// cofactor (j, i)
			r0, r1 := (j+1)%3, (j+2)%3
			c0, c1 := (i+1)%3, (i+2)%3
			f.inv[i][j] = (g[r0][c0]*g[r1][c1] - g[r0][c1]*g[r1][c0]) / det
		}
	}
	return f, nil
}

// Signal writes to dst[c*T+t] channel c's fit m_c + a_c sin(w t) + b_c
// cos(w t), (m_c, a_c, b_c) = G^-1 (sum_t x, sum_t x sin, sum_t x cos) the
// least-squares coefficients, and returns dst.
func (f *fundamentalFit) Signal(dst, x []float32) []float32 {
	T := f.T
	if len(dst) != len(x) || len(x)%T != 0 {
		panic("occlusion: fundamentalFit.Signal: lengths")
	}
	for c := 0; c < len(x)/T; c++ {
		var r [3]float64
		for t, v := range x[c*T : (c+1)*T] {
			r[0] += float64(v)
			r[1] += float64(v) * f.sin[t]
			r[2] += float64(v) * f.cos[t]
		}
		var k [3]float64
		for i := range 3 {
			k[i] = f.inv[i][0]*r[0] + f.inv[i][1]*r[1] + f.inv[i][2]*r[2]
		}
		row := dst[c*T : (c+1)*T]
		for t := range row {
			row[t] = float32(k[0] + k[1]*f.sin[t] + k[2]*f.cos[t])
		}
	}
	return dst
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
