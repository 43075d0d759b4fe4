package quantile

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
)

func TestQuantileGolden(t *testing.T) {
	samples, cols := golden.Quantiles(t)
	r := golden.Transpose(samples)
	levels := 0
	for name, want := range cols {
		p, ok := strings.CutPrefix(name, "os_")
		if !ok {
			continue
		}
		levels++
		alpha, err := strconv.ParseFloat(p, 64)
		if err != nil {
			t.Fatal(err)
		}
		res, err := New().Summarise(context.Background(), [][][]float64{r}, sdk.Config{"alpha": alpha})
		if err != nil {
			t.Fatal(err)
		}
		for n, w := range want {
			if got := res[0].Map[n]; math.Float64bits(got) != math.Float64bits(w) {
				t.Errorf("%s line %d: %v, want %v", name, n+1, got, w)
			}
		}
	}
	if levels != 5 {
		t.Fatalf("quantiles.csv has %d os_ columns, want 5", levels)
	}
}

func TestQuantileEdges(t *testing.T) {
	// S = 4 draws of 3 coordinates; sorted columns: {1,2,3,4}, {-5,-5,0,7}, {NaN,...}.
	r := [][]float64{{3, 0, 1}, {1, -5, math.NaN()}, {4, 7, 2}, {2, -5, 3}}
	for _, c := range []struct {
		alpha float64
		want  []float64
	}{
		{0.01, []float64{1, -5}}, // k = 1: the minimum
		{0.25, []float64{1, -5}}, // k = 1 exactly
		{0.26, []float64{2, -5}}, // k = 2
		{0.5, []float64{2, -5}},  // k = 2
		{0.51, []float64{3, 0}},  // k = 3
		{0.99, []float64{4, 7}},  // k = S: the maximum
	} {
		res, err := New().Summarise(context.Background(), [][][]float64{r}, sdk.Config{"alpha": c.alpha})
		if err != nil {
			t.Fatal(err)
		}
		m := res[0].Map
		if len(m) != 3 || m[0] != c.want[0] || m[1] != c.want[1] || !math.IsNaN(m[2]) {
			t.Errorf("alpha %v: %v, want %v and NaN", c.alpha, m, c.want)
		}
	}
	// Default alpha 0.5: the lower median.
	res, err := New().Summarise(context.Background(), [][][]float64{r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Map[0] != 2 {
		t.Errorf("default alpha: %v, want the lower median 2", res[0].Map[0])
	}
	// One draw: every level gives it.
	res, err = New().Summarise(context.Background(), [][][]float64{{{5, -1}}}, sdk.Config{"alpha": 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Map[0] != 5 || res[0].Map[1] != -1 {
		t.Errorf("one draw: %v", res[0].Map)
	}
	if _, err := New().Summarise(context.Background(), [][][]float64{{}}, nil); err == nil {
		t.Error("no draws accepted")
	}
}

func TestCheck(t *testing.T) {
	s := New()
	for _, ok := range []sdk.Config{nil, {"alpha": 0.5}, {"alpha": 1e-9}, {"alpha": 0.999999}} {
		if err := s.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"beta": 0.5}, `unknown key "beta"`},
		{sdk.Config{"alpha": 0.0}, `key "alpha": 0 is out of range (accepted: 0 < alpha < 1)`},
		{sdk.Config{"alpha": 1.0}, `key "alpha": 1 is out of range`},
		{sdk.Config{"alpha": int64(1)}, `key "alpha": 1 is out of range`},
		{sdk.Config{"alpha": -0.5}, `key "alpha": -0.5 is out of range`},
		{sdk.Config{"alpha": math.NaN()}, `key "alpha"`},
		{sdk.Config{"alpha": "half"}, `key "alpha"`},
	} {
		err := s.Check(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ID+": ") {
			t.Errorf("Check(%v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
		if _, err := s.Summarise(context.Background(), [][][]float64{{{1}}}, c.cfg); err == nil {
			t.Errorf("Summarise accepted %v", c.cfg)
		}
	}
	if i := s.Info(); i.ID != ID || i.Output != sdk.OutputMap || i.MinDraws != 1 {
		t.Errorf("Info %+v", i)
	}
}
