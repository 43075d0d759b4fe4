// Package lime is the attribution operator "explainer.lime": LIME on
// contiguous features of an input of C channels of T samples (channel-major,
// x[c*T+t]). Segment k of a channel is its samples kw .. min((k+1)w, T)-1,
// K = ceil(T/w) of them; the key "features" makes the features
//
//   - "channel-segment" (the default): C*K features, feature c*K+k is
//     segment k of channel c only;
//   - "segment": K features, feature k is segment k of every channel;
//
// for C = 1 both are the K segments. Each of n interpretable samples m in
// {0,1}^F keeps every feature with probability 1/2 (one bit of the
// input's seed's stream a feature, in feature order, so a run gives the
// same maps for any worker count); the perturbed input is x'[i] = x[i]
// m[f(i)] (baseline 0), f(i) the feature of input value i, its output the
// target's probability, and its weight the exponential kernel on cosine
// distance over all C*T values,
//
//	w = exp(-d^2 / (2 width^2)),  d = 1 - <x, x'> / (|x| |x'|)  (d = 1 if x' = 0).
//
// A weighted linear surrogate out ≈ b + sum_j c_j m_j is fitted, and each
// coefficient c_j is spread over its feature's values: map[i] = c[f(i)].
// This is Captum's Lime with a feature_mask of shape (1, C, T) holding
// f(c*T+t) (testdata/golden/lime-3ch checks it for C = 3).
//
// Configuration: "samples" n (default 128), "feature" w (default 16, 40
// segments of the paper's 640 samples), "features" (above),
// "kernel_width" (default 1.0), "surrogate" "lasso" (default) or "ols",
// and "alpha", the lasso's penalty (default 1e-4).
//
// Surrogates (as scikit-learn with sample weights, in float64):
//   - "ols": weighted least squares with an intercept,
//     argmin sum_k w_k (out_k - b - m_k.c)^2 (the minimum-norm solution
//     when the design is rank deficient);
//   - "lasso": argmin (1/(2 sum_k w_k)) sum_k w_k (out_k - b - m_k.c)^2 +
//     alpha |c|_1, the intercept not penalised, by cyclic coordinate
//     descent on the weighted, centred data until no coefficient moves by
//     more than 1e-12 (at most 100,000 sweeps).
package lime

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ID is the plugin's ID.
const ID = "explainer.lime"

// Version is the plugin's version.
const Version = "1.1.0" // 1.1.0: (channel, segment) features for C > 1 (features)

// Explainer is LIME.
type Explainer struct{}

// New returns the LIME explainer.
func New() *Explainer { return &Explainer{} }

// Info describes the plugin: it needs probabilities and draws random
// numbers.
func (*Explainer) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: Version, Summary: "LIME on contiguous features, weighted lasso or OLS surrogate (samples, feature, features, kernel_width, surrogate, alpha)", Needs: sdk.NeedsProbs, Stochastic: true}
}

// Config is LIME's configuration.
type Config struct {
	Samples     int     // interpretable samples n
	Feature     int     // segment width w, in input samples
	Segment     bool    // features "segment" (across channels); else "channel-segment"
	KernelWidth float64 // width of the exponential kernel
	Lasso       bool    // the lasso surrogate; else OLS
	Alpha       float64 // the lasso's penalty
}

// Feature layouts, the values of the key "features".
const (
	ChannelSegment = "channel-segment"
	Segment        = "segment"
)

