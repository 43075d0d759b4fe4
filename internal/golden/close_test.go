package golden

import (
	"math"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what fails.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, f) }
func (r *recorder) Fatalf(f string, a ...any) { r.errs = append(r.errs, f); r.fatal = true; panic(r) }

// run calls RowsClose as a test would, a Fatalf ending it.
func (r *recorder) run(got [][]float64, want [][]float64, tol float64) {
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
	}()
	RowsClose(r, "x", got, want, tol)
}

// TestRowsClose: a value off by more than tol of its row's largest |want|
// fails, by less passes; a NaN fails; the tolerance is per row.
func TestRowsClose(t *testing.T) {
	want := [][]float64{{1, -4, 2}, {0.01, 0.02, 0}}
	for _, c := range []struct {
		got  [][]float64
		fail bool
	}{
		{[][]float64{{1, -4, 2}, {0.01, 0.02, 0}}, false},
		{[][]float64{{1 + 3.9e-4, -4, 2}, {0.01, 0.02, 1.9e-6}}, false}, // 1e-4 of 4, of 0.02
		{[][]float64{{1 + 4.1e-4, -4, 2}, {0.01, 0.02, 0}}, true},
		{[][]float64{{1, -4, 2}, {0.01, 0.02, 2.1e-6}}, true}, // row 1's scale is 0.02, not 4
		{[][]float64{{1, math.NaN(), 2}, {0.01, 0.02, 0}}, true},
		{[][]float64{{1, -4, 2}}, true},
		{[][]float64{{1, -4}, {0.01, 0.02, 0}}, true},
	} {
		r := &recorder{TB: t}
		r.run(c.got, want, 1e-4)
		if failed := len(r.errs) > 0; failed != c.fail {
			t.Errorf("got %v: failed %v (%s), want %v", c.got, failed, strings.Join(r.errs, "; "), c.fail)
		}
	}
	r := &recorder{TB: t}
	RowsClose(r, "f32", [][]float64{{1.5}}, [][]float32{{1.5}}, 1e-6)
	if len(r.errs) > 0 {
		t.Errorf("float32 rows: %v", r.errs)
	}
}
