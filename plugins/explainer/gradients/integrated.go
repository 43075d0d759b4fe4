package gradients

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// IntegratedGradientsID is the integrated-gradients explainer.
const IntegratedGradientsID = "explainer.integrated_gradients"

// The path-integral rules of integrated_gradients (Captum's names).
const (
	GaussLegendre    = "gausslegendre"
	RiemannLeft      = "riemann_left"
	RiemannRight     = "riemann_right"
	RiemannMiddle    = "riemann_middle"
	RiemannTrapezoid = "riemann_trapezoid"
)

// IntegratedGradients is (x - x') * sum_i w_i g(x' + a_i (x - x')).
type IntegratedGradients struct{}

// NewIntegratedGradients returns explainer.integrated_gradients.
func NewIntegratedGradients() *IntegratedGradients { return &IntegratedGradients{} }

// Info describes the plugin.
func (*IntegratedGradients) Info() sdk.Info {
	return sdk.Info{ID: IntegratedGradientsID, Version: Version, Summary: "integrated gradients of the class probability from a constant baseline (Captum's IntegratedGradients)", Needs: sdk.NeedsInputGrad}
}

type igConfig struct {
	steps    int
	method   string
	baseline float64
}

func parseIG(cfg sdk.Config) (igConfig, error) {
	var c igConfig
	if err := cfg.Only("n_steps", "method", "baseline"); err != nil {
		return c, fmt.Errorf("%s: %w", IntegratedGradientsID, err)
	}
	var err error
	if c.steps, err = cfg.IntRange("n_steps", 50, 1, MaxSteps); err != nil {
		return c, fmt.Errorf("%s: %w", IntegratedGradientsID, err)
	}
	if c.method, err = cfg.String("method", GaussLegendre); err != nil {
		return c, fmt.Errorf("%s: %w", IntegratedGradientsID, err)
	}
	if c.baseline, err = cfg.Float("baseline", 0); err != nil {
		return c, fmt.Errorf("%s: %w", IntegratedGradientsID, err)
	}
	if _, _, err := Rule(c.method, c.steps); err != nil {
		return c, fmt.Errorf("%s: %w", IntegratedGradientsID, err)
	}
	return c, nil
}

// Check validates n_steps (1..MaxSteps, default 50; the trapezoid rule
// needs 2), method (default "gausslegendre") and baseline (a number,
// default 0).
func (*IntegratedGradients) Check(cfg sdk.Config) error {
	_, err := parseIG(cfg)
	return err
}

// Rule returns the nodes a_i in [0, 1] and weights w_i of a path-integral
// rule of n points, as Captum's approximation_methods gives them:
//
//	riemann_left:      a_i = i/n,          w_i = 1/n,  i = 0..n-1
//	riemann_right:     a_i = (i+1)/n,      w_i = 1/n
//	riemann_middle:    a_i = (i+1/2)/n,    w_i = 1/n
//	riemann_trapezoid: a_i = i/(n-1),      w_i = 1/(n-1), halved at both ends
//	gausslegendre:     a_i = (1 + z_i)/2,  w_i = v_i/2, z_i and v_i the
//	                   n-point Gauss-Legendre nodes and weights on [-1, 1]
func Rule(method string, n int) (alphas, weights []float64, err error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("n_steps %d (accepted: at least 1)", n)
	}
	alphas, weights = make([]float64, n), make([]float64, n)
	switch method {
	case RiemannLeft, RiemannRight, RiemannMiddle:
		off := map[string]float64{RiemannLeft: 0, RiemannRight: 1, RiemannMiddle: 0.5}[method]
		for i := range n {
			alphas[i], weights[i] = (float64(i)+off)/float64(n), 1/float64(n)
		}
	case RiemannTrapezoid:
		if n < 2 {
			return nil, nil, fmt.Errorf("method %q needs n_steps >= 2, got %d", method, n)
		}
		for i := range n {
			alphas[i], weights[i] = float64(i)/float64(n-1), 1/float64(n-1)
		}
		weights[0], weights[n-1] = weights[0]/2, weights[n-1]/2 // Captum's are 1/n (docs/own-data-and-models.md)
	case GaussLegendre:
		z, v := legendre(n)
		for i := range n {
			alphas[i], weights[i] = (1+z[i])/2, v[i]/2
		}
	default:
		return nil, nil, fmt.Errorf("method %q (accepted: %s, %s, %s, %s, %s)", method, GaussLegendre, RiemannLeft, RiemannRight, RiemannMiddle, RiemannTrapezoid)
	}
	return alphas, weights, nil
}

// legendre returns the n-point Gauss-Legendre nodes (ascending) and
// weights on [-1, 1]: the roots of P_n, by Newton's method from
// cos(pi (i + 3/4) / (n + 1/2)), and w = 2 / ((1 - z^2) P_n'(z)^2).
func legendre(n int) (z, w []float64) {
	z, w = make([]float64, n), make([]float64, n)
	for i := range (n + 1) / 2 {
		x := math.Cos(math.Pi * (float64(i) + 0.75) / (float64(n) + 0.5))
		var dp float64
		for range 100 {
			p0, p1 := 1.0, x // P_0, P_1
			for k := 2; k <= n; k++ {
				p0, p1 = p1, ((2*float64(k)-1)*x*p1-(float64(k)-1)*p0)/float64(k)
			}
			if n == 1 {
				p0, p1 = 1, x
			}
			dp = float64(n) * (x*p1 - p0) / (x*x - 1) // P_n'(x)
			dx := p1 / dp
			x -= dx
			if math.Abs(dx) < 1e-16 {
				break
			}
		}
		z[n-1-i], z[i] = x, -x
		w[i] = 2 / ((1 - x*x) * dp * dp)
		w[n-1-i] = w[i]
	}
	return z, w
}

// Explain computes each input's n_steps gradients in batched calls.
func (*IntegratedGradients) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	c, err := parseIG(req.Config)
	if err != nil {
		return nil, err
	}
	n, b, err := check(m, req)
	if err != nil {
		return nil, err
	}
	alphas, weights, _ := Rule(c.method, c.steps)
	out, flat := maps(b, n)
	base := float32(c.baseline)
	// inputs in groups so that one group's points fit maxPoints
	per := max(maxPoints/c.steps, 1)
	for i0 := 0; i0 < b; i0 += per {
		i1 := min(i0+per, b)
		np := (i1 - i0) * c.steps
		pts, g := make([]float32, np*n), make([]float32, np*n)
		owner := make([]int, np)
		for i := i0; i < i1; i++ {
			x := req.X[i*n : (i+1)*n]
			for k, a := range alphas {
				j := (i-i0)*c.steps + k
				owner[j] = i
				p := pts[j*n : (j+1)*n]
				for t, v := range x {
					p[t] = base + float32(a)*(v-base)
				}
			}
		}
		if err := gradAt(ctx, m, g, pts, req.Targets, owner); err != nil {
			return nil, err
		}
		for i := i0; i < i1; i++ {
			mp, x := flat[i*n:(i+1)*n], req.X[i*n:(i+1)*n]
			for k, wk := range weights {
				gk := g[((i-i0)*c.steps+k)*n : ((i-i0)*c.steps+k+1)*n]
				for t, v := range gk {
					mp[t] += wk * float64(v)
				}
			}
			for t, v := range x {
				mp[t] *= float64(v) - c.baseline
			}
		}
	}
	return out, nil
}