func parse(cfg sdk.Config) (Config, error) {
	if err := cfg.Only("samples", "feature", "features", "kernel_width", "surrogate", "alpha"); err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	var c Config
	var err error
	if c.Samples, err = cfg.IntRange("samples", 128, 2, 1<<20); err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if c.Feature, err = cfg.IntRange("feature", 16, 1, 1<<30); err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	fs, err := cfg.String("features", ChannelSegment)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	switch fs {
	case ChannelSegment:
	case Segment:
		c.Segment = true
	default:
		return Config{}, fmt.Errorf("%s: key %q is %q (accepted: %q, %q)", ID, "features", fs, ChannelSegment, Segment)
	}
	if c.KernelWidth, err = cfg.Float("kernel_width", 1); err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if !(c.KernelWidth > 0 && !math.IsInf(c.KernelWidth, 0)) {
		return Config{}, fmt.Errorf("%s: key %q: %v (accepted: a finite number > 0)", ID, "kernel_width", c.KernelWidth)
	}
	s, err := cfg.String("surrogate", "lasso")
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	switch s {
	case "lasso":
		c.Lasso = true
	case "ols":
	default:
		return Config{}, fmt.Errorf("%s: key %q is %q (accepted: %q, %q)", ID, "surrogate", s, "lasso", "ols")
	}
	if c.Alpha, err = cfg.Float("alpha", 1e-4); err != nil {
		return Config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if !(c.Alpha >= 0 && !math.IsInf(c.Alpha, 0)) {
		return Config{}, fmt.Errorf("%s: key %q: %v (accepted: a finite number >= 0)", ID, "alpha", c.Alpha)
	}
	return c, nil
}

// Check validates the configuration.
func (*Explainer) Check(cfg sdk.Config) error {
	_, err := parse(cfg)
	return err
}

// Features is how LIME cuts an input of C channels of T samples
// (channel-major) into features: segment k of a channel is its samples
// k*Width .. min((k+1)*Width, T)-1; with PerChannel, feature c*K+k is
// segment k of channel c, else feature k is segment k of every channel.
type Features struct {
	C, T, Width int
	PerChannel  bool
}

// Segments is K = ceil(T/Width).
func (f Features) Segments() int { return (f.T + f.Width - 1) / f.Width }

// Len is the number of features: C*K per channel, else K.
func (f Features) Len() int {
	if f.PerChannel {
		return f.C * f.Segments()
	}
	return f.Segments()
}

// Of is the feature of input value i = c*T+t.
func (f Features) Of(i int) int {
	k := i % f.T / f.Width
	if f.PerChannel {
		return i/f.T*f.Segments() + k
	}
	return k
}

// ChannelSpans writes the masked-out features of each sample as spans of
// their channels (AllChannels when the features cover every channel),
// consecutive segments of a channel merged, and returns dst, its slices
// reused.
func (f Features) ChannelSpans(dst [][]nn.ChannelSpan, masks [][]bool) [][]nn.ChannelSpan {
	dst = dst[:0]
	K := f.Segments()
	for i, mk := range masks {
		var sp []nn.ChannelSpan
		if i < cap(dst) {
			sp = dst[:i+1][i][:0]
		}
		for j, keep := range mk {
			if keep {
				continue
			}
			ch, k := nn.AllChannels, j
			if f.PerChannel {
				ch, k = j/K, j%K
			}
			lo, hi := k*f.Width, min((k+1)*f.Width, f.T)
			if n := len(sp) - 1; n >= 0 && sp[n].Ch == ch && sp[n].Hi == lo {
				sp[n].Hi = hi
			} else {
				sp = append(sp, nn.ChannelSpan{Ch: ch, Lo: lo, Hi: hi})
			}
		}
		dst = append(dst, sp)
	}
	return dst
}

// SpanProber is implemented by models that compute the probabilities of
// copies of an input with time spans set to a baseline faster than a
// forward pass each (nn.GraphModel.SpanProbs); their results equal the
// forward passes' up to float32 rounding.
type SpanProber interface {
	SpanProbs(dst, x []float32, spans [][]nn.Span, baseline float32, class int)
}

// ChannelSpanProber is SpanProber for spans of single channels
// (nn.GraphModel.ChannelSpanProbs).
type ChannelSpanProber interface {
	ChannelSpanProbs(dst, x []float32, spans [][]nn.ChannelSpan, baseline float32, class int)
}

// Spans writes the masked-out features of each sample as time spans
// (consecutive features merged): spans[i] covers the samples j*feature ..
// min((j+1)*feature, n)-1 of every feature j with masks[i][j] false. It
// reuses the slices of spans and returns it.
func Spans(spans [][]nn.Span, masks [][]bool, feature, n int) [][]nn.Span {
	spans = spans[:0]
	for i, mk := range masks {
		var sp []nn.Span
		if i < cap(spans) {
			sp = spans[:i+1][i][:0]
		}
		for j, keep := range mk {
			if keep {
				continue
			}
			lo, hi := j*feature, min((j+1)*feature, n)
			if k := len(sp) - 1; k >= 0 && sp[k].Hi == lo {
				sp[k].Hi = hi
			} else {
				sp = append(sp, nn.Span{Lo: lo, Hi: hi})
			}
		}
		spans = append(spans, sp)
	}
	return spans
}

// features is the feature layout of cfg for model m.
func (c Config) features(m nn.Model) Features {
	a := m.Arch()
	C := max(a.InChannels, 1)
	return Features{C: C, T: m.InputLen() / C, Width: c.Feature, PerChannel: !c.Segment && C > 1}
}

// scratch holds the buffers of one Explain call.
type scratch struct {
	xs, probs []float32
	out, w    []float64
	spans     [][]nn.Span
	cspans    [][]nn.ChannelSpan
}

func newScratch(samples, n, k int) *scratch {
	return &scratch{xs: make([]float32, samples*n), probs: make([]float32, samples*k), out: make([]float64, samples), w: make([]float64, samples)}
}

// outputs writes sc.out[i], the target's probability of x with the
// features masked out by masks[i] set to 0, and sc.w[i], its weight: by
// the model's span path when it has one (SpanProbs when every feature
// covers every channel, ChannelSpanProbs otherwise), else by forward
// passes.
func (c Config) outputs(m nn.Model, x []float32, target int, fs Features, masks [][]bool, sc *scratch) {
	perturb(sc.xs, sc.w, x, masks, fs, c.KernelWidth)
	sp, _ := m.(SpanProber)
	csp, _ := m.(ChannelSpanProber)
	switch {
	case sp != nil && (fs.C == 1 || !fs.PerChannel):
		sc.spans = Spans(sc.spans, masks, fs.Width, fs.T)
		sp.SpanProbs(sc.probs[:len(masks)], x, sc.spans, 0, target)
		for i := range masks {
			sc.out[i] = float64(sc.probs[i])
		}
	case csp != nil:
		sc.cspans = fs.ChannelSpans(sc.cspans, masks)
		csp.ChannelSpanProbs(sc.probs[:len(masks)], x, sc.cspans, 0, target)
		for i := range masks {
			sc.out[i] = float64(sc.probs[i])
		}
	default:
		k := m.Classes()
		m.Probs(sc.probs, sc.xs)
		for i := range masks {
			sc.out[i] = float64(sc.probs[i*k+target])
		}
	}
}

// fit returns the surrogate's coefficients on masks and sc's outputs and
// weights.
func (c Config) fit(masks [][]bool, sc *scratch) []float64 {
	if c.Lasso {
		coef, _ := Lasso(masks, sc.out, sc.w, c.Alpha)
		return coef
	}
	coef, _ := OLS(masks, sc.out, sc.w)
	return coef
}

// Explain returns the LIME map of each input for its target class.
func (*Explainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	c, err := parse(req.Config)
	if err != nil {
		return nil, err
	}
	n := m.InputLen()
	fs := c.features(m)
	k := m.Classes()
	masks := make([][]bool, c.Samples)
	for i := range masks {
		masks[i] = make([]bool, fs.Len())
	}
	sc := newScratch(c.Samples, n, k)
	maps := make([][]float64, len(req.Targets))
	for b := range maps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if y := req.Targets[b]; y < 0 || y >= k {
			return nil, fmt.Errorf("%s: input %d: target class %d out of range 0..%d", ID, b, y, k-1)
		}
		x := req.X[b*n : (b+1)*n]
		Draw(masks, req.Seeds[b])
		c.outputs(m, x, req.Targets[b], fs, masks, sc)
		coef := c.fit(masks, sc)
		maps[b] = make([]float64, n)
		for i := range maps[b] {
			maps[b][i] = coef[fs.Of(i)]
		}
	}
	return maps, nil
}

