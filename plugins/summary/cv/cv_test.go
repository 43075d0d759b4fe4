package cv

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-13*math.Max(1, math.Abs(b)) }

// TestCVTwoDraws checks the closed form for S = 2 draws a, b:
// s = |a-b|/sqrt(2), mean = (a+b)/2.
func TestCVTwoDraws(t *testing.T) {
	a := []float64{1, -3, 0, 2.5, 0, -1e-3}
	b := []float64{3, -1, 0, 2.5, 4, 1e-3}
	for _, kappa := range []float64{1e-8, 0.25, 3} {
		res, err := New().Summarise(context.Background(), [][][]float64{{a, b}}, sdk.Config{"kappa": kappa})
		if err != nil {
			t.Fatal(err)
		}
		for n := range a {
			want := math.Abs(a[n]-b[n]) / math.Sqrt2 / (math.Abs((a[n]+b[n])/2) + kappa)
			if got := res[0].Map[n]; !near(got, want) {
				t.Errorf("kappa %v coordinate %d: %v, want %v", kappa, n, got, want)
			}
		}
	}
	// The default kappa is 1e-8: one coordinate with mean 0 shows it.
	res, err := New().Summarise(context.Background(), [][][]float64{{{-1}, {1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt2 / DefaultKappa; !near(res[0].Map[0], want) || DefaultKappa != 1e-8 {
		t.Errorf("default kappa: %v, want %v", res[0].Map[0], want)
	}
}

func TestCheck(t *testing.T) {
	s := New()
	for _, ok := range []sdk.Config{nil, {"kappa": 1e-300}, {"kappa": int64(2)}} {
		if err := s.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"alpha": 0.5}, `unknown key "alpha"`},
		{sdk.Config{"kappa": 0.0}, `key "kappa": 0 is out of range (accepted: kappa > 0)`},
		{sdk.Config{"kappa": -1.0}, `key "kappa": -1 is out of range`},
		{sdk.Config{"kappa": math.Inf(1)}, `key "kappa"`},
		{sdk.Config{"kappa": true}, `key "kappa"`},
	} {
		err := s.Check(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ID+": ") {
			t.Errorf("Check(%v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
		if _, err := s.Summarise(context.Background(), [][][]float64{{{1}, {2}}}, c.cfg); err == nil {
			t.Errorf("Summarise accepted %v", c.cfg)
		}
	}
	if _, err := s.Summarise(context.Background(), [][][]float64{{{1, 2}}}, nil); err == nil {
		t.Error("one draw accepted")
	}
	if i := s.Info(); i.ID != ID || i.Output != sdk.OutputMap || i.MinDraws != 2 {
		t.Errorf("Info %+v", i)
	}
}
