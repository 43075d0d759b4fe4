package analysis

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
)

// TestTakePut: what a run's units carry of the analysis. The per-record
// results of every table, taken out of one analyser in blocks (as shards
// hand them over) and put into a fresh one (as a merge does), give the
// same report, byte for byte: JSON, tables, figures and safetensors. What
// is taken is forgotten.
func TestTakePut(t *testing.T) {
	an := recipe.Analysis{Sensitivity: sens("noise 30", "shift 4"), Calibration: &recipe.Calibration{Levels: []float64{0.5, 0.9}, Build: 3, Partitions: 4},
		Agreement: &recipe.Agreement{Etas: []float64{0.5, 1}, Deltas: []float64{0.2}}, Bound: &recipe.Bound{Delta: 0.05},
		TotalVariance: &recipe.TotalVariance{Repeats: 2}, Figures: &recipe.Figures{Qualitative: []string{"sag", "swell"}}, Output: recipe.Output{Maps: true}}
	const n = 10
	w := newWorld(t, an, n, 6, func(m []float64, rnd *rand.Rand) []float64 {
		o := make([]float64, len(m))
		for i, v := range m {
			o[i] = v * (1 + 0.1*rnd.NormFloat64())
		}
		return o
	})
	w.setup.Summaries = []string{"Mean", "Band"}
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, b := range w.batches {
		b.Summaries = [][][]float64{{eval.Abs(nil, b.Maps[0][0])}, nil}
		rep := make([][][]float64, len(b.Maps[0]))
		for s := range rep {
			m := make([]float64, N)
			for i := range m {
				m[i] = b.Maps[0][s][i] + 0.1*rnd.NormFloat64()
			}
			rep[s] = [][]float64{b.Maps[0][s], m}
		}
		b.Repeats = [][][][]float64{rep}
	}
	finish := func(a *Analyser) *Report {
		rep, err := a.Finish(&engine.Results{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	feed := func() *Analyser {
		a := New(w.setup)
		for _, b := range w.batches {
			if err := a.Batch(b); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	want := finish(feed())
	src := feed()
	dst := New(w.setup)
	ps, es := engine.Step{Label: "P"}, engine.Step{Label: "E"}
	for si := range 2 {
		for b0 := 0; b0 < n; b0 += 3 {
			data, err := src.Take(ps, es, si, b0, min(b0+3, n))
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := src.Take(ps, es, si, b0, min(b0+3, n)); again == nil || bytes.Equal(again, data) {
				t.Fatalf("split %d records %d..: taken twice gives the same results", si, b0)
			}
			if err := dst.Put(ps, es, si, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := finish(dst)
	ja, _ := json.Marshal(want.JSON)
	jb, _ := json.Marshal(got.JSON)
	if string(ja) != string(jb) {
		t.Errorf("the report after Take and Put differs:\n%s\n%s", ja, jb)
	}
	for _, k := range []string{"sensitivity", "calibration", "agreement", "bound", "total_variance"} {
		if want.JSON[k] == nil {
			t.Errorf("no %s section: the test compares nothing of it", k)
		}
	}
	if len(want.Files) < 2 || !reflect.DeepEqual(want.Files, got.Files) || !reflect.DeepEqual(want.Tables, got.Tables) {
		t.Errorf("files or tables differ after Take and Put (%d and %d files)", len(want.Files), len(got.Files))
	}
	if _, err := src.Take(engine.Step{Label: "Q"}, es, 0, 0, n); err != nil {
		t.Errorf("Take of a pair never seen: %v", err)
	}
	for _, c := range []struct {
		si   int
		data []byte
		want string
	}{{0, []byte("not gob"), "decoding"}, {5, nil, "the run has 2 splits"}} {
		data := c.data
		if data == nil {
			data, _ = feed().Take(ps, es, 0, 0, 3)
		}
		if err := New(w.setup).Put(ps, es, c.si, data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Put(split %d): %v, want %q", c.si, err, c.want)
		}
	}
	data, _ := feed().Take(ps, es, 0, 0, n)
	small := w.setup
	small.Tests = append([]engine.TestSplit(nil), w.setup.Tests...)
	small.Tests[0].Data.N = 2
	if err := New(small).Put(ps, es, 0, data); err == nil || !strings.Contains(err.Error(), "the split has 2") {
		t.Errorf("Put of records beyond the split: %v", err)
	}
}