// Draw fills the interpretable samples from the stream of seed:
// masks[i][j] keeps feature j of sample i with probability 1/2, one bit of
// the stream each, in order.
func Draw(masks [][]bool, seed uint64) {
	r := rng.New(seed)
	for _, mk := range masks {
		for j := range mk {
			mk[j] = r.Uint64()&1 == 1
		}
	}
}

// perturb writes the perturbed inputs of masks (sample i at
// xs[i*N:(i+1)*N], x[t] where feature fs.Of(t) is kept, else 0) and w
// their similarities to x.
func perturb(xs []float32, w []float64, x []float32, masks [][]bool, fs Features, kernelWidth float64) {
	n := len(x)
	for i, mk := range masks {
		xp := xs[i*n : (i+1)*n]
		for t := range xp {
			xp[t] = 0
			if mk[fs.Of(t)] {
				xp[t] = x[t]
			}
		}
		w[i] = Similarity(x, xp, kernelWidth)
	}
}

// Sample draws the interpretable samples of input x from the stream of
// seed (Draw), writes the perturbed inputs to xs (sample i at
// xs[i*N:(i+1)*N], x[t] where feature fs.Of(t) is kept, else 0) and their
// similarities to x to w. masks is len(w) x fs.Len().
func Sample(masks [][]bool, xs []float32, w []float64, x []float32, fs Features, kernelWidth float64, seed uint64) {
	Draw(masks, seed)
	perturb(xs, w, x, masks, fs, kernelWidth)
}

