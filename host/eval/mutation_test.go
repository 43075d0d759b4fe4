package eval

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// These tests close gaps that mutation testing (scripts/mutation) found:
// the closed ends of the documented ranges of Aggregate, and the
// correction term of MeanSD's two-pass formula.

// TestAggregateRangeEnds: a scored record's RMA and IoU are in the closed
// interval [0, 1], and its split in [0, nsplits). The ends themselves are
// valid (RMA = 0: no mass in the mask; IoU = 1: perfect localisation) and
// enter the means; the nearest float64 outside is an error.
func TestAggregateRangeEnds(t *testing.T) {
	scores := []Score{
		{Split: 0, Class: 1, RMA: 0, IoU: 1, OK: true},
		{Split: 0, Class: 1, RMA: 1, IoU: 0, OK: true},
		{Split: 1, Class: 1, RMA: 1, IoU: 1, OK: true},
		{Split: 1, Class: 1, RMA: 0, IoU: 0, OK: true},
	}
	a, err := Aggregate(scores, []int{1}, nil, 2)
	if err != nil {
		t.Fatalf("records at the ends of [0, 1]: %v", err)
	}
	c, _ := a.Class(1)
	for s, cell := range c.Splits {
		if cell.Counts.Scored != 2 || cell.RMA != 0.5 || cell.IoU != 0.5 {
			t.Errorf("split %d: cell %+v, want 2 scored with means 0.5, 0.5", s, cell)
		}
	}

	above, below := math.Nextafter(1, 2), math.Nextafter(0, -1)
	for _, c := range []struct {
		name string
		s    Score
		want string
	}{
		{"RMA above 1", Score{Class: 1, RMA: above, IoU: 0.5, OK: true}, "RMA"},
		{"RMA below 0", Score{Class: 1, RMA: below, IoU: 0.5, OK: true}, "RMA"},
		{"IoU above 1", Score{Class: 1, RMA: 0.5, IoU: above, OK: true}, "IoU"},
		{"IoU below 0", Score{Class: 1, RMA: 0.5, IoU: below, OK: true}, "IoU"},
		{"split = nsplits", Score{Split: 2, Class: 1, RMA: 0.5, IoU: 0.5, OK: true}, "split 2 out of [0, 2)"},
		{"split = nsplits, not scored", Score{Split: 2, Class: 1, Why: EmptyMask}, "split 2 out of [0, 2)"},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v, want an error", c.name, r)
				}
			}()
			_, err = Aggregate([]Score{scores[0], c.s}, []int{1}, nil, 2)
		}()
		if err == nil {
			t.Errorf("%s: no error", c.name)
		} else if !strings.Contains(err.Error(), "record 1") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to name record 1 and %q", c.name, err, c.want)
		}
	}
}

// exactSD is the sample standard deviation of xs computed in exact
// rational arithmetic (the float64 inputs are exact rationals), rounded
// to float64 only at the end: an independent reference for MeanSD.
func exactSD(xs []float64) float64 {
	n := int64(len(xs))
	sum := new(big.Rat)
	for _, x := range xs {
		sum.Add(sum, new(big.Rat).SetFloat64(x))
	}
	mean := new(big.Rat).Quo(sum, big.NewRat(n, 1))
	ss := new(big.Rat)
	for _, x := range xs {
		d := new(big.Rat).Sub(new(big.Rat).SetFloat64(x), mean)
		ss.Add(ss, d.Mul(d, d))
	}
	v, _ := ss.Quo(ss, big.NewRat(n-1, 1)).Float64()
	return math.Sqrt(v)
}

// TestMeanSDIllConditioned: values a few ulps apart on a large offset,
// where the mean cannot be represented exactly. The first pass leaves a
// rounding error delta in the mean, and sum (x - mean)^2 overestimates the
// spread by n*delta^2, which here is of the order of the variance itself;
// the two-pass correction (ss - comp^2/n, comp = sum (x - mean)) removes
// it. MeanSD must agree with the exact sample SD to 1e-12.
func TestMeanSDIllConditioned(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 400 {
		off := []float64{1, 1.5e6, -3.25e8, 0.75}[trial%4]
		ulp := math.Nextafter(math.Abs(off), math.Inf(1)) - math.Abs(off)
		n := 2 + rng.IntN(30)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = off + float64(rng.IntN(9))*ulp
		}
		_, sd := MeanSD(xs)
		want := exactSD(xs)
		if math.Abs(sd-want) > 1e-12*want || (want == 0) != (sd == 0) {
			t.Fatalf("trial %d: MeanSD(%v) sd = %v, exact %v (relative error %.3g)", trial, xs, sd, want, (sd-want)/want)
		}
	}
}
