package nn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// logitModel hides a GraphModel's Chainer (and every other optional
// method but Logits): Chained then runs a forward pass a copy.
type logitModel struct{ m *GraphModel }

func (l logitModel) Arch() Arch                                        { return l.m.Arch() }
func (l logitModel) InputLen() int                                     { return l.m.InputLen() }
func (l logitModel) Classes() int                                      { return l.m.Classes() }
func (l logitModel) Probs(ctx context.Context, dst, x []float32) error { return l.m.Probs(ctx, dst, x) }
func (l logitModel) Logits(ctx context.Context, dst, x []float32) error {
	return l.m.Logits(ctx, dst, x)
}
func (l logitModel) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	return l.m.InputGrad(ctx, dst, probs, x, target)
}
func (l logitModel) LayerShape(ctx context.Context, layer string) (Shape, error) {
	return l.m.LayerShape(ctx, layer)
}
func (l logitModel) LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error {
	return l.m.LayerGrad(ctx, act, grad, x, target, layer)
}

// runEdit sets, at copy k of chain b, a run of 3 samples of every
// channel from (b*7 + k*5) mod (T-3) to -b-k.
func runEdit(C, T int) func(b, k int, cur []float32) (int, int) {
	return func(b, k int, cur []float32) (int, int) {
		lo := (b*7 + k*5) % (T - 3)
		for c := range C {
			for t := lo; t < lo+3; t++ {
				cur[c*T+t] = float32(-b - k)
			}
		}
		return lo, lo + 3
	}
}

// TestChainedMatchesForwardPasses: the graph's chains equal a forward
// pass a copy (a model without the Chainer path) up to float32 rounding,
// for probabilities and logits, with and without restarts, over more
// chains than a block; and give the same bytes on 1 and 3 workers.
func TestChainedMatchesForwardPasses(t *testing.T) {
	ctx := context.Background()
	for _, m := range graphModels(t) {
		C, T := inputChannels(m)
		B, S := ChainBlock+5, 6
		rng := rand.New(rand.NewPCG(1, 2))
		req := Chain{X: make([]float32, B*m.InputLen()), Classes: make([]int, B), Steps: S, Edit: runEdit(C, T)}
		for i := range req.X {
			req.X[i] = float32(rng.NormFloat64())
		}
		for b := range req.Classes {
			req.Classes[b] = rng.IntN(m.Classes())
		}
		for _, c := range []struct{ logits, restart bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			logits := c.logits
			req.Logits, req.Restart = logits, nil
			if c.restart { // copies 2 and 4 start again from the input
				req.Restart = func(k int) bool { return k%2 == 0 }
			}
			got, want := make([]float32, B*S), make([]float32, B*S)
			if err := Chained(ctx, m, req, got); err != nil {
				t.Fatal(err)
			}
			if err := Chained(ctx, logitModel{m}, req, want); err != nil {
				t.Fatal(err)
			}
			var d, top float64
			for j := range want {
				d, top = max(d, math.Abs(float64(got[j]-want[j]))), max(top, math.Abs(float64(want[j])))
			}
			if d > 3e-6*top {
				t.Errorf("%s logits %v restart %v: chains differ from forward passes by %.3g of the largest value", m.spec.Name, logits, c.restart, d/top)
			}
			req.Workers = 3
			again := make([]float32, B*S)
			if err := Chained(ctx, m, req, again); err != nil {
				t.Fatal(err)
			}
			req.Workers = 0
			if !slices.Equal(again, got) {
				t.Errorf("%s logits %v: 3 workers gave other bytes than 1", m.spec.Name, logits)
			}
		}
	}
}

// TestChainedErrors: a request that does not fit the model is an error
// that says what was wanted; a cancelled context stops the chains.
func TestChainedErrors(t *testing.T) {
	m := graphModels(t)[0]
	n := m.InputLen()
	C, T := inputChannels(m)
	ok := Chain{X: make([]float32, 2*n), Classes: []int{0, 1}, Steps: 2, Edit: runEdit(C, T)}
	bad := func(f func(r *Chain)) Chain {
		r := ok
		f(&r)
		return r
	}
	cases := []struct {
		req  Chain
		dst  int
		want string
	}{
		{bad(func(r *Chain) { r.Edit = nil }), 4, "no Edit"},
		{bad(func(r *Chain) { r.Steps = -1 }), 4, "-1 steps"},
		{bad(func(r *Chain) { r.X = r.X[:n] }), 4, "want 2 inputs"},
		{ok, 3, "want 4 (2 chains of 2 steps)"},
		{bad(func(r *Chain) { r.Classes = []int{0, m.Classes()} }), 4, "chain 1: class"},
	}
	for _, c := range cases {
		err := Chained(context.Background(), m, c.req, make([]float32, c.dst))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v; want one saying %q", err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Chained(ctx, m, ok, make([]float32, 4)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v; want context.Canceled", err)
	}
}
