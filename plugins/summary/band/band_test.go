package band

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
)

func TestBandsGolden(t *testing.T) {
	samples, cols := golden.Quantiles(t)
	r := [][][]float64{golden.Transpose(samples)}
	ctx := context.Background()
	for _, c := range []struct {
		k, l   int64
		lo, up string
	}{{5, 15, "os_0.25", "os_0.75"}, {1, 19, "os_0.05", "os_0.95"}, {10, 19, "os_0.5", "os_0.95"}} {
		res, err := New().Summarise(ctx, r, sdk.Config{"k": c.k, "l": c.l})
		if err != nil {
			t.Fatal(err)
		}
		golden.SameBits(t, "band lower "+c.lo, res[0].Lower, cols[c.lo])
		golden.SameBits(t, "band upper "+c.up, res[0].Upper, cols[c.up])
	}
	// beta = 0.5: the levels (1-0.5)/2 = 0.25 and (1+0.5)/2 = 0.75 are exact.
	res, err := NewInterpolated().Summarise(ctx, r, sdk.Config{"beta": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	golden.SameBits(t, "iband lower lin_0.25", res[0].Lower, cols["lin_0.25"])
	golden.SameBits(t, "iband upper lin_0.75", res[0].Upper, cols["lin_0.75"])
}

func TestBandEdges(t *testing.T) {
	// S = 4 draws of 3 coordinates; sorted columns: {1,2,3,4}, {-5,-5,0,7}, {NaN, 1, 2, 3}.
	r := [][]float64{{3, 0, 1}, {1, -5, math.NaN()}, {4, 7, 2}, {2, -5, 3}}
	ctx := context.Background()
	for _, c := range []struct {
		k, l   int
		lo, up []float64
	}{
		{1, 4, []float64{1, -5}, []float64{4, 7}}, // min-max
		{1, 2, []float64{1, -5}, []float64{2, -5}},
		{3, 4, []float64{3, 0}, []float64{4, 7}},
	} {
		res, err := New().Summarise(ctx, [][][]float64{r}, sdk.Config{"k": c.k, "l": c.l})
		if err != nil {
			t.Fatal(err)
		}
		lo, up := res[0].Lower, res[0].Upper
		if len(lo) != 3 || len(up) != 3 || lo[0] != c.lo[0] || lo[1] != c.lo[1] || up[0] != c.up[0] || up[1] != c.up[1] || !math.IsNaN(lo[2]) || !math.IsNaN(up[2]) {
			t.Errorf("k %d l %d: %v %v, want %v %v and NaN", c.k, c.l, lo, up, c.lo, c.up)
		}
	}
	res, err := NewInterpolated().Summarise(ctx, [][][]float64{r}, sdk.Config{"beta": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	// S = 4: h = 3*0.25 = 0.75 and 3*0.75 = 2.25.
	if lo, up := res[0].Lower, res[0].Upper; lo[0] != 1.75 || up[0] != 3.25 || lo[1] != -5 || up[1] != 1.75 || !math.IsNaN(lo[2]) || !math.IsNaN(up[2]) {
		t.Errorf("iband beta 0.5: %v %v", lo, up)
	}
	// Default beta 0.9: levels 0.05 and 0.95 (as float64 (1-0.9)/2, (1+0.9)/2).
	res, err = NewInterpolated().Summarise(ctx, [][][]float64{r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	col := []float64{1, 2, 3, 4}
	if lo, up := res[0].Lower[0], res[0].Upper[0]; lo != stat.LinearQuantile(col, (1-0.9)/2) || up != stat.LinearQuantile(col, (1+0.9)/2) || !(lo > 1.14 && lo < 1.16) || !(up > 3.84 && up < 3.86) {
		t.Errorf("iband default: %v %v", lo, up)
	}
}

func TestBandErrors(t *testing.T) {
	ctx := context.Background()
	s := New()
	for _, ok := range []sdk.Config{{"k": int64(1), "l": int64(2)}, {"k": 3.0, "l": int64(100)}} {
		if err := s.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"k": 1, "l": 2, "beta": 0.5}, `unknown key "beta" (accepted: k, l)`},
		{nil, `key "k" is required`},
		{sdk.Config{"k": 1}, `key "l" is required`},
		{sdk.Config{"l": 1}, `key "k" is required`},
		{sdk.Config{"k": 0, "l": 2}, `keys "k" = 0 and "l" = 2 are out of range (accepted: 1 <= k < l <= S`},
		{sdk.Config{"k": 2, "l": 2}, `keys "k" = 2 and "l" = 2 are out of range`},
		{sdk.Config{"k": 3, "l": 2}, `keys "k" = 3 and "l" = 2 are out of range`},
		{sdk.Config{"k": 1.5, "l": 2}, `key "k"`},
		{sdk.Config{"k": 1, "l": "x"}, `key "l"`},
	} {
		err := s.Check(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ID+": ") {
			t.Errorf("Check(%v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
		if _, err := s.Summarise(ctx, [][][]float64{{{1}, {2}, {3}}}, c.cfg); err == nil {
			t.Errorf("Summarise accepted %v", c.cfg)
		}
	}
	three := [][]float64{{1}, {2}, {3}}
	_, err := s.Summarise(ctx, [][][]float64{three, {{1}, {2}}}, sdk.Config{"k": 2, "l": 3})
	if err == nil || err.Error() != `summary.band: input 1: keys "k" = 2 and "l" = 3 need 1 <= k < l <= S, and S = 2` {
		t.Errorf("l > S: %v", err)
	}
	if _, err := s.Summarise(ctx, [][][]float64{three}, sdk.Config{"k": 2, "l": 3}); err != nil {
		t.Errorf("l = S: %v", err)
	}
	_, err = s.Summarise(ctx, [][][]float64{three, {{1}}}, sdk.Config{"k": 1, "l": 2})
	if err == nil || err.Error() != "summary.band: input 1 has 1 draws, at least 2 needed" {
		t.Errorf("one draw: %v", err)
	}
	if i := s.Info(); i.ID != ID || i.Output != sdk.OutputBand || i.MinDraws != 2 {
		t.Errorf("Info %+v", i)
	}
}

func TestInterpolatedErrors(t *testing.T) {
	ctx := context.Background()
	s := NewInterpolated()
	for _, ok := range []sdk.Config{nil, {"beta": 1e-9}, {"beta": 0.999}} {
		if err := s.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"k": 1}, `unknown key "k" (accepted: beta)`},
		{sdk.Config{"beta": 0.0}, `key "beta": 0 is out of range (accepted: 0 < beta < 1)`},
		{sdk.Config{"beta": int64(1)}, `key "beta": 1 is out of range`},
		{sdk.Config{"beta": -0.5}, `key "beta": -0.5 is out of range`},
		{sdk.Config{"beta": math.NaN()}, `key "beta"`},
	} {
		err := s.Check(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), InterpolatedID+": ") {
			t.Errorf("Check(%v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
		if _, err := s.Summarise(ctx, [][][]float64{{{1}, {2}}}, c.cfg); err == nil {
			t.Errorf("Summarise accepted %v", c.cfg)
		}
	}
	_, err := s.Summarise(ctx, [][][]float64{{{1}}}, nil)
	if err == nil || err.Error() != "summary.iband: input 0 has 1 draws, at least 2 needed" {
		t.Errorf("one draw: %v", err)
	}
	if i := s.Info(); i.ID != InterpolatedID || i.Output != sdk.OutputBand || i.MinDraws != 2 {
		t.Errorf("Info %+v", i)
	}
}
