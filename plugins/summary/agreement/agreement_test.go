package agreement

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

func TestAgreementBoundaries(t *testing.T) {
	// S = 4 draws of 6 coordinates. Above delta = 1 (strictly): coordinate
	// 0 in 4 draws, 1 in 2 (the other two are exactly 1), 2 in 2, 3 in 1,
	// 4 in 0 (all equal to delta), 5 in 3 (one NaN).
	r := [][]float64{
		{2, 1, 5, 0, 1, math.NaN()},
		{3, 1.0000001, 5, 9, 1, 2},
		{4, 1, -5, -9, 1, 2},
		{5, 7, -5, 1, 1, 2},
	}
	for _, c := range []struct {
		eta  float64
		want []bool
	}{
		{0, []bool{true, true, true, true, true, true}},
		{0.25, []bool{true, true, true, true, false, true}},
		{0.26, []bool{true, true, true, false, false, true}},
		{0.5, []bool{true, true, true, false, false, true}}, // exactly half the draws: in
		{0.51, []bool{true, false, false, false, false, true}},
		{0.75, []bool{true, false, false, false, false, true}},
		{0.76, []bool{true, false, false, false, false, false}},
		{1, []bool{true, false, false, false, false, false}},
	} {
		res, err := New().Summarise(context.Background(), [][][]float64{r}, sdk.Config{"eta": c.eta, "delta": 1.0})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res[0].Set, c.want) {
			t.Errorf("eta %v: %v, want %v", c.eta, res[0].Set, c.want)
		}
	}
	// Defaults: delta 0, eta 0.5.
	res, err := New().Summarise(context.Background(), [][][]float64{{{1, 0, -1, 2}, {0, 0, 3, 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, true}; !slices.Equal(res[0].Set, want) {
		t.Errorf("defaults: %v, want %v", res[0].Set, want)
	}
}

// TestAgreementExactEta checks that eta S is exact: with eta = 0.07 and
// S = 100, 7 draws above delta are enough, although 0.07*100 is
// 7.000000000000001 in float64.
func TestAgreementExactEta(t *testing.T) {
	for _, c := range []struct {
		eta   float64
		s, in int
	}{{0.7, 10, 7}, {0.07, 100, 7}, {0.3, 10, 3}, {0.29, 100, 29}} {
		r := make([][]float64, c.s)
		for s := range r {
			r[s] = []float64{-1, -1}
			if s < c.in {
				r[s] = []float64{1, 1}
			}
		}
		r[c.in-1][1] = -1 // coordinate 1 is one draw short
		got := Agreement(make([]bool, 2), r, 0, c.eta)
		if !got[0] || got[1] {
			t.Errorf("eta %v, S %d, %d draws above: %v, want [true false]", c.eta, c.s, c.in, got)
		}
	}
}

func TestCheck(t *testing.T) {
	s := New()
	for _, ok := range []sdk.Config{nil, {"eta": 0.0}, {"eta": 1.0}, {"eta": int64(1), "delta": -3.5}, {"delta": int64(2)}} {
		if err := s.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"alpha": 0.5}, `unknown key "alpha" (accepted: delta, eta)`},
		{sdk.Config{"eta": -0.1}, `key "eta": -0.1 is out of range (accepted: 0 <= eta <= 1)`},
		{sdk.Config{"eta": 1.5}, `key "eta": 1.5 is out of range`},
		{sdk.Config{"eta": math.NaN()}, `key "eta"`},
		{sdk.Config{"delta": math.Inf(-1)}, `key "delta"`},
		{sdk.Config{"delta": "x"}, `key "delta"`},
	} {
		err := s.Check(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ID+": ") {
			t.Errorf("Check(%v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
		if _, err := s.Summarise(context.Background(), [][][]float64{{{1}}}, c.cfg); err == nil {
			t.Errorf("Summarise accepted %v", c.cfg)
		}
	}
	if _, err := s.Summarise(context.Background(), [][][]float64{{{1}}, {}}, nil); err == nil || !strings.Contains(err.Error(), "input 1 has 0 draws") {
		t.Errorf("no draws: %v", err)
	}
	if i := s.Info(); i.ID != ID || i.Output != sdk.OutputSet || i.MinDraws != 1 {
		t.Errorf("Info %+v", i)
	}
}
