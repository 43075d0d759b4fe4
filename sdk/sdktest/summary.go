package sdktest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/rng"
)

// SummaryCase is a small batch to summarise: Draws[i] holds the S x N
// draws of input i. OrderDependent skips the check that the result does
// not depend on the order of the draws; set it only for a summary that is
// not a function of the empirical distribution (e.g. "the first draw").
type SummaryCase struct {
	Draws          [][][]float64
	Config         sdk.Config
	OrderDependent bool
}

// Summary runs the conformance checks on a summary (see the package
// documentation). It also checks that the result is invariant, up to
// rounding, to the order of the draws.
func Summary(t testing.TB, impl sdk.Summary, c SummaryCase) {
	t.Helper()
	info := impl.Info()
	h, cancel := newHarness(t, impl, sdk.KindSummary)
	defer cancel()
	ctx := h.ctx
	switch info.Output {
	case sdk.OutputMap, sdk.OutputSet, sdk.OutputBand:
	default:
		h.errorf("Info: output %q (accepted: map, set, band)", info.Output)
	}
	if info.MinDraws < 0 {
		h.errorf("Info: MinDraws %d < 0", info.MinDraws)
	}
	local, err := driver.LocalSummary(impl)
	if err != nil {
		h.fatalf("%v", err)
	}
	h.checkConfig("in process", local.Check, c.Config)

	if len(c.Draws) == 0 {
		h.fatalf("bad case: no inputs")
	}
	for i, d := range c.Draws {
		if len(d) == 0 || len(d[0]) == 0 {
			h.fatalf("bad case: input %d has no draws or empty draws", i)
		}
		if len(d) < info.MinDraws {
			h.fatalf("bad case: input %d has %d draws; the summary declares MinDraws %d", i, len(d), info.MinDraws)
		}
		for s := range d {
			if len(d[s]) != len(d[0]) {
				h.fatalf("bad case: input %d: draw %d has %d values, draw 0 has %d", i, s, len(d[s]), len(d[0]))
			}
		}
	}
	clone := func(in [][][]float64) [][][]float64 {
		out := make([][][]float64, len(in))
		for i, d := range in {
			out[i] = make([][]float64, len(d))
			for s, r := range d {
				out[i][s] = slices.Clone(r)
			}
		}
		return out
	}

	draws := clone(c.Draws)
	want, err := local.Summarise(ctx, draws, c.Config)
	if err != nil {
		h.fatalf("in process: %v", err)
	}
	for i := range draws {
		if d := diffMaps(draws[i], c.Draws[i]); d != "" {
			h.errorf("Summarise modified its input draws (input %d, draw %s); treat them as read-only", i, d)
			break
		}
	}

	if got, err := local.Summarise(ctx, clone(c.Draws), c.Config); err != nil {
		h.errorf("in process, second call: %v", err)
	} else if d := diffResults(got, want); d != "" {
		h.errorf("not deterministic: the same draws gave different results (%s)", d)
	}

	// Each input alone gives the same result as in the batch.
	for i := range c.Draws {
		got, err := local.Summarise(ctx, clone(c.Draws[i:i+1]), c.Config)
		if err != nil {
			h.errorf("in process, input %d alone: %v", i, err)
			continue
		}
		if d := diffResult(got[0], want[i]); d != "" {
			h.errorf("results depend on the batch: input %d summarised alone differs (%s)", i, d)
		}
	}

	// The order of the draws does not matter (up to rounding).
	if !c.OrderDependent {
		rev := clone(c.Draws)
		for _, d := range rev {
			slices.Reverse(d)
		}
		got, err := local.Summarise(ctx, rev, c.Config)
		if err != nil {
			h.errorf("in process, draws reversed: %v", err)
		} else {
			for i := range got {
				if d := closeResult(got[i], want[i], scale(c.Draws[i])); d != "" {
					h.errorf("input %d: the result depends on the order of the draws (%s); a summary of the empirical distribution must not (set OrderDependent if yours is meant to)", i, d)
					break
				}
			}
		}
	}

	v, stop := h.serve(impl, sdk.KindSummary)
	defer stop()
	remote := v.(sdk.Summary)
	if ri := remote.Info(); !sameInfo(ri, info) {
		h.errorf("remote Info %+v differs from in-process Info %+v", ri, info)
	}
	h.checkConfig("remote", remote.Check, c.Config)
	got, err := remote.Summarise(ctx, clone(c.Draws), c.Config)
	if err != nil {
		h.errorf("remote: %v", err)
	} else if d := diffResults(got, want); d != "" {
		h.errorf("remote results differ from in-process results (%s)", d)
	}
}

// scale is max(1, max |x|) over one input's draws, squared if above 1, so
// that second moments are covered.
func scale(d [][]float64) float64 {
	m := 1.0
	for _, r := range d {
		for _, v := range r {
			m = math.Max(m, math.Abs(v))
		}
	}
	return m * m
}

// closeResult describes the first value where a and b differ by more than
// rounding: |a-b| <= 1e-9 (|a|+|b|) + 1e-12 scale; sets must be equal.
func closeResult(a, b sdk.Result, scale float64) string {
	near := func(name string, x, y []float64) string {
		if len(x) != len(y) {
			return fmt.Sprintf("%s: lengths %d and %d", name, len(x), len(y))
		}
		for j := range x {
			if math.Abs(x[j]-y[j]) > 1e-9*(math.Abs(x[j])+math.Abs(y[j]))+1e-12*scale {
				return fmt.Sprintf("%s index %d: %v vs %v", name, j, x[j], y[j])
			}
		}
		return ""
	}
	if d := near("map", a.Map, b.Map); d != "" {
		return d
	}
	if d := near("lower", a.Lower, b.Lower); d != "" {
		return d
	}
	if d := near("upper", a.Upper, b.Upper); d != "" {
		return d
	}
	if !slices.Equal(a.Set, b.Set) {
		return diffResult(sdk.Result{Set: a.Set}, sdk.Result{Set: b.Set})
	}
	return ""
}

// RandomDraws returns a summary case's draws: n inputs of s draws of m
// values each, offset + N(0, 1), from the stream of seed.
func RandomDraws(n, s, m int, offset float64, seed uint64) [][][]float64 {
	r := rng.New(seed)
	out := make([][][]float64, n)
	for i := range out {
		out[i] = make([][]float64, s)
		for j := range out[i] {
			out[i][j] = make([]float64, m)
			for k := range out[i][j] {
				out[i][j][k] = offset + r.NormFloat64()
			}
		}
	}
	return out
}
