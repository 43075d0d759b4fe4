package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// shardedRun runs the plan's units as n shards, in the order perm, into
// one store, and merges them.
func shardedRun(t *testing.T, p Plan, f *fakes, store UnitStore, n int, perm []int) *Results {
	t.Helper()
	for _, i := range perm {
		if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{I: i, N: n}, nil); err != nil {
			t.Fatalf("shard %d/%d: %v", i, n, err)
		}
	}
	res, _, err := Merge(context.Background(), p, f, store)
	if err != nil {
		t.Fatalf("merge of %d shards: %v", n, err)
	}
	return res
}

// TestShardsMergeToTheSameResults: for 1 to 5 shards, run in shuffled
// orders, the merged results equal those of a run in one piece (records,
// rows, outputs and notes), every posterior is fitted once, and every
// unit is done by exactly one shard.
func TestShardsMergeToTheSameResults(t *testing.T) {
	p := testPlan(70, 3, 2, 8)
	p.UnitRecords = 20 // rounded up to 24: three units a split, the last short
	p.Explainers = append(p.Explainers, Step{ID: "explainer.echo", Label: "Echo 2", Target: "predicted"})
	p.Fingerprint = "test"
	want := runPlan(t, p, newFakes(3), nil)
	units := Units(p)
	if got := len(units); got != 1+2*2*3 {
		t.Fatalf("%d units, want 1 fit and 2 explainers x 2 splits x 3 blocks", got)
	}
	for _, u := range units {
		if u.Kind == ExplainUnit && (u.B0%p.Batch != 0 || u.B1-u.B0 > 24) {
			t.Errorf("unit %s covers records %d..%d: not on batch boundaries of 24 records", u.Name, u.B0, u.B1)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 5; n++ {
		f := newFakes(3)
		store := &countingStore{}
		got := shardedRun(t, p, f, store, n, r.Perm(n))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d shards: merged results differ from a run in one piece", n)
		}
		if f.post.fits != 1 {
			t.Errorf("%d shards: %d fits, want 1", n, f.post.fits)
		}
		for _, u := range units {
			if store.saves[u.Name] != 1 {
				t.Errorf("%d shards: unit %s saved %d times", n, u.Name, store.saves[u.Name])
			}
		}
	}
}

// TestResumeRedoesOnlyWhatIsMissing: units already done are not done
// again; a unit whose payload is gone, or does not read back, is.
func TestResumeRedoesOnlyWhatIsMissing(t *testing.T) {
	p := testPlan(40, 2, 2, 8)
	p.UnitRecords = 16
	p.Fingerprint = "test"
	want := runPlan(t, p, newFakes(2), nil)
	store := &countingStore{}
	f := newFakes(2)
	if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	lost := Units(p)[2].Name
	delete(store.m, lost)
	cut := Units(p)[4].Name
	store.corrupt = map[string]bool{cut: true}
	obs := &recorder{}
	if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{N: 1}, obs); err != nil {
		t.Fatal(err)
	}
	for _, u := range Units(p) {
		want := 1
		if u.Name == lost || u.Name == cut {
			want = 2
		}
		if store.saves[u.Name] != want {
			t.Errorf("unit %s saved %d times, want %d", u.Name, store.saves[u.Name], want)
		}
	}
	if !strings.Contains(strings.Join(obs.notes, "\n"), cut) {
		t.Errorf("notes %q do not name the corrupt unit %s", obs.notes, cut)
	}
	got, _, err := Merge(context.Background(), p, f, store)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("resumed results differ from a run in one piece")
	}
}