// Similarity is the exponential kernel on cosine distance,
// exp(-d^2/(2 width^2)) with d = 1 - <x, xp>/(|x| |xp|), and d = 1 when
// either vector is zero. The sums run in float64.
func Similarity(x, xp []float32, width float64) float64 {
	var dot, nx, np float64
	for t, v := range x {
		a, b := float64(v), float64(xp[t])
		dot += a * b
		nx += a * a
		np += b * b
	}
	cos := 0.0
	if nx > 0 && np > 0 {
		cos = dot / (math.Sqrt(nx) * math.Sqrt(np))
	}
	d := 1 - cos
	return math.Exp(-d * d / (2 * width * width))
}

// weighted returns the weighted means of the design's columns and of y.
func weighted(m [][]bool, y, w []float64) (xm []float64, ym, sw float64) {
	f := len(m[0])
	xm = make([]float64, f)
	for k, row := range m {
		sw += w[k]
		ym += w[k] * y[k]
		for j, v := range row {
			if v {
				xm[j] += w[k]
			}
		}
	}
	for j := range xm {
		xm[j] /= sw
	}
	return xm, ym / sw, sw
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// OLS fits out ≈ b + m.c by weighted least squares with an intercept and
// returns c and b: the minimum-norm least-squares solution of the
// sqrt(w)-scaled system [M, 1], by SVD (the unique solution when the
// design has full rank).
func OLS(m [][]bool, y, w []float64) (c []float64, b float64) {
	n, f := len(m), len(m[0])
	a := mat.NewDense(n, f+1, nil)
	rhs := mat.NewDense(n, 1, nil)
	for k, row := range m {
		s := math.Sqrt(w[k])
		for j, v := range row {
			a.Set(k, j, s*b2f(v))
		}
		a.Set(k, f, s)
		rhs.Set(k, 0, s*y[k])
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return make([]float64, f), 0
	}
	var x mat.Dense
	svd.SolveTo(&x, rhs, svd.Rank(1e-12))
	c = make([]float64, f)
	for j := range c {
		c[j] = x.At(j, 0)
	}
	return c, x.At(f, 0)
}

// Lasso fits out ≈ b + m.c minimising (1/(2 sum w)) sum_k w_k (y_k - b -
// m_k.c)^2 + alpha |c|_1 by cyclic coordinate descent on the weighted,
// centred design, and returns c and b = ybar - xbar.c.
func Lasso(m [][]bool, y, w []float64, alpha float64) (c []float64, b float64) {
	n, f := len(m), len(m[0])
	xm, ym, sw := weighted(m, y, w)
	// Scaled, centred columns: X[k][j] = sqrt(w_k/sw) (m_kj - xm_j).
	x := make([][]float64, f)
	norm := make([]float64, f)
	for j := range x {
		x[j] = make([]float64, n)
		for k := range n {
			v := math.Sqrt(w[k]/sw) * (b2f(m[k][j]) - xm[j])
			x[j][k] = v
			norm[j] += v * v
		}
	}
	r := make([]float64, n) // residual of the scaled, centred y
	for k := range n {
		r[k] = math.Sqrt(w[k]/sw) * (y[k] - ym)
	}
	c = make([]float64, f)
	for sweep := 0; sweep < 100000; sweep++ {
		moved := 0.0
		for j := range f {
			if norm[j] == 0 {
				continue
			}
			rho := 0.0
			for k, v := range x[j] {
				rho += v * (r[k] + v*c[j])
			}
			next := math.Copysign(math.Max(math.Abs(rho)-alpha, 0), rho) / norm[j]
			if d := next - c[j]; d != 0 {
				for k, v := range x[j] {
					r[k] -= v * d
				}
				moved = math.Max(moved, math.Abs(d))
				c[j] = next
			}
		}
		if moved <= 1e-12 {
			break
		}
	}
	b = ym
	for j := range c {
		b -= xm[j] * c[j]
	}
	return c, b
}
