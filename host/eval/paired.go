package eval

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a mean with a two-sided confidence interval.
type Interval struct {
	Mean   float64 `json:"mean"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Level  float64 `json:"level"` // e.g. 0.95
	N      int     `json:"n"`     // pairs
	Stderr float64 `json:"stderr"`
}

// PairedT is the paired difference of a and b (a_i - b_i, the same split
// i under two methods, as the paper's disc-7 IoU gain of the ensemble
// over the deterministic network) with its Student t interval at level:
//
//	d_i = a_i - b_i,  mean = (1/n) sum_i d_i,  se = sd(d) / sqrt(n)
//	[mean - t_{(1+level)/2, n-1} se,  mean + t_{(1+level)/2, n-1} se]
//
// sd as MeanSD. It needs n >= 2 pairs of finite values and 0 < level < 1.
func PairedT(a, b []float64, level float64) (Interval, error) {
	if len(a) != len(b) {
		return Interval{}, fmt.Errorf("paired t: %d values against %d (want one pair a split)", len(a), len(b))
	}
	if len(a) < 2 {
		return Interval{}, fmt.Errorf("paired t: %d pair(s), want at least 2", len(a))
	}
	if !(level > 0 && level < 1) {
		return Interval{}, fmt.Errorf("paired t: level %v, want 0 < level < 1", level)
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
		if math.IsNaN(d[i]) || math.IsInf(d[i], 0) {
			return Interval{}, fmt.Errorf("paired t: pair %d is (%v, %v), want finite values", i, a[i], b[i])
		}
	}
	mean, sd := MeanSD(d)
	n := len(d)
	se := sd / math.Sqrt(float64(n))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile((1 + level) / 2)
	return Interval{Mean: mean, Lo: mean - t*se, Hi: mean + t*se, Level: level, N: n, Stderr: se}, nil
}