// TestUnitCopiedOntoAnotherIsRedone: a unit's payload copied onto the
// name of another unit of the same kind (a fit of another posterior; an
// explain unit of the other split) is refused by Merge, which names the
// unit it holds and the one expected, and is set aside and done again by
// a resumed run, which then merges to the results of a run in one piece.
func TestUnitCopiedOntoAnotherIsRedone(t *testing.T) {
	p := testPlan(40, 2, 2, 8)
	p.UnitRecords = 16
	p.Fingerprint = "test"
	p.Posteriors = append(p.Posteriors, Step{ID: "posterior.fake", Label: "Fake 2", Draws: 3})
	want := runPlan(t, p, newFakes(3), nil)
	f := newFakes(3)
	store := &countingStore{}
	if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	byName := map[string]Unit{}
	for _, u := range Units(p) {
		byName[u.Name] = u
	}
	for _, c := range [][2]string{{"fit-00", "fit-01"}, {"explain-00-00-00-0000", "explain-00-00-01-0000"}} {
		from, to := byName[c[0]], byName[c[1]]
		if from.Kind != to.Kind || from.Name == "" || to.Name == "" {
			t.Fatalf("units %v, %v: the plan lacks the units to copy", from, to)
		}
		store.m[to.Name] = store.m[from.Name]
		_, _, err := Merge(context.Background(), p, f, store)
		if err == nil || !strings.Contains(err.Error(), from.ID().String()) || !strings.Contains(err.Error(), to.ID().String()) {
			t.Errorf("merge with %s copied onto %s: %v; want an error naming both", from.Name, to.Name, err)
		}
		obs := &recorder{}
		before := store.saves[to.Name]
		if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{N: 1}, obs); err != nil {
			t.Fatal(err)
		}
		if store.saves[to.Name] != before+1 {
			t.Errorf("%s copied onto %s: the resumed run saved it %d times, want once", from.Name, to.Name, store.saves[to.Name]-before)
		}
		if !strings.Contains(strings.Join(obs.notes, "\n"), to.Name) {
			t.Errorf("notes %q do not name the unit set aside", obs.notes)
		}
		got, _, err := Merge(context.Background(), p, f, store)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s copied onto %s, then resumed: results differ from a run in one piece", from.Name, to.Name)
		}
	}
}

// TestMergeNamesMissingUnits: a merge before every unit is done fails
// and names what is missing; a unit of another run is refused.
func TestMergeNamesMissingUnits(t *testing.T) {
	p := testPlan(40, 2, 2, 8)
	p.UnitRecords = 16
	p.Fingerprint = "a"
	store := &countingStore{}
	f := newFakes(2)
	if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{I: 0, N: 2}, nil); err != nil {
		t.Fatal(err)
	}
	_, _, err := Merge(context.Background(), p, f, store)
	odd := Units(p)[1].Name
	if err == nil || !strings.Contains(err.Error(), odd) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("merge with shard 1/2 missing: %v; want an error naming %s", err, odd)
	}
	p.Fingerprint = "b"
	_, _, err = RunUnits(context.Background(), p, f, nil, store, Shard{N: 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "another run") {
		t.Errorf("units of another run: %v", err)
	}
}

// TestUnitErrors: a bad shard, and a store that cannot save.
func TestUnitErrors(t *testing.T) {
	p := testPlan(10, 2, 1, 4)
	for _, sh := range []Shard{{I: 2, N: 2}, {I: -1, N: 2}, {I: 0, N: 1, Kind: "train"}} {
		if _, err := sh.Select(Units(p)); err == nil {
			t.Errorf("shard %v accepted", sh)
		}
	}
	fit, _ := Shard{N: 1, Kind: FitUnit}.Select(Units(p))
	if len(fit) != 1 || fit[0].Kind != FitUnit {
		t.Errorf("fit units: %v", fit)
	}
	store := &countingStore{fail: errors.New("disk full")}
	if _, _, err := RunUnits(context.Background(), p, newFakes(2), nil, store, Shard{N: 1}, nil); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing store: %v", err)
	}
}

// countingStore is a memStore that counts saves, fails on demand and
// reports chosen payloads as corrupt (once).
type countingStore struct {
	memStore
	saves   map[string]int
	corrupt map[string]bool
	fail    error
}

func (s *countingStore) Save(name string, b []byte) error {
	if s.fail != nil {
		return s.fail
	}
	if s.saves == nil {
		s.saves = map[string]int{}
	}
	s.saves[name]++
	return s.memStore.Save(name, b)
}

func (s *countingStore) Load(name string) ([]byte, bool, error) {
	if s.corrupt[name] {
		return nil, false, fmt.Errorf("unit %s: checksum mismatch", name)
	}
	return s.memStore.Load(name)
}

func (s *countingStore) Has(name string) bool {
	return s.corrupt[name] || s.memStore.Has(name)
}

func (s *countingStore) SetAside(name string) (string, error) {
	delete(s.corrupt, name)
	delete(s.m, name)
	return name + ".corrupt", nil
}

// lockingCache is a memCache with per-key locks, as host/store's flock.
type lockingCache struct {
	memCache
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	waits int
}

func (c *lockingCache) Lock(ctx context.Context, key string, onWait func()) (func(), error) {
	c.mu.Lock()
	if c.locks == nil {
		c.locks = map[string]*sync.Mutex{}
	}
	l := c.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[key] = l
	}
	c.mu.Unlock()
	if !l.TryLock() {
		c.mu.Lock()
		c.waits++
		c.mu.Unlock()
		onWait()
		l.Lock()
	}
	return l.Unlock, nil
}

