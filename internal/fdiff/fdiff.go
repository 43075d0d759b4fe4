// Package fdiff holds the finite differences that tests check gradients
// against.
package fdiff

import "math"

// Richardson is the Richardson-extrapolated central difference of f at
// the float32 value *v,
//
//	(4 D(h/2) - D(h)) / 3,  D(h) = (f(v+h) - f(v-h)) / (2h),
//
// with an error of O(h^4); the step is the float32 distance actually
// taken, and *v is restored.
func Richardson(v *float32, f func() float64, h float32) float64 {
	old := *v
	d := func(h float32) float64 {
		*v = old + h
		a := f()
		*v = old - h
		b := f()
		*v = old
		return (a - b) / float64((old+h)-(old-h))
	}
	return (4*d(h/2) - d(h)) / 3
}

// Diff is a gradient against finite differences (Compare).
type Diff struct {
	// Want are the differences (0 where skipped), Top the largest |Want|.
	Want []float64
	Top  float64
	// Worst is the largest |got - Want| over the values not skipped, At
	// its index.
	Worst float64
	At    int
}

// Compare takes the Richardson difference of f (step h) at each value of
// vals not skipped (skip nil: none) and compares got, the gradient of f
// with respect to vals, with them.
func Compare(got, vals []float32, f func() float64, h float32, skip func(int) bool) Diff {
	d := Diff{Want: make([]float64, len(got))}
	for j := range got {
		if skip != nil && skip(j) {
			continue
		}
		d.Want[j] = Richardson(&vals[j], f, h)
		d.Top = max(d.Top, math.Abs(d.Want[j]))
	}
	for j := range got {
		if skip != nil && skip(j) {
			continue
		}
		if e := math.Abs(float64(got[j]) - d.Want[j]); e > d.Worst {
			d.Worst, d.At = e, j
		}
	}
	return d
}
