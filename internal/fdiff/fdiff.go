// Package fdiff holds the finite differences that tests check gradients
// against.
package fdiff

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
