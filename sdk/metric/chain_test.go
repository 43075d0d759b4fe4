package metric

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

// TestEditorsMakeTheirCopies: each editor, applied step after step from
// its start, makes at each step that is not hidden the copy its doc
// comment defines, written out here independently, and changes no
// sample outside the range it returns.
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
		want  [][]float32 // the copies not hidden
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
		{"sets", x, &setEditor{x: x, base: base, sets: perm, size: 15, T: T}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for r := 0; r*15 < n; r++ {
				out = append(out, with(x, perm[r*15:(r+1)*15], fromBase))
			}
			return out
		}()},
		{"scattered sets", x, &setEditor{x: x, base: base, sets: perm, size: 15, T: T, scattered: true}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for r := 0; r*15 < n; r++ {
				out = append(out, with(x, perm[r*15:(r+1)*15], fromBase))
			}
			return out
		}()},
		{"scattered sets with values", x, &setEditor{x: x, vals: vals, sets: perm[:30], size: 10, samples: 3, T: T, scattered: true}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for r := range 9 {
				g := r / 3
				out = append(out, with(x, perm[g*10:(g+1)*10], func(int) float32 { return vals[r] }))
			}
			return out
		}()},
		{"sets with values", x, &setEditor{x: x, vals: vals, sets: perm[:30], size: 10, samples: 3, T: T}, func() [][]float32 {
			out := [][]float32{slices.Clone(x)}
			for r := range 9 {
				g := r / 3
				out = append(out, with(x, perm[g*10:(g+1)*10], func(int) float32 { return vals[r] }))
			}
			return out
		}()},
		{"patches", x, newPatchEditor(x, base, []int{7, 30}, C, T), func() [][]float32 {
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
		h, _ := c.e.(hider)
		for k := range c.e.steps() {
			prev := slices.Clone(cur)
			lo, hi := c.e.edit(k, cur)
			for j := range cur {
				if s := j % T; cur[j] != prev[j] && (s < lo || s >= hi) {
					t.Fatalf("%s step %d: sample %d changed outside the range [%d, %d) returned", c.name, k, j, lo, hi)
				}
			}
			if h == nil || !h.hidden(k) {
				got = append(got, slices.Clone(cur))
			}
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

// TestSetEditorSteps: the hidden steps are one a group after the first,
// each restoring the group before (by the step table, for several group
// and sample counts).
func TestSetEditorSteps(t *testing.T) {
	for _, c := range []struct{ G, S int }{{1, 1}, {3, 1}, {4, 3}, {2, 5}} {
		e := &setEditor{sets: make([]int, c.G*2), size: 2, samples: c.S, T: 1}
		if c.S == 1 {
			e.samples = 0
		}
		hidden, shown := 0, 0
		lastG := 0
		for k := 1; k < e.steps(); k++ {
			g, r := e.at(k)
			if e.hidden(k) {
				hidden++
				if g != lastG {
					t.Errorf("G=%d S=%d step %d restores group %d; the copies before were of group %d", c.G, c.S, k, g, lastG)
				}
				continue
			}
			if r != shown || g != r/c.S {
				t.Errorf("G=%d S=%d step %d: copy %d of group %d; want copy %d of group %d", c.G, c.S, k, r, g, shown, shown/c.S)
			}
			shown++
			lastG = g
		}
		if what := fmt.Sprintf("G=%d S=%d", c.G, c.S); hidden != c.G-1 || shown != c.G*c.S {
			t.Errorf("%s: %d hidden steps and %d copies; want %d and %d", what, hidden, shown, c.G-1, c.G*c.S)
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
