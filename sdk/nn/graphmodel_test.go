package nn

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestGraphModelChunksAreTheBatch: a GraphModel's batch of 2 chunks and 5
// inputs more gives, call by call (Probs, PlainProbs, InputGrad with and
// without probabilities, LayerGrad), the bits of the inputs computed one
// at a time: the chunks depend on the batch only, each input's values are
// its own.
func TestGraphModelChunksAreTheBatch(t *testing.T) {
	ctx := context.Background()
	m := graphModels(t)[0]
	n, k, B := m.InputLen(), m.Classes(), 2*graphBatch+5
	x := make([]float32, B*n)
	for i := range x {
		x[i] = float32(math.Sin(0.37 * float64(i)))
	}
	target := make([]int, B)
	for b := range target {
		target[b] = b % k
	}
	const layer = "down"
	sh, err := m.LayerShape(ctx, layer)
	if err != nil {
		t.Fatal(err)
	}
	sz := sh.Size()
	probs, plain := make([]float32, B*k), make([]float32, B*k)
	grad, gprobs, grad2 := make([]float32, B*n), make([]float32, B*k), make([]float32, B*n)
	act, lg := make([]float32, B*sz), make([]float32, B*sz)
	for _, err := range []error{
		m.Probs(ctx, probs, x), m.PlainProbs(ctx, plain, x),
		m.InputGrad(ctx, grad, gprobs, x, target), m.InputGrad(ctx, grad2, nil, x, target),
		m.LayerGrad(ctx, act, lg, x, target, layer),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	p1, q1, g1, gp1 := make([]float32, k), make([]float32, k), make([]float32, n), make([]float32, k)
	a1, l1 := make([]float32, sz), make([]float32, sz)
	for b := range B {
		xb, tb := x[b*n:(b+1)*n], target[b:b+1]
		for _, err := range []error{
			m.Probs(ctx, p1, xb), m.PlainProbs(ctx, q1, xb), m.InputGrad(ctx, g1, gp1, xb, tb),
			m.LayerGrad(ctx, a1, l1, xb, tb, layer),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			what       string
			batch, one []float32
		}{
			{"Probs", probs[b*k : (b+1)*k], p1}, {"PlainProbs", plain[b*k : (b+1)*k], q1},
			{"InputGrad", grad[b*n : (b+1)*n], g1}, {"InputGrad without probabilities", grad2[b*n : (b+1)*n], g1},
			{"InputGrad's probabilities", gprobs[b*k : (b+1)*k], gp1},
			{"LayerGrad act", act[b*sz : (b+1)*sz], a1}, {"LayerGrad grad", lg[b*sz : (b+1)*sz], l1},
		} {
			if !slices.Equal(c.batch, c.one) {
				t.Fatalf("input %d of %d: %s of the batch differs from the input's alone", b, B, c.what)
			}
		}
	}
}

// TestGraphModelRejects: buffers and targets that do not fit the batch
// are errors that say what is wanted, never a panic, for every call.
func TestGraphModelRejects(t *testing.T) {
	ctx := context.Background()
	m := graphModels(t)[0]
	n, k := m.InputLen(), m.Classes()
	x := make([]float32, 3*n)
	sh, err := m.LayerShape(ctx, "down")
	if err != nil {
		t.Fatal(err)
	}
	sz := 3 * sh.Size()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"Probs, short dst", m.Probs(ctx, make([]float32, 3*k-1), x), "values for the answers of 3 inputs; want 9"},
		{"PlainProbs, long dst", m.PlainProbs(ctx, make([]float32, 3*k+1), x), "values for the answers of 3 inputs; want 9"},
		{"Probs, part of an input", m.Probs(ctx, make([]float32, 3*k), x[:n+1]), "is not whole inputs of 192"},
		{"InputGrad, short dst", m.InputGrad(ctx, make([]float32, 3*n-1), nil, x, []int{0, 1, 2}), "values for the answers of 3 inputs; want 576"},
		{"InputGrad, targets", m.InputGrad(ctx, make([]float32, 3*n), nil, x, []int{0, 1}), "2 targets and 0 probabilities for 3 inputs"},
		{"InputGrad, probs", m.InputGrad(ctx, make([]float32, 3*n), make([]float32, 2), x, []int{0, 1, 2}), "3 targets and 2 probabilities for 3 inputs"},
		{"InputGrad, a target out of range", m.InputGrad(ctx, make([]float32, 3*n), nil, x, []int{0, 3, 1}), "target class 3"},
		{"LayerGrad, short act", m.LayerGrad(ctx, make([]float32, sz-1), make([]float32, sz), x, []int{0, 1, 2}, "down"), "want act and grad of"},
		{"LayerGrad, targets", m.LayerGrad(ctx, make([]float32, sz), make([]float32, sz), x, []int{0}, "down"), "and 3 targets, got"},
		{"LayerGrad, part of an input", m.LayerGrad(ctx, make([]float32, sz), make([]float32, sz), x[:5], []int{0}, "down"), "is not whole inputs"},
		{"LayerGrad, unknown layer", m.LayerGrad(ctx, make([]float32, sz), make([]float32, sz), x, []int{0, 1, 2}, "nope"), "nope"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.name, c.err, c.want)
		}
	}
}
