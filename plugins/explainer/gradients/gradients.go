package gradients

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

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
// (point j belongs to input owner[j]), in calls of at most maxPoints on
// up to GOMAXPROCS goroutines (a Model is safe for concurrent use; each
// point's gradient is its own, so the bytes do not depend on the calls).
func gradAt(ctx context.Context, m nn.Model, g, pts []float32, targets []int, owner []int) error {
	n := m.InputLen()
	tg := make([]int, len(owner))
	for j, i := range owner {
		tg[j] = targets[i]
	}
	workers := runtime.GOMAXPROCS(0)
	size := min(maxPoints, max(minPoints, (len(owner)+workers-1)/workers))
	calls := (len(owner) + size - 1) / size
	errs := make([]error, calls)
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for c := range calls {
		j0, j1 := c*size, min((c+1)*size, len(owner))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := m.InputGrad(ctx, g[j0*n:j1*n], nil, pts[j0*n:j1*n], tg[j0:j1]); err != nil {
				errs[c] = fmt.Errorf("input gradients of points %d..%d: %w", j0, j1-1, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// minPoints is the fewest points a call of gradAt carries when it splits
// a batch between goroutines.
const minPoints = 16

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
