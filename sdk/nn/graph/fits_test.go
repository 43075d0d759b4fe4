package graph

import "testing"

// TestSpanFitsBounds: fits accepts an op's window and a composed span at
// exactly the bounds (maxOp, maxSpan) and refuses one more.
func TestSpanFitsBounds(t *testing.T) {
	id := Field{Local: true, Kernel: 1, Stride: 1, Dilation: 1}
	with := func(f func(*Field)) Field {
		g := id
		f(&g)
		return g
	}
	one := Span{Stride: 1}
	for _, c := range []struct {
		what string
		s    Span
		f    Field
		want bool
	}{
		{"identity", one, id, true},
		{"stride at maxOp", one, with(func(f *Field) { f.Stride = maxOp }), true},
		{"stride past maxOp", one, with(func(f *Field) { f.Stride = maxOp + 1 }), false},
		{"padding at maxOp", one, with(func(f *Field) { f.PadLeft = maxOp }), true},
		{"padding past maxOp", one, with(func(f *Field) { f.PadLeft = maxOp + 1 }), false},
		{"kernel at maxOp", one, with(func(f *Field) { f.Kernel = maxOp }), true},
		{"kernel past maxOp", one, with(func(f *Field) { f.Kernel = maxOp + 1 }), false},
		{"dilation at maxOp", one, with(func(f *Field) { f.Dilation = maxOp }), true},
		{"dilation past maxOp", one, with(func(f *Field) { f.Dilation = maxOp + 1 }), false},
		{"kernel x dilation at maxOp", one, with(func(f *Field) { f.Kernel, f.Dilation = 1<<12, 1<<12 }), true},
		{"kernel x dilation past maxOp", one, with(func(f *Field) { f.Kernel, f.Dilation = 1<<12+1, 1<<12 }), false},
		{"composed stride at maxSpan", Span{Stride: 1 << 12}, with(func(f *Field) { f.Stride = 1 << 24 }), true},
		{"composed stride past maxSpan", Span{Stride: 1<<12 + 1}, with(func(f *Field) { f.Stride = 1 << 24 }), false},
		{"start at -maxSpan", Span{Stride: 1, Lo: -maxSpan}, id, true},
		{"start past -maxSpan", Span{Stride: 1, Lo: -maxSpan - 1}, id, false},
		{"end at maxSpan", Span{Stride: 1, Hi: maxSpan}, id, true},
		{"end past maxSpan", Span{Stride: 1, Hi: maxSpan + 1}, id, false},
	} {
		if got := c.s.fits(c.f); got != c.want {
			t.Errorf("%s: fits %v, want %v", c.what, got, c.want)
		}
	}
}
