package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
)

// firstOfEachClass is the reference selection, by a plain scan: the
// first `bound` records of each class in (split, record) order.
func firstOfEachClass(w world, bound int) [][2]int {
	count := map[int]int{}
	var out [][2]int
	for _, b := range w.batches { // newWorld's batches are in that order
		c := b.Labels[0]
		if b.Masks[0] == nil {
			c = -1
		}
		if count[c] < bound {
			count[c]++
			out = append(out, [2]int{b.Split, b.Records[0]})
		}
	}
	return out
}

func keysOf(es []report.Explored) [][2]int {
	out := make([][2]int, len(es))
	for i, e := range es {
		out[i] = [2]int{e.Split, e.Record}
	}
	return out
}

// shardedExplored feeds the world's batches, in a shuffled order, to
// `shards` analysers on `workers` goroutines each, the records cut into
// units of `unit` (a unit to shard u mod shards), takes every unit out of
// its shard and puts it into a fresh analyser, as a merge does.
func shardedExplored(t *testing.T, w world, shards, workers, unit int, seed uint64) []byte {
	t.Helper()
	n := w.setup.Tests[0].Data.N
	src := make([]*Analyser, shards)
	for i := range src {
		src[i] = New(w.setup)
	}
	order := identity(len(w.batches))
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	jobs := make(chan *engine.Batch)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range jobs {
				if err := src[(b.Records[0]/unit)%shards].Batch(b); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for _, i := range order {
		jobs <- w.batches[i]
	}
	close(jobs)
	wg.Wait()
	dst := New(w.setup)
	ps, es := engine.Step{Label: "P"}, engine.Step{Label: "E"}
	for si := range w.setup.Tests {
		for b0 := 0; b0 < n; b0 += unit {
			data, err := src[(b0/unit)%shards].Take(ps, es, si, b0, min(b0+unit, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := dst.Put(ps, es, si, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := json.Marshal(dst.Explored())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExploredSelection: report.html's records are the first
// ExplorePerClass of each class in (split, record) order (a plain scan
// says which), the same bytes for any order of batches, number of
// workers, shards and unit size; each carries the draws' statistics
// (the mean and the 5% order statistic recomputed by hand here).
func TestExploredSelection(t *testing.T) {
	w := newWorld(t, recipe.Analysis{}, 10, 6, nil)
	one := New(w.setup)
	for _, b := range w.batches {
		if err := one.Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	got := one.Explored()
	want := firstOfEachClass(w, ExplorePerClass)
	if !slices.Equal(keysOf(got), want) {
		t.Fatalf("selected %v, want %v", keysOf(got), want)
	}
	for _, e := range got {
		b := w.batches[e.Split*10+e.Record]
		S := len(b.Maps[0])
		if e.Draws != S || len(e.Members) != S || e.Label != b.Labels[0] || e.Pred != b.Preds[0] || e.Prob != b.Probs[0][b.Preds[0]] {
			t.Errorf("record %d/%d: draws %d members %d label %d pred %d prob %v", e.Split, e.Record, e.Draws, len(e.Members), e.Label, e.Pred, e.Prob)
		}
		for i := range N {
			col := make([]float64, S)
			mean := 0.0
			for s := range S {
				col[s] = math.Abs(b.Maps[0][s][i])
				mean += col[s]
			}
			mean /= float64(S)
			slices.Sort(col)
			q05 := col[int(math.Ceil(0.05*float64(S)))-1]
			if math.Abs(float64(e.Mean[i])-mean) > 1e-6 || float64(e.Q05[i]) != float64(float32(q05)) {
				t.Fatalf("record %d/%d coordinate %d: mean %v q05 %v, want %v %v", e.Split, e.Record, i, e.Mean[i], e.Q05[i], mean, q05)
			}
		}
	}
	ref, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ shards, workers, unit int }{{1, 1, 10}, {1, 4, 3}, {3, 2, 3}, {2, 3, 1}, {4, 4, 4}} {
		if b := shardedExplored(t, w, c.shards, c.workers, c.unit, uint64(i)); string(b) != string(ref) {
			t.Errorf("%d shards, %d workers, units of %d: another selection", c.shards, c.workers, c.unit)
		}
	}
}

// TestExploredWindows: of an unlabelled split (a recording), the first
// ExploreWindows windows in order, whatever the shards.
func TestExploredWindows(t *testing.T) {
	n := ExploreWindows + 15
	w := newWorld(t, recipe.Analysis{}, n, 2, nil)
	for _, b := range w.batches {
		b.Labels[0], b.Masks[0] = -1, nil
	}
	w.setup.Tests, w.batches = w.setup.Tests[:1], w.batches[:n]
	one := New(w.setup)
	for _, b := range w.batches {
		if err := one.Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	got := one.Explored()
	if want := firstOfEachClass(w, ExploreWindows); !slices.Equal(keysOf(got), want) || len(want) != ExploreWindows {
		t.Fatalf("selected %d windows %v, want the first %d", len(got), keysOf(got), ExploreWindows)
	}
	ref, _ := json.Marshal(got)
	for i, c := range []struct{ shards, workers, unit int }{{3, 2, 7}, {2, 4, 50}} {
		if b := shardedExplored(t, w, c.shards, c.workers, c.unit, uint64(i)); string(b) != string(ref) {
			t.Errorf("%d shards, %d workers, units of %d: another selection", c.shards, c.workers, c.unit)
		}
	}
}

// replicated is the world's batches under two replicates of posterior P:
// replicate 0 the world's maps, replicate 1 every map value plus 3 (so
// each replicate's mean |R| is its own), each batch a copy.
func replicated(w world) []*engine.Batch {
	var out []*engine.Batch
	for _, b := range w.batches {
		for rep := range 2 {
			c := *b
			c.Posterior = engine.Step{Label: "P", Replicate: rep, Replicated: true}
			maps := make([][]float64, len(b.Maps[0]))
			for s, m := range b.Maps[0] {
				maps[s] = make([]float64, len(m))
				for i, v := range m {
					maps[s][i] = v + 3*float64(rep)
				}
			}
			c.Maps = [][][]float64{maps}
			out = append(out, &c)
		}
	}
	return out
}

// TestExploredReplicates: a replicated run's replicates (the same label,
// replicates 0 and 1) are pairs of their own: every selected record is
// there under both, replicate 0 first, each with the mean of its own
// maps (recomputed here from the batch it came from), named
// "P (replicate r)" on the page; the same bytes whatever the order of
// the batches and through the shards' Take and Put.
func TestExploredReplicates(t *testing.T) {
	w := newWorld(t, recipe.Analysis{}, 10, 4, nil)
	bs := replicated(w)
	check := func(got []report.Explored) {
		t.Helper()
		want := firstOfEachClass(w, ExplorePerClass)
		if len(got) != 2*len(want) {
			t.Fatalf("%d records, want %d (2 replicates x %d)", len(got), 2*len(want), len(want))
		}
		for i, e := range got {
			k, rep := want[i/2], i%2
			if [2]int{e.Split, e.Record} != k || e.Replicate != rep || !e.Replicated || e.PosteriorName() != fmt.Sprintf("P (replicate %d)", rep) {
				t.Fatalf("entry %d: %s record %d/%d, want replicate %d of %v", i, e.PosteriorName(), e.Split, e.Record, rep, k)
			}
			b := bs[2*(e.Split*10+e.Record)+rep]
			for n := range N {
				mean := 0.0
				for _, m := range b.Maps[0] {
					mean += math.Abs(m[n])
				}
				mean /= float64(len(b.Maps[0]))
				if math.Abs(float64(e.Mean[n])-mean) > 1e-5 {
					t.Fatalf("replicate %d record %d/%d coordinate %d: mean %v, want its own %v", rep, e.Split, e.Record, n, e.Mean[n], mean)
				}
			}
		}
	}
	var ref []byte
	for seed := range uint64(3) {
		order := identity(len(bs))
		rand.New(rand.NewPCG(seed, 7)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		a := New(w.setup)
		for _, i := range order {
			if err := a.Batch(bs[i]); err != nil {
				t.Fatal(err)
			}
		}
		got := a.Explored()
		check(got)
		b, _ := json.Marshal(got)
		if ref == nil {
			ref = b
		} else if string(b) != string(ref) {
			t.Errorf("batch order %d: other bytes", seed)
		}
	}
	// Two shards (by record), every unit taken out and put into a third.
	src := []*Analyser{New(w.setup), New(w.setup)}
	for _, b := range bs {
		if err := src[b.Records[0]%2].Batch(b); err != nil {
			t.Fatal(err)
		}
	}
	dst := New(w.setup)
	es := engine.Step{Label: "E"}
	for si := range w.setup.Tests {
		for r := range 10 {
			for rep := range 2 {
				ps := engine.Step{Label: "P", Replicate: rep, Replicated: true}
				data, err := src[r%2].Take(ps, es, si, r, r+1)
				if err != nil {
					t.Fatal(err)
				}
				if err := dst.Put(ps, es, si, data); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	got := dst.Explored()
	check(got)
	if b, _ := json.Marshal(got); string(b) != string(ref) {
		t.Error("through Take and Put: other bytes")
	}
}
