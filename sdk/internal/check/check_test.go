package check

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestFinite(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want bool
	}{
		{0, true}, {-1e308, true}, {math.MaxFloat64, true}, {math.SmallestNonzeroFloat64, true},
		{math.NaN(), false}, {math.Inf(1), false}, {math.Inf(-1), false},
	} {
		if got := Finite(c.v); got != c.want {
			t.Errorf("Finite(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestRecovered(t *testing.T) {
	err := Recovered("explainer.x", "Explain", "index out of range")
	for _, want := range []string{"explainer.x: Explain: panic: index out of range", "check_test.go"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q (the ID, method, value and the stack)", err, want)
		}
	}
}

// wantErr checks err against want: nil if want is "", else an error
// holding want.
func wantErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want no error", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: %v, want an error holding %q", name, err, want)
	}
}

func TestBatch(t *testing.T) {
	x := func(n int) []float32 { return make([]float32, n) }
	for _, c := range []struct {
		name              string
		inputLen, classes int
		x                 []float32
		targets           []int
		seeds             []uint64
		stochastic        bool
		want              string
	}{
		{"ok", 4, 3, x(8), []int{0, 2}, nil, false, ""},
		{"ok with seeds", 4, 3, x(8), []int{0, 2}, []uint64{1, 2}, true, ""},
		{"deterministic with seeds", 4, 3, x(8), []int{0, 2}, []uint64{1, 2}, false, ""},
		{"one input", 1, 1, x(1), []int{0}, nil, false, ""},
		{"zero input length", 0, 3, x(0), []int{0}, nil, false, "model input length 0"},
		{"negative input length", -1, 3, x(0), []int{0}, nil, false, "model input length -1"},
		{"no targets", 4, 3, x(0), nil, nil, false, "empty batch (no targets)"},
		{"x too short", 4, 3, x(7), []int{0, 2}, nil, false, "x has 7 values, want 8 (2 targets x input length 4)"},
		{"x too long", 4, 3, x(9), []int{0, 2}, nil, false, "x has 9 values, want 8"},
		{"target = classes", 4, 3, x(8), []int{0, 3}, nil, false, "input 1: target class 3 out of range 0..2"},
		{"negative target", 4, 3, x(8), []int{-1, 0}, nil, false, "input 0: target class -1 out of range 0..2"},
		{"last class", 4, 3, x(8), []int{2, 2}, nil, false, ""},
		{"stochastic without seeds", 4, 3, x(8), []int{0, 2}, nil, true, "a stochastic explainer needs one seed per input: 0 seeds for 2 inputs"},
		{"stochastic, one seed short", 4, 3, x(8), []int{0, 2}, []uint64{1}, true, "1 seeds for 2 inputs"},
		{"deterministic, seeds of the wrong count", 4, 3, x(8), []int{0, 2}, []uint64{1, 2, 3}, false, "3 seeds for 2 inputs (want one per input, or none)"},
	} {
		wantErr(t, c.name, Batch(c.inputLen, c.classes, c.x, c.targets, c.seeds, c.stochastic), c.want)
	}
}

func TestDraws(t *testing.T) {
	d := func(s, n int) [][]float64 {
		out := make([][]float64, s)
		for i := range out {
			out[i] = make([]float64, n)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		draws    [][][]float64
		minDraws int
		want     string
	}{
		{"ok", [][][]float64{d(2, 3), d(3, 1)}, 2, ""},
		{"exactly min draws", [][][]float64{d(2, 3)}, 2, ""},
		{"min 0 still needs one draw", [][][]float64{d(0, 3)}, 0, "input 0 has no draws"},
		{"empty batch", nil, 1, "empty batch (no inputs)"},
		{"too few draws", [][][]float64{d(3, 3), d(1, 3)}, 2, "input 1 has 1 draws; the summary needs at least 2"},
		{"empty draw", [][][]float64{d(2, 0)}, 1, "input 0: draw 0 is empty"},
		{"ragged", [][][]float64{{{1, 2}, {3}}}, 1, "input 0: draw 1 has 1 values, draw 0 has 2 (want S x N)"},
		{"ragged longer", [][][]float64{{{1, 2}, {3, 4, 5}}}, 1, "draw 1 has 3 values"},
	} {
		wantErr(t, c.name, Draws(c.draws, c.minDraws), c.want)
	}
}

func TestDataset(t *testing.T) {
	for _, c := range []struct {
		name string
		x    []float32
		y    []int
		n, l int
		want string
	}{
		{"ok", make([]float32, 6), []int{0, 1, 2}, 3, 2, ""},
		{"no labels", make([]float32, 6), nil, 3, 2, ""},
		{"empty", nil, nil, 0, 0, ""},
		{"short x", make([]float32, 5), nil, 3, 2, "training set: 5 values for 3 rows of 2"},
		{"negative rows", nil, nil, -1, 0, "-1 rows"},
		{"negative length", nil, nil, 0, -1, "rows of -1"},
		{"labels short", make([]float32, 6), []int{0, 1}, 3, 2, "training set: 2 labels for 3 rows"},
		{"labels long", make([]float32, 6), []int{0, 1, 2, 3}, 3, 2, "4 labels for 3 rows"},
	} {
		wantErr(t, c.name, Dataset("training", c.x, c.y, c.n, c.l), c.want)
	}
	if err := Dataset("validation", nil, nil, 1, 1); err == nil || !strings.Contains(err.Error(), "validation set") {
		t.Errorf("the error names the set: %v", err)
	}
	if errors.Unwrap(Dataset("x", nil, nil, 1, 1)) != nil {
		t.Errorf("a shape error wraps nothing")
	}
}