// slowPosterior fits slowly, so that concurrent shards meet in Fit.
type slowPosterior struct{ *fakePosterior }

func (p slowPosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	time.Sleep(100 * time.Millisecond)
	return p.fakePosterior.Fit(ctx, req)
}

type slowFakes struct{ *fakes }

func (f slowFakes) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	return slowPosterior{f.post}, nil
}

// TestConcurrentShardsFitOnce: shards of two runs of the same posterior
// (separate run directories, one shared cache) run at once; the cache
// entry's lock makes one fit and the others wait and read it.
func TestConcurrentShardsFitOnce(t *testing.T) {
	p := testPlan(8, 2, 1, 4)
	p.CacheKey = func(Step, sdk.Info) (string, error) { return "key", nil }
	f := newFakes(2)
	cache := &lockingCache{}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = RunUnits(context.Background(), p, slowFakes{f}, cache, &memStore{}, Shard{N: 1}, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.post.fits != 1 || cache.waits == 0 || cache.puts != 1 {
		t.Errorf("%d fits, %d waits, %d puts; want one fit, stored once, the others waiting", f.post.fits, cache.waits, cache.puts)
	}
}

// partedPosterior fits each member as a part of its own, as the deep
// ensemble does: the union of the parts is the whole fit.
type partedPosterior struct {
	*fakePosterior
	partFits map[int]int
	meta     func(part int) map[string]string // Meta of a part's artifact
}

func (p *partedPosterior) Parts(sdk.Config) (int, error) { return p.members, nil }

func (p *partedPosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	a, err := p.fakePosterior.Fit(ctx, req)
	if err != nil || req.Parts == 0 {
		return a, err
	}
	p.mu.Lock()
	if p.partFits == nil {
		p.partFits = map[int]int{}
	}
	p.partFits[req.Part]++
	p.mu.Unlock()
	part := sdk.Artifact{Arch: a.Arch, Tensors: map[string][]float32{strconv.Itoa(req.Part): a.Tensors[strconv.Itoa(req.Part)]}}
	if p.meta != nil {
		part.Meta = p.meta(req.Part)
	}
	return part, nil
}

type partedFakes struct {
	*fakes
	post *partedPosterior
}

func (f partedFakes) Posterior(context.Context, string) (sdk.Posterior, error) { return f.post, nil }

// TestPartedFits: a parted posterior's parts are fit units of their own,
// each done once over every shard, and the joined artifact gives the
// results of the whole fit.
func TestPartedFits(t *testing.T) {
	p := testPlan(30, 3, 2, 8)
	p.UnitRecords = 16
	p.Fingerprint = "test"
	want := runPlan(t, p, newFakes(3), nil)
	mk := func() partedFakes {
		f := newFakes(3)
		return partedFakes{f, &partedPosterior{fakePosterior: f.post, meta: func(int) map[string]string { return map[string]string{"members": "3"} }}}
	}
	f := mk()
	if err := FitParts(context.Background(), &p, f); err != nil || !reflect.DeepEqual(p.Parts, []int{3}) {
		t.Fatalf("FitParts: %v %v", p.Parts, err)
	}
	var fits []string
	for _, u := range Units(p) {
		if u.Kind == FitUnit {
			fits = append(fits, u.Name)
		}
	}
	if !reflect.DeepEqual(fits, []string{"fit-00-00", "fit-00-01", "fit-00-02"}) {
		t.Fatalf("fit units %v", fits)
	}
	for n := 1; n <= 3; n++ {
		f := mk()
		store := &countingStore{}
		for _, kind := range []string{FitUnit, ExplainUnit} {
			for i := range n {
				if _, _, err := RunUnits(context.Background(), p, f, nil, store, Shard{I: n - 1 - i, N: n, Kind: kind}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, _, err := Merge(context.Background(), p, f, store)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got.Rows {
			got.Rows[i].Fit = want.Rows[i].Fit // the parts' Meta; compared below
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d shards: the joined parts give other results than the whole fit", n)
		}
		if !reflect.DeepEqual(f.post.partFits, map[int]int{0: 1, 1: 1, 2: 1}) || f.post.fits != 3 {
			t.Errorf("%d shards: part fits %v (%d fits in all); want each part once", n, f.post.partFits, f.post.fits)
		}
	}
	// Parts that disagree cannot be joined.
	f = mk()
	f.post.meta = func(k int) map[string]string { return map[string]string{"members": strconv.Itoa(3 + k)} }
	if _, _, err := RunUnits(context.Background(), p, f, nil, &countingStore{}, Shard{N: 1}, nil); err == nil || !strings.Contains(err.Error(), "parts must agree") {
		t.Errorf("disagreeing parts: %v", err)
	}
}

// TestJoinParts: the union of disjoint parts; overlapping tensors and
// another architecture are refused.
func TestJoinParts(t *testing.T) {
	arch := nn.Arch{Name: "a", InChannels: 1, InLen: 4}
	a := sdk.Artifact{Arch: arch, Tensors: map[string][]float32{"x": {1}}, Meta: map[string]string{"k": "1", "seed.0": "5"}}
	b := sdk.Artifact{Arch: arch, Tensors: map[string][]float32{"y": {2}}, Meta: map[string]string{"k": "1", "seed.1": "6"}}
	j, err := JoinParts([]sdk.Artifact{a, b})
	want := sdk.Artifact{Arch: arch, Tensors: map[string][]float32{"x": {1}, "y": {2}}, Meta: map[string]string{"k": "1", "seed.0": "5", "seed.1": "6"}}
	if err != nil || !reflect.DeepEqual(j, want) {
		t.Errorf("JoinParts = %+v, %v", j, err)
	}
	if _, err := JoinParts([]sdk.Artifact{a, a}); err == nil || !strings.Contains(err.Error(), "disjoint") {
		t.Errorf("overlapping parts: %v", err)
	}
	c := b
	c.Arch = nn.Arch{Name: "b"}
	if _, err := JoinParts([]sdk.Artifact{a, c}); err == nil || !strings.Contains(err.Error(), "architecture") {
		t.Errorf("another arch: %v", err)
	}
	if _, err := JoinParts(nil); err == nil {
		t.Error("no parts joined")
	}
}

// TestUnitsCoverEveryRecordOnce: for every pair and split, the explain
// units' blocks cover the records exactly once, in order, each at most
// UnitRecords (rounded up to a multiple of Batch; 0 is the default) and
// starting on a batch boundary; names are unique; each kind's indices
// are 0, 1, 2, ... in list order, and Select with a kind uses them.
func TestUnitsCoverEveryRecordOnce(t *testing.T) {
	for _, c := range []struct{ n, batch, unit, want int }{{70, 8, 20, 24}, {300, 32, 0, DefaultUnitRecords}, {5, 4, 1, 4}, {64, 32, 64, 64}} {
		p := testPlan(c.n, 2, 1, c.batch)
		p.UnitRecords = c.unit
		p.Explainers = append(p.Explainers, Step{ID: "explainer.echo", Label: "Echo 2"})
		units := Units(p)
		names := map[string]bool{}
		next := map[string]int{}
		covered := map[[3]int]int{} // pair and split -> records covered so far
		for _, u := range units {
			if names[u.Name] {
				t.Fatalf("%+v: unit name %s twice", c, u.Name)
			}
			names[u.Name] = true
			if u.Index != next[u.Kind] {
				t.Errorf("%+v: unit %s has index %d, want %d", c, u.Name, u.Index, next[u.Kind])
			}
			next[u.Kind]++
			if u.Kind != ExplainUnit {
				continue
			}
			k := [3]int{u.Post, u.Exp, u.Split}
			if u.B0 != covered[k] || u.B1 <= u.B0 || u.B1-u.B0 > c.want || u.B0%c.batch != 0 {
				t.Errorf("%+v: unit %s covers %d..%d after %d records (blocks of %d)", c, u.Name, u.B0, u.B1, covered[k], c.want)
			}
			covered[k] = u.B1
		}
		if len(covered) != 2*len(p.Tests) || next[FitUnit] != 1 {
			t.Errorf("%+v: %d (pair, split) blocks, %d fit units", c, len(covered), next[FitUnit])
		}
		for k, n := range covered {
			if n != c.n {
				t.Errorf("%+v: pair and split %v: %d of %d records covered", c, k, n, c.n)
			}
		}
		for i := range 3 {
			sel, err := Shard{I: i, N: 3, Kind: ExplainUnit}.Select(units)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range sel {
				if u.Kind != ExplainUnit || u.Index%3 != i {
					t.Errorf("%+v: shard explain %d/3 got unit %s (index %d)", c, i, u.Name, u.Index)
				}
			}
			if want := (next[ExplainUnit] - i + 2) / 3; len(sel) != want {
				t.Errorf("%+v: shard explain %d/3 has %d units, want %d", c, i, len(sel), want)
			}
		}
	}
}

// TestUnitDetails: what the merge hands on besides the rows. Predicted
// gets every record's predictive mean, which for the fakes is the mean
// of drawProbs over the draws (a closed form), from 3 shards as from one;
// RunUnits reports the wall time of every unit it did; a shard of N = 0
// is the whole run; Repeats = 1 needs no Analyse; a parted plan is
// parted without FitParts called first, and a fit shard does its own
// parts only.
func TestUnitDetails(t *testing.T) {
	p := testPlan(40, 3, 2, 8)
	p.UnitRecords = 16
	p.Fingerprint = "test"
	p.Posteriors = append(p.Posteriors, Step{ID: "posterior.fake", Label: "Fake 2", Draws: 2})
	want := make([]float64, 3)
	for s := range 3 {
		for c, v := range drawProbs(s) {
			want[c] += v / 3
		}
	}
	// What the draws say of the prediction (Prediction), computed here
	// from each draw's float32 probabilities: the draws vote 0, 2, 0 and
	// the mean's class is 1, which no draw votes for.
	var wantEnt float64
	votes := make([]int, 3)
	for s := range 3 {
		q := make([]float64, 3)
		for c, v := range drawProbs(s) {
			q[c] = float64(float32(v))
		}
		wantEnt += Entropy(q) / 3
		votes[slices.Index(q, slices.Max(q))]++
	}
	wantClass := slices.Index(want, slices.Max(want))
	wantAgree := float64(votes[wantClass]) / 3
	if wantClass != 1 || wantAgree != 0 {
		t.Fatalf("the fakes' draws changed: class %d, agreement %g", wantClass, wantAgree)
	}
	var got [][][]float64
	var gotPred []Prediction
	p.Sink = sinkFunc{predicted: func(ps Step, pred Prediction) error {
		if ps.Label == p.Posteriors[0].Label {
			got = append(got, pred.Probs)
			gotPred = append(gotPred, pred)
		}
		return nil
	}}
	f := newFakes(3)
	store := &countingStore{}
	var done []string
	for _, i := range []int{2, 0, 1} {
		_, costs, err := RunUnits(context.Background(), p, f, nil, store, Shard{I: i, N: 3}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := range costs {
			done = append(done, n)
		}
	}
	if len(done) != len(Units(p)) {
		t.Errorf("the shards reported %d unit times for %d units", len(done), len(Units(p)))
	}
	if _, _, err := Merge(context.Background(), p, f, store); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != len(p.Tests) {
		t.Fatalf("Predicted called %d times", len(got))
	}
	for si, probs := range got[0] {
		if len(probs) != 40*3 {
			t.Fatalf("split %d: %d probabilities, want 120", si, len(probs))
		}
		ment, agree := gotPred[0].MeanEntropy[si], gotPred[0].Agree[si]
		if len(ment) != 40 || len(agree) != 40 {
			t.Fatalf("split %d: %d mean entropies and %d agreements for 40 records", si, len(ment), len(agree))
		}
		for i := range 40 {
			if math.Abs(ment[i]-wantEnt) > 1e-7 || agree[i] != wantAgree {
				t.Fatalf("split %d record %d: mean entropy %g, agreement %g; want %g and %g", si, i, ment[i], agree[i], wantEnt, wantAgree)
			}
		}
		for i, v := range probs {
			if d := v - want[i%3]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("split %d record %d class %d: %g, want the draws' mean %g", si, i/3, i%3, v, want[i%3])
			}
		}
	}
	// The fit units of two posteriors are numbered 0 and 1.
	var fits []Unit
	for _, u := range Units(p) {
		if u.Kind == FitUnit {
			fits = append(fits, u)
		}
	}
	if len(fits) != 2 || fits[0].Index != 0 || fits[1].Index != 1 || fits[1].Name != "fit-01" {
		t.Errorf("fit units %+v", fits)
	}
	if all, err := (Shard{}).Select(Units(p)); err != nil || len(all) != len(Units(p)) {
		t.Errorf("shard of N = 0: %d units, %v", len(all), err)
	}
	pf := newFakes(3)
	parted := partedFakes{pf, &partedPosterior{fakePosterior: pf.post}}
	q := testPlan(8, 3, 1, 4)
	ps := &countingStore{}
	if _, _, err := RunUnits(context.Background(), q, parted, nil, ps, Shard{I: 0, N: 3, Kind: FitUnit}, nil); err != nil {
		t.Fatal(err)
	}
	if len(ps.saves) != 1 || ps.saves["fit-00-00"] != 1 {
		t.Errorf("fit shard 0/3 of a parted posterior saved %v, want its part fit-00-00 only", ps.saves)
	}
}
