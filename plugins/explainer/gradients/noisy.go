package gradients

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// The noisy explainers.
const (
	SmoothGradID   = "explainer.smoothgrad"
	GradientShapID = "explainer.gradient_shap"
)

// The nt_type values of smoothgrad (Captum's NoiseTunnel).
const (
	SmoothGrad   = "smoothgrad"
	SmoothGradSq = "smoothgrad_sq"
	VarGrad      = "vargrad"
)

// Noisy is smoothgrad, or with shap gradient_shap: both average the
// gradients at random points around the input (the package comment).
// Input i's draws come from rng.New(req.Seeds[i]) in this order: for
// each of its samples k, the noise of its values (channel-major, only
// when stdevs > 0), then for gradient_shap a_k.
type Noisy struct {
	shap bool
	// given, in tests, replaces the draws by Captum's points: input i's
	// sample k at given[(i*S+k)*n:], n an input's values (the noisy
	// input for smoothgrad; for gradient_shap, whose stdevs must then be
	// 0, the point between the baseline and the input).
	given []float32
}

// NewSmoothGrad returns explainer.smoothgrad.
func NewSmoothGrad() *Noisy { return &Noisy{} }

// NewGradientShap returns explainer.gradient_shap.
func NewGradientShap() *Noisy { return &Noisy{shap: true} }

// Info describes the plugin: stochastic (seeded by the input's seed).
func (e *Noisy) Info() sdk.Info {
	if e.shap {
		return sdk.Info{ID: GradientShapID, Version: Version, Summary: "GradientSHAP of the class probability from a constant baseline (Captum's GradientShap)", Needs: sdk.NeedsInputGrad, Stochastic: true}
	}
	return sdk.Info{ID: SmoothGradID, Version: Version, Summary: "SmoothGrad, its squared form and VarGrad of the saliency (Captum's NoiseTunnel over Saliency)", Needs: sdk.NeedsInputGrad, Stochastic: true}
}

type noisyConfig struct {
	samples  int
	stdev    float64
	ntType   string
	abs      bool
	baseline float64
}

func (e *Noisy) parse(cfg sdk.Config) (noisyConfig, error) {
	id := e.Info().ID
	c := noisyConfig{}
	var err error
	wrap := func(err error) error { return fmt.Errorf("%s: %w", id, err) }
	if e.shap {
		if err := cfg.Only("n_samples", "stdevs", "baseline"); err != nil {
			return c, wrap(err)
		}
		if c.samples, err = cfg.IntRange("n_samples", 5, 1, MaxSteps); err != nil {
			return c, wrap(err)
		}
		if c.stdev, err = cfg.Float("stdevs", 0); err != nil {
			return c, wrap(err)
		}
		if c.baseline, err = cfg.Float("baseline", 0); err != nil {
			return c, wrap(err)
		}
	} else {
		if err := cfg.Only("nt_samples", "stdevs", "nt_type", "abs"); err != nil {
			return c, wrap(err)
		}
		if c.samples, err = cfg.IntRange("nt_samples", 5, 1, MaxSteps); err != nil {
			return c, wrap(err)
		}
		if c.stdev, err = cfg.Float("stdevs", 1); err != nil {
			return c, wrap(err)
		}
		if c.ntType, err = cfg.String("nt_type", SmoothGrad); err != nil {
			return c, wrap(err)
		}
		if c.ntType != SmoothGrad && c.ntType != SmoothGradSq && c.ntType != VarGrad {
			return c, wrap(fmt.Errorf("key \"nt_type\": %q (accepted: %s, %s, %s)", c.ntType, SmoothGrad, SmoothGradSq, VarGrad))
		}
		if c.abs, err = cfg.Bool("abs", true); err != nil {
			return c, wrap(err)
		}
	}
	if c.stdev < 0 {
		return c, wrap(fmt.Errorf("key \"stdevs\": %v (accepted: a standard deviation >= 0)", c.stdev))
	}
	return c, nil
}

// Check validates the table: smoothgrad's nt_samples (default 5), stdevs
// (>= 0, default 1), nt_type (default "smoothgrad") and abs (default
// true); gradient_shap's n_samples (default 5), stdevs (default 0) and
// baseline (default 0).
func (e *Noisy) Check(cfg sdk.Config) error {
	_, err := e.parse(cfg)
	return err
}

// Explain draws each input's samples and computes their gradients in
// batched calls.
func (e *Noisy) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	c, err := e.parse(req.Config)
	if err != nil {
		return nil, err
	}
	n, b, err := check(m, req)
	if err != nil {
		return nil, err
	}
	if len(req.Seeds) != b {
		return nil, fmt.Errorf("%s: %d seeds for %d inputs; want one an input", e.Info().ID, len(req.Seeds), b)
	}
	S := c.samples
	out, flat := maps(b, n)
	per := max(maxPoints/S, 1)
	base := float32(c.baseline)
	for i0 := 0; i0 < b; i0 += per {
		i1 := min(i0+per, b)
		np := (i1 - i0) * S
		pts, g, noisy := make([]float32, np*n), make([]float32, np*n), make([]float32, np*n)
		owner := make([]int, np)
		for i := i0; i < i1; i++ {
			r := rng.New(req.Seeds[i])
			x := req.X[i*n : (i+1)*n]
			for k := range S {
				j := (i-i0)*S + k
				owner[j] = i
				xk := noisy[j*n : (j+1)*n]
				if e.given != nil {
					g := e.given[(i*S+k)*n : (i*S+k+1)*n]
					copy(pts[j*n:(j+1)*n], g)
					if copy(xk, g); e.shap {
						copy(xk, x)
					}
					continue
				}
				for t, v := range x {
					xk[t] = v
					if c.stdev > 0 {
						xk[t] = v + float32(c.stdev*r.NormFloat64())
					}
				}
				p := pts[j*n : (j+1)*n]
				if !e.shap {
					copy(p, xk)
					continue
				}
				a := float32(r.Float64())
				for t, v := range xk {
					p[t] = base + a*(v-base)
				}
			}
		}
		if err := gradAt(ctx, m, g, pts, req.Targets, owner); err != nil {
			return nil, err
		}
		sq := make([]float64, n)
		for i := i0; i < i1; i++ {
			mp := flat[i*n : (i+1)*n]
			clear(sq)
			for k := range S {
				j := (i-i0)*S + k
				gk, xk := g[j*n:(j+1)*n], noisy[j*n:(j+1)*n]
				for t, v := range gk {
					a := float64(v)
					switch {
					case e.shap:
						a *= float64(xk[t]) - c.baseline
					case c.abs:
						a = math.Abs(a)
					}
					mp[t] += a
					sq[t] += a * a
				}
			}
			for t := range mp {
				mean := mp[t] / float64(S)
				switch c.ntType {
				case SmoothGradSq:
					mp[t] = sq[t] / float64(S)
				case VarGrad:
					mp[t] = sq[t]/float64(S) - mean*mean
				default:
					mp[t] = mean
				}
			}
		}
	}
	return out, nil
}
