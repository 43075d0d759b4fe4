package gradients

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Version is the plugins' version.
const Version = "1.0.0"

// MaxSteps bounds n_steps, nt_samples and n_samples.
const MaxSteps = 10000

// maxPoints is the most points (inputs) one InputGrad call carries.
const maxPoints = 256

// gradAt writes into g the gradient of p_target[i] at each point of pts
// (point j belongs to input owner[j]), in calls of at most maxPoints.
func gradAt(ctx context.Context, m nn.Model, g, pts []float32, targets []int, owner []int) error {
	n := m.InputLen()
	tg := make([]int, 0, maxPoints)
	for j0 := 0; j0 < len(owner); j0 += maxPoints {
		j1 := min(j0+maxPoints, len(owner))
		tg = tg[:0]
		for _, i := range owner[j0:j1] {
			tg = append(tg, targets[i])
		}
		if err := m.InputGrad(ctx, g[j0*n:j1*n], nil, pts[j0*n:j1*n], tg); err != nil {
			return fmt.Errorf("input gradients: %w", err)
		}
	}
	return nil
}

// check checks a request's shape against the model.
func check(m nn.Model, req sdk.ExplainRequest) (n, b int, err error) {
	n, b = m.InputLen(), len(req.Targets)
	if len(req.X) != b*n {
		return 0, 0, fmt.Errorf("x has %d values for %d inputs of %d", len(req.X), b, n)
	}
	return n, b, nil
}

// maps cuts b maps of n values from one flat slice.
func maps(b, n int) ([][]float64, []float64) {
	flat := make([]float64, b*n)
	out := make([][]float64, b)
	for i := range out {
		out[i] = flat[i*n : (i+1)*n : (i+1)*n]
	}
	return out, flat
}
