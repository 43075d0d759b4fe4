package analysis

import (
	"cmp"
	"slices"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/stat"
)

// The records report.html shows (report.Explored): of each (posterior,
// explainer) pair (each replicate of a replicated run its own), the first ExplorePerClass explained records of each
// true class in (split, record) order, and of an unlabelled split (a
// recording) its first ExploreWindows windows. The selection is the same
// whatever the workers, the batches and the shards: Batch keeps a record
// while fewer than the bound of its class with smaller (split, record)
// are held, evicting the largest held one when over it (an evicted record
// has the bound's number of smaller ones, so it is not among the first of
// its class in the whole run either); Take sends a unit's kept records in
// its payload, and Explored takes the first of each class of all of them.
//
// Size: a record under a pair is (S' + 6) x C x T float32 values in
// report.html (S' = min(S, ExploreDraws) members, exact for the hover,
// and the input and five summaries), base64: about 5.3 bytes a value,
// 130 kB for S = 32, C = 1, T = 640, 17 kB for the quick recipes' S = 5.
// The largest paper recipe (bnn_results: 4 posteriors, 1 explainer, 15
// classes, S = 20) shows 4 x 15 x 2 = 120 of them, about 11 MB.
// Above report.MaxColumns samples a channel the page thins a record to
// that many columns, so a record stays under (S' + 12) x C x 1024 values
// whatever T.
const (
	ExplorePerClass = 2
	ExploreWindows  = 120
	ExploreDraws    = 32
)

// exploreKey orders the held records of a class.
type exploreKey struct{ split, record int }

func (k exploreKey) cmp(o exploreKey) int {
	return cmp.Or(cmp.Compare(k.split, o.split), cmp.Compare(k.record, o.record))
}

// exploreClass is the class a record is selected under (-1: unlabelled)
// and its bound.
func exploreClass(label int, labelled bool) (int, int) {
	if !labelled {
		return -1, ExploreWindows
	}
	return label, ExplorePerClass
}

// explore keeps record j of the batch for the report when it may be among
// the first of its class; p.recs[b.Split][b.Records[j]] is its record.
func (a *Analyser) explore(p *pair, b *engine.Batch, j int, rec *record) {
	class, bound := exploreClass(b.Labels[j], b.Masks[j] != nil)
	key := exploreKey{b.Split, b.Records[j]}
	a.mu.Lock()
	held := p.held[class]
	full := len(held) >= bound && key.cmp(held[len(held)-1]) > 0
	a.mu.Unlock()
	if full {
		return
	}
	e := a.explored(b, j)
	a.mu.Lock()
	defer a.mu.Unlock()
	held = p.held[class]
	i, found := slices.BinarySearchFunc(held, key, exploreKey.cmp)
	if found { // the record again (its unit explained again): the same values
		rec.explore = e
		return
	}
	if i >= bound {
		return
	}
	held = slices.Insert(held, i, key)
	rec.explore = e
	if len(held) > bound {
		last := held[len(held)-1]
		if r := p.recs[last.split][last.record]; r != nil {
			r.explore = nil
		}
		held = held[:bound]
	}
	p.held[class] = held
}

// untake forgets the held keys of records [b0, b1) of split si (a unit
// taken); the caller holds a.mu.
func (p *pair) untake(si, b0, b1 int) {
	for c, held := range p.held {
		p.held[c] = slices.DeleteFunc(held, func(k exploreKey) bool { return k.split == si && k.record >= b0 && k.record < b1 })
	}
}

// explored is what the report shows of record j of the batch.
func (a *Analyser) explored(b *engine.Batch, j int) *report.Explored {
	members := a.absMaps(b.Maps[j])
	S, N := len(members), len(members[0])
	e := &report.Explored{Posterior: b.Posterior.Label, Replicate: b.Posterior.Replicate, Replicated: b.Posterior.Replicated, Explainer: b.Explainer.Label, Split: b.Split, SplitName: b.SplitName,
		Record: b.Records[j], Label: b.Labels[j], Pred: b.Preds[j], Prob: b.Probs[j][b.Preds[j]], Channels: max(b.Channels, 1),
		ChannelNames: b.ChannelNames, Wave: b.X[j][:min(len(b.X[j]), N)], Mask: b.Masks[j], Draws: S}
	if b.DrawProbs != nil {
		e.DrawProbs = b.DrawProbs[j]
	}
	e.Members = toF32(members[:min(S, ExploreDraws)])
	vr, cvm := make([]float64, N), make([]float64, N) // 0 with one draw
	if S >= 2 {
		stat.Variance(vr, members)
		stat.CV(cvm, members, figureKappa)
	}
	sums := toF32([][]float64{
		stat.Mean(make([]float64, N), members),
		stat.Quantile(make([]float64, N), members, stat.Rank(0.05, S)),
		stat.Quantile(make([]float64, N), members, stat.Rank(0.95, S)),
		vr, cvm,
	})
	e.Mean, e.Q05, e.Q95, e.Variance, e.CV = sums[0], sums[1], sums[2], sums[3], sums[4]
	return e
}

// Explored is the report's selection of explained records: by (split,
// record), each under every pair in the recipe's order. A replicated
// run's replicates are pairs of their own (no aggregation: each
// replicate's record shows its own networks' maps), a posterior's
// replicates one after another.
func (a *Analyser) Explored() []report.Explored {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []report.Explored
	for _, p := range a.orderedPairs() {
		count := map[int]int{}
		for _, recs := range p.recs {
			for _, r := range recs {
				if r == nil || r.explore == nil {
					continue
				}
				class, bound := exploreClass(r.explore.Label, r.explore.Mask != nil)
				if count[class] >= bound {
					continue
				}
				count[class]++
				out = append(out, *r.explore)
			}
		}
	}
	order := map[pairKey]int{}
	for i, p := range a.orderedPairs() {
		order[pairKey{p.post, p.rep, p.exp}] = i
	}
	rank := func(e report.Explored) int { return order[pairKey{e.Posterior, e.Replicate, e.Explainer}] }
	slices.SortStableFunc(out, func(x, y report.Explored) int {
		return cmp.Or(cmp.Compare(x.Split, y.Split), cmp.Compare(x.Record, y.Record), cmp.Compare(rank(x), rank(y)))
	})
	return out
}
