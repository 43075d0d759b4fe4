package golden

import (
	"math"
	"testing"
)

// RowsClose fails t unless got has want's rows and lengths and every
// value of row i is within tol x max_j |want[i][j]| of want[i][j] (the
// tolerance the golden READMEs give for maps, relative to each map's
// largest value). It reports the worst value of each row that fails; a
// NaN is a failure.
func RowsClose[T float32 | float64](t testing.TB, what string, got [][]float64, want [][]T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: row %d has %d values, want %d", what, i, len(got[i]), len(want[i]))
		}
		top := 0.0
		for _, v := range want[i] {
			top = max(top, math.Abs(float64(v)))
		}
		worst, at := 0.0, -1
		for j, v := range want[i] {
			d := math.Abs(got[i][j] - float64(v))
			if !(d <= worst) {
				worst, at = d, j
				if math.IsNaN(d) {
					break
				}
			}
		}
		if at >= 0 && !(worst <= tol*top) {
			t.Errorf("%s: row %d value %d: %.9g, want %.9g (|diff| %.3g > %g x max |want| %.3g)", what, i, at, got[i][at], float64(want[i][at]), worst, tol, top)
		}
	}
}
