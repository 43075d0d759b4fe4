package metric

import (
	"context"

	"github.com/uaxai/uaxai/sdk/nn"
)

// The perturbation metrics' copies of a record are chains (nn.Chain):
// copy k is made from copy k-1 by an editor, which changes a few samples,
// so that a network computed in this process recomputes only what the
// change reaches (graph.Net.ChainOutputs) and any other model runs a
// forward pass a copy. An editor writes the same values either way.

// editor makes one record's chain of copies.
type editor interface {
	// steps is the number of copies.
	steps() int
	// edit makes copy k from copy k-1 (from the chain's start when k =
	// 0) in cur, and returns the range [lo, hi) of time steps changed.
	edit(k int, cur []float32) (lo, hi int)
}

// restarter is an editor whose copies k, where restart(k), are made
// from the record itself rather than from copy k-1 (nn.Chain.Restart):
// every editor of a call must restart at the same copies.
type restarter interface {
	restart(k int) bool
}

// chainOutputs returns out[i*S+k] = the output (p_y, or the logit f_y
// when softmax is false) of copy k of record i's chain, y = targets[i],
// which starts at record i of starts and has the S copies of eds[i]
// (every editor's steps() the same, and its restarts).
func (k keys) chainOutputs(ctx context.Context, in *Input, starts []float32, eds []editor) ([]float64, error) {
	S := 0
	if len(eds) > 0 {
		S = eds[0].steps()
	}
	for _, e := range eds {
		if e.steps() != S {
			panic("metric: chains of different lengths")
		}
	}
	out32 := make([]float32, len(eds)*S)
	req := nn.Chain{X: starts, Classes: in.Targets, Steps: S, Logits: !k.softmax, Workers: in.Workers,
		Edit: func(b, k int, cur []float32) (int, int) { return eds[b].edit(k, cur) }}
	if len(eds) > 0 {
		if r, ok := eds[0].(restarter); ok {
			req.Restart = r.restart
		}
	}
	if err := nn.Chained(ctx, in.Model, req, out32); err != nil {
		return nil, err
	}
	out := make([]float64, len(out32))
	for j, v := range out32 {
		out[j] = float64(v)
	}
	return out, nil
}

// span widens [lo, hi) to hold time step t.
func span(lo, hi, t int) (int, int) { return min(lo, t), max(hi, t+1) }

// regionEditor removes whole regions: copy 0 is the start itself, copy k
// has regions order[0..k-1] (all channels of the steps [patch*j,
// patch*(j+1)) of region j) set to base.
type regionEditor struct {
	base        []float32
	order       []int
	C, T, patch int
}

func (e *regionEditor) steps() int { return 1 + len(e.order) }

func (e *regionEditor) edit(k int, cur []float32) (int, int) {
	if k == 0 {
		return 0, 0
	}
	j := e.order[k-1]
	lo, hi := j*e.patch, min((j+1)*e.patch, e.T)
	for c := range e.C {
		copy(cur[c*e.T+lo:c*e.T+hi], e.base[c*e.T+lo:c*e.T+hi])
	}
	return lo, hi
}

// flipEditor flips samples in groups: copy k (k = 0..len(order)/step-1)
// has the samples order[:(k+1)*step] set to base.
type flipEditor struct {
	base    []float32
	order   []int
	step, T int
}

func (e *flipEditor) steps() int { return len(e.order) / e.step }

func (e *flipEditor) edit(k int, cur []float32) (int, int) {
	lo, hi := e.T, 0
	for _, j := range e.order[k*e.step : (k+1)*e.step] {
		cur[j] = e.base[j]
		lo, hi = span(lo, hi, j%e.T)
	}
	return lo, hi
}

// setEditor changes one set at a time: copy 0 is x, copy 1+r is x with
// the samples sets[r*size:(r+1)*size] set to base, or, with vals, x with
// group g = r/samples of sets set to vals[r] (samples copies a group).
// The first copy of each group g >= 1 restarts from x (restarter), so
// that no copy is charged for undoing the last group: a model that keeps
// the chain's start copies it back.
type setEditor struct {
	base, vals    []float32
	sets          []int
	size, samples int
	T             int
}

// per is the copies a group.
func (e *setEditor) per() int { return max(e.samples, 1) }

func (e *setEditor) steps() int { return 1 + len(e.sets)/e.size*e.per() }

func (e *setEditor) restart(k int) bool { return k > 1 && (k-1)%e.per() == 0 }

func (e *setEditor) edit(k int, cur []float32) (int, int) {
	lo, hi := e.T, 0
	if k == 0 {
		return lo, hi
	}
	r := k - 1
	g := r / e.per()
	for _, j := range e.sets[g*e.size : (g+1)*e.size] {
		if e.vals != nil {
			cur[j] = e.vals[r]
		} else {
			cur[j] = e.base[j]
		}
		lo, hi = span(lo, hi, j%e.T)
	}
	return lo, hi
}
