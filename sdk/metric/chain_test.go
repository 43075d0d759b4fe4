package metric

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

// TestEditorsMakeTheirCopies: each editor, applied step after step from
// its start (from the start again where it restarts), makes at each step
// the copy its doc comment defines, written out here independently, and
// changes no sample outside the range it returns.
func TestEditorsMakeTheirCopies(t *testing.T) {
	const C, T = 2, 30
	n := C * T
	rng := rand.New(rand.NewPCG(4, 4))
	x, base := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], base[i] = float32(rng.NormFloat64()), float32(100+i)
	}
	perm := rng.Perm(n)
	vals := []float32{-1, -2, -3, -4, -5, -6, -7, -8, -9}
	with := func(src []float32, idx []int, v func(j int) float32) []float32 {
		out := slices.Clone(src)
		for _, j := range idx {
			out[j] = v(j)
		}
		return out
	}
	fromBase := func(j int) float32 { return base[j] }
	regions := []int{2, 0, 5}
	cases := []struct {
		name  string
		start []float32
		e     editor
		want  [][]float32 // the copies
	}{
		{"region", x, &regionEditor{base: base, order: regions, C: C, T: T, patch: 6}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			var idx []int
			for _, r := range regions {
				for c := range C {
					for t := r * 6; t < min(r*6+6, T); t++ {
						idx = append(idx, c*T+t)
					}
				}
				out = append(out, with(x, idx, fromBase))
			}
			return out
		}()},
		{"flip", x, &flipEditor{base: base, order: perm, step: 12, T: T}, func() [][]float32 {
			var out [][]float32
			for k := 1; k*12 <= n; k++ {
				out = append(out, with(x, perm[:k*12], fromBase))
			}
			return out
		}()},
		{"sets", x, &setEditor{base: base, sets: perm, size: 15, T: T}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for r := 0; r*15 < n; r++ {
				out = append(out, with(x, perm[r*15:(r+1)*15], fromBase))
			}
			return out
		}()},
		{"sets with values", x, &setEditor{vals: vals, sets: perm[:30], size: 10, samples: 3, T: T}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for r := range 9 {
				g := r / 3
				out = append(out, with(x, perm[g*10:(g+1)*10], func(int) float32 { return vals[r] }))
			}
			return out
		}()},
		{"patches", x, newPatchEditor(base, []int{7, 30}, C, T), func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for _, p := range []int{7, 30} {
				var idx []int
				for t0 := 0; t0 < T; t0 += p {
					for c := range C {
						for t := t0; t < min(t0+p, T); t++ {
							idx = append(idx, c*T+t)
						}
					}
					out = append(out, with(x, idx, fromBase))
				}
			}
			return out
		}()},
	}
	for _, c := range cases {
		cur := slices.Clone(c.start)
		var got [][]float32
		r, _ := c.e.(restarter)
		for k := range c.e.steps() {
			if r != nil && r.restart(k) {
				copy(cur, c.start)
			}
			prev := slices.Clone(cur)
			lo, hi := c.e.edit(k, cur)
			for j := range cur {
				if s := j % T; cur[j] != prev[j] && (s < lo || s >= hi) {
					t.Fatalf("%s step %d: sample %d changed outside the range [%d, %d) returned", c.name, k, j, lo, hi)
				}
			}
			got = append(got, slices.Clone(cur))
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d copies shown; want %d", c.name, len(got), len(c.want))
		}
		for k := range got {
			if !slices.Equal(got[k], c.want[k]) {
				t.Errorf("%s: copy %d differs from its definition", c.name, k)
			}
		}
	}
}

// TestChainMetricsEdges: a chain metric scores no records without error
// (no chain to run), and faithfulness correlation takes a subset of every
// sample of a record but not one more.
func TestChainMetricsEdges(t *testing.T) {
	ctx := context.Background()
	for id, cfg := range map[string]sdk.Config{
		"metric.region_perturbation": {"patch_size": int64(2)}, "metric.pixel_flipping": {"features_in_step": int64(2)},
		"metric.infidelity": {}, "metric.faithfulness_estimate": {"features_in_step": int64(2)},
	} {
		m, err := Builtin().New(id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		in := linearInput(0, 1, 8, 1)
		if err := m.Score(ctx, in, nil); err != nil {
			t.Errorf("%s on no records: %v", id, err)
		}
	}
	in := linearInput(2, 2, 6, 3)
	for _, size := range []int{12, 13} {
		m, err := Builtin().New("metric.faithfulness_correlation", sdk.Config{"subset_size": int64(size), "nr_runs": int64(3)})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Score(ctx, in, make([]Score, 2))
		if (err == nil) != (size == 12) || err != nil && !strings.Contains(err.Error(), "subset_size = 13 is more than a record's 2 x 6 = 12 samples") {
			t.Errorf("subset_size %d of 12 samples: %v", size, err)
		}
	}
}
