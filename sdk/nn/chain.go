package nn

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Chain asks for a model's outputs along chains of perturbed copies, one
// chain per input: copy k of chain b is copy k-1 (the input itself before
// copy 0) changed by Edit(b, k, cur). The explanation metrics' curves are
// such chains (region perturbation and pixel flipping remove one more
// region a copy), and so is any set of copies of one input that each
// differ from it in a few samples (an edit that restores the previous
// copy's samples and changes its own). Chained computes it for any Model.
type Chain struct {
	// X holds the B inputs, B*InputLen() values.
	X []float32
	// Classes is, per input, the class whose output every copy gets.
	Classes []int
	// Steps is the number of copies of every chain.
	Steps int
	// Logits asks for the logit f_y (the softmax's input) instead of the
	// probability p_y; the model must then give logits (Logiter).
	Logits bool
	// Edit changes chain b's current input cur (C x T, channel-major) in
	// place for copy k and returns the half-open range [lo, hi) of time
	// steps it changed in any channel (lo >= hi: none); it must change no
	// value outside the range. It is called for every chain and copy in
	// order of k, for different chains from different goroutines, and
	// may be called again on a chain started afresh (a mean of models
	// runs each chain once a model): it must make the same change each
	// time.
	Edit func(b, k int, cur []float32) (lo, hi int)
	// Restart, if not nil, reports the copies k (k > 0) before which
	// every chain starts again from its input: Edit(b, k, cur) is then
	// given the input itself. Copies that are each one change of the
	// input (faithfulness estimate's groups removed one at a time) need
	// no edit that restores the last change: a model that keeps a
	// chain's start undoes it for the cost of a copy.
	Restart func(k int) bool
	// Workers is the number of goroutines (at most; 0 or 1: one). The
	// outputs do not depend on it.
	Workers int
}

// ChainBlock is the number of chains computed together: the chains are
// cut into blocks of ChainBlock in order, the same blocks for any number
// of workers.
const ChainBlock = graph.ChainBatch

// Chainer is a Model with a path of its own to a Chain's outputs that is
// faster than a forward pass a copy (a receptive-field recomputation). It
// is optional; callers call Chained, never the method.
type Chainer interface {
	// ChainOutputs writes what Chained writes for req, whose fields
	// Chained has checked against the model, and reports true; or
	// reports false, having written nothing, for a request it has no
	// path for (Chained then runs forward passes). The outputs equal
	// forward passes' of the copies up to float32 rounding.
	ChainOutputs(ctx context.Context, req Chain, dst []float32) (bool, error)
}

// Chained writes dst[b*Steps+k] = the output (p_y or f_y, y = Classes[b])
// of copy k of chain b, by the model's own path (Chainer) or by one
// forward pass of every chain's copy k at a time.
func Chained(ctx context.Context, m Model, req Chain, dst []float32) error {
	n := m.InputLen()
	B := len(req.Classes)
	switch {
	case req.Edit == nil:
		return fmt.Errorf("chained copies: no Edit")
	case req.Steps < 0:
		return fmt.Errorf("chained copies: %d steps; want at least 0", req.Steps)
	case len(req.X) != B*n:
		return fmt.Errorf("chained copies: X has %d values for %d classes; want %d inputs of %d", len(req.X), B, B, n)
	case len(dst) != B*req.Steps:
		return fmt.Errorf("chained copies: dst has %d values; want %d (%d chains of %d steps)", len(dst), B*req.Steps, B, req.Steps)
	}
	for b, y := range req.Classes {
		if y < 0 || y >= m.Classes() {
			return fmt.Errorf("chained copies: chain %d: class %d; want 0..%d", b, y, m.Classes()-1)
		}
	}
	if _, ok := m.(Logiter); req.Logits && !ok {
		return fmt.Errorf("chained copies: logits asked of a model (%T) that gives probabilities only", m)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chained copies: %w", err)
	}
	if c, ok := m.(Chainer); ok {
		done, err := c.ChainOutputs(ctx, req, dst)
		if err != nil || done {
			return err
		}
	}
	return chainBlocks(ctx, req, n, dst, func(ctx context.Context, b0, b1 int) error {
		return forwardChain(ctx, m, req, b0, b1, dst)
	})
}

// chainBlocks runs f on the blocks of ChainBlock chains [b0, b1), on up
// to req.Workers goroutines, and returns the first block's error.
func chainBlocks(ctx context.Context, req Chain, n int, dst []float32, f func(ctx context.Context, b0, b1 int) error) error {
	B := len(req.Classes)
	blocks := (B + ChainBlock - 1) / ChainBlock
	errs := make([]error, blocks)
	workers := min(max(req.Workers, 1), blocks)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b0 := i * ChainBlock
				if err := ctx.Err(); err != nil {
					errs[i] = fmt.Errorf("chains %d..%d: %w", b0, min(b0+ChainBlock, B)-1, err)
					continue
				}
				if errs[i] = f(ctx, b0, min(b0+ChainBlock, B)); errs[i] != nil {
					cancel()
				}
			}
		}()
	}
	for i := range blocks {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// forwardChain computes chains b0..b1-1 by a forward pass of their copy k
// for each k.
func forwardChain(ctx context.Context, m Model, req Chain, b0, b1 int, dst []float32) error {
	n, K, B := m.InputLen(), m.Classes(), b1-b0
	cur := append([]float32(nil), req.X[b0*n:b1*n]...)
	out := make([]float32, B*K)
	for k := range req.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if k > 0 && req.Restart != nil && req.Restart(k) {
			copy(cur, req.X[b0*n:b1*n])
		}
		for b := range B {
			req.Edit(b0+b, k, cur[b*n:(b+1)*n])
		}
		var err error
		if req.Logits {
			err = m.(Logiter).Logits(ctx, out, cur)
		} else {
			err = m.Probs(ctx, out, cur)
		}
		if err != nil {
			return fmt.Errorf("chains %d..%d, copy %d: %w", b0, b1-1, k, err)
		}
		for b := range B {
			v := out[b*K+req.Classes[b0+b]]
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("chain %d, copy %d: the model gave %v for class %d; want a finite value", b0+b, k, v, req.Classes[b0+b])
			}
			dst[(b0+b)*req.Steps+k] = v
		}
	}
	return nil
}

// ChainOutputs computes req by graph.Net.ChainOutputs, a block of
// ChainBlock chains a Net: only what an edit reaches is recomputed. (Its
// work is not added to Path, which reports the explainers' copies.)
func (m *GraphModel) ChainOutputs(ctx context.Context, req Chain, dst []float32) (bool, error) {
	err := chainBlocks(ctx, req, m.n, dst, func(ctx context.Context, b0, b1 int) error {
		n := m.get()
		defer m.put(n)
		_, err := n.ChainOutputs(dst[b0*req.Steps:b1*req.Steps], req.X[b0*m.n:b1*m.n], req.Steps, req.Classes[b0:b1], req.Logits,
			func(b, k int, cur []float32) (int, int) { return req.Edit(b0+b, k, cur) }, req.Restart)
		if err != nil {
			return fmt.Errorf("chains %d..%d: %w", b0, b1-1, err)
		}
		return nil
	})
	return true, err
}
