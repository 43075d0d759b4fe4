package ops

import (
	"math/rand/v2"
	"testing"
)

// TestNoAllocation: the forward and backward passes allocate nothing.
func TestNoAllocation(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 9))
	const B, T = 2, 31
	c := Conv1D{Cin: 4, Cout: 6, Kernel: 5, Stride: 2, Dilation: 2, Groups: 2, PadLeft: 3, PadRight: 1}
	L, err := c.OutLen(T)
	if err != nil {
		t.Fatal(err)
	}
	x, w, b := randn32(r, B*4*T), randn32(r, c.WeightLen()), randn32(r, 6)
	y, dy := make([]float32, B*6*L), randn32(r, B*6*L)
	dx, dw, db := make([]float32, len(x)), make([]float32, len(w)), make([]float32, 6)
	c1 := Conv1D{Cin: 4, Cout: 4, Kernel: 7, Stride: 1, Dilation: 1, Groups: 1, PadLeft: 3, PadRight: 3}
	w1, y1 := randn32(r, c1.WeightLen()), make([]float32, B*4*T)
	m := MaxPool1D{Kernel: 3, Stride: 2, Pad: 1}
	Lp, _ := m.OutLen(T)
	yp, idx, dyp := make([]float32, B*4*Lp), make([]int32, B*4*Lp), randn32(r, B*4*Lp)
	sm := make([]float32, len(x))
	cat := make([]float32, 2*len(x))
	chans := []int{4, 4}
	xs := [][]float32{x, x}
	dxs := [][]float32{dx, nil}
	for name, f := range map[string]func(){
		"conv":     func() { c.Forward(y, x, w, b, T); c.Backward(dx, dw, db, dy, x, w, T) },
		"conv s1":  func() { c1.Forward(y1, x, w1, nil, T) },
		"maxpool":  func() { m.Forward(yp, idx, x, T); m.Backward(dx, dyp, idx, T) },
		"avgpool":  func() { AvgPool1D(m).Forward(yp, x, T); AvgPool1D(m).Backward(dx, dyp, T) },
		"softmax":  func() { Softmax(sm, x, 4, T); SoftmaxBackward(dx, x, sm, 4, T) },
		"gelu":     func() { GELU(sm, x); GELUBackward(dx, x, x) },
		"concat":   func() { Concat(cat, xs, chans, T); ConcatBackward(dxs, cat, chans, T) },
		"globalmx": func() { GlobalMaxPool(yp[:B*4], idx[:B*4], x, T); GlobalMaxPoolBackward(dx, dyp[:B*4], idx[:B*4], T) },
	} {
		if a := testing.AllocsPerRun(5, f); a != 0 {
			t.Errorf("%s: %g allocations a call", name, a)
		}
	}
}
