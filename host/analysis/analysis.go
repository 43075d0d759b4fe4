package analysis

import (
	"math"
	"slices"
	"sync"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/metric"
	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/stat"
	"gonum.org/v1/gonum/floats"
)

// Setup is what an Analyser needs of a run.
type Setup struct {
	Analysis   recipe.Analysis
	Seed       uint64
	Tests      []engine.TestSplit
	Groups     map[string][]int // "all", "disc-7"
	Abs        bool             // measures on |R|, as the localisation scores
	Posteriors []string         // labels, recipe order
	Explainers []string         // labels, recipe order
	Summaries  []string         // labels, recipe order
	// Fs and F0 are the records' sampling rate and system frequency, Hz,
	// for the figures' time axes (a tick a cycle); 0: the case study's
	// 3200 Hz and 50 Hz.
	Fs, F0 float64
	// Metrics are the engine's Plan.Metrics' descriptions, in order: the
	// scores of engine.Batch.DrawScores and SummaryScores.
	Metrics []metric.Info
}

// Analyser accumulates the per-record results of a run. Batch is safe for
// concurrent use.
type Analyser struct {
	s     Setup
	mu    sync.Mutex
	pairs map[pairKey]*pair
	err   error
}

// pairKey names a pair: the posterior's label and replicate
// (engine.Step.Replicate: each replicate of a replicated run is its own
// pair, its records its own) and the explainer's label.
type pairKey struct {
	post string
	rep  int
	exp  string
}

func keyOf(ps, es engine.Step) pairKey { return pairKey{ps.Label, ps.Replicate, es.Label} }

// pair is one (posterior, explainer) block: its records by split.
type pair struct {
	post, exp string
	rep       int // the posterior's replicate
	draws     int
	recs      [][]*record // split -> record index (nil: not explained)
	// held are the records kept for the report, by class (explore.go).
	held map[int][]exploreKey
}

// record is everything computed of one explained record.
type record struct {
	label, target, pred int
	maskLen             int
	correct             bool
	sens                []sensResult     // per distortion
	cal                 []calResult      // per level (split coverage), or one (LOO)
	loo                 bool             // cal is the LOO min-max coverage
	agree               []eval.SetMatch  // the (eta, delta) grid
	agreeOK             bool             // the grid was scored
	cx, term            float64          // cor:meanmap
	tv                  *tvResult        // prop:totalvar
	figure              *figure.Panel    // kept for a qualitative figure
	maps                [][]float32      // [output] maps: the draws
	sums                [][]float32      // [output] maps: the map summaries
	explore             *report.Explored // kept for report.html (explore.go)
	// drawScores[k][s] and sumScores[k][i]: metric k's score of draw s's
	// map and of summary i's (metrics.go)
	drawScores, sumScores [][]metric.Score
	// randW1: the W1 between the draws' maps and the re-initialised
	// draws' (randOK false: not measured)
	randW1 float64
	randOK bool
	// randWhy: why the draws could not be re-initialised (a served
	// network), when randomise_draws asked for it
	randWhy string
	// meanAbs: the mean over samples and draws of |R|, for scale
	meanAbs float64
	// chanShare[c]: channel c's share of the draws' mean map's total |R|
	// (nil for one channel, or a map of no relevance)
	chanShare []float64
}

type sensResult struct {
	corr, stab, w1, dIoU  float64
	corrOK, stabOK, iouOK bool
}

type calResult struct {
	covered, total int
	ref            float64
}

type tvResult struct{ total, model, explainer float64 }

// New returns an analyser for the run.
func New(s Setup) *Analyser {
	return &Analyser{s: s, pairs: map[pairKey]*pair{}}
}

// Distortions are the engine distortions of [sensitivity]: noise at an
// SNR (white Gaussian noise of power P_x / 10^(snr/10), P_x the record's
// mean square, from its own keyed stream), an amplitude factor, or a
// circular shift (aligned back before comparing).
func (a *Analyser) Distortions() []engine.Distortion {
	if a.s.Analysis.Sensitivity == nil {
		return nil
	}
	var out []engine.Distortion
	for di, d := range a.s.Analysis.Sensitivity.Distortions {
		out = append(out, makeDistortion(a.s.Seed, di, d))
	}
	return out
}

// Repeats is the number of explainer seeds a draw of [total_variance] (1
// without it).
func (a *Analyser) Repeats() int {
	if t := a.s.Analysis.TotalVariance; t != nil {
		return t.Repeats
	}
	return 1
}

func makeDistortion(seed uint64, di int, d recipe.Distortion) engine.Distortion {
	out := engine.Distortion{Name: d.String()}
	switch d.Kind {
	case recipe.DistortNoise:
		snr := d.Value
		out.Apply = func(dst, x []float32, split string, rec int) {
			NoiseAtSNR(dst, x, snr, rng.Key(seed, "distortion."+d.String(), split, rec, di))
		}
	case recipe.DistortAmplitude:
		f := float32(d.Value)
		out.Apply = func(dst, x []float32, _ string, _ int) {
			for i, v := range x {
				dst[i] = f * v
			}
		}
	case recipe.DistortShift:
		k := int(d.Value)
		out.Apply = func(dst, x []float32, _ string, _ int) { Shift(dst, x, k) }
		out.Align = func(dst, r []float64) { eval.AlignShift(dst, r, k) }
	}
	return out
}

// NoiseAtSNR writes into dst the record x plus white Gaussian noise at
// snr dB:
//
//	dst[n] = x[n] + sigma e[n],  sigma^2 = P_x / 10^(snr/10),  P_x = (1/N) sum_n x[n]^2,
//
// e[n] standard normal from the stream rng.New(key).
func NoiseAtSNR(dst, x []float32, snr float64, key uint64) {
	if len(dst) != len(x) {
		panic("analysis: NoiseAtSNR: lengths differ")
	}
	var p float64
	for _, v := range x {
		p += float64(v) * float64(v)
	}
	p /= float64(len(x))
	sigma := math.Sqrt(p / math.Pow(10, snr/10))
	r := rng.New(key)
	for n, v := range x {
		dst[n] = float32(float64(v) + sigma*r.NormFloat64())
	}
}

// Shift writes into dst the circular shift of x by k samples,
// dst[n] = x[(n - k) mod N]: a positive k delays the waveform. Its
// inverse on a map is eval.AlignShift(dst, r, k).
func Shift(dst, x []float32, k int) {
	N := len(x)
	if len(dst) != N {
		panic("analysis: Shift: lengths differ")
	}
	for n := range dst {
		dst[n] = x[((n-k)%N+N)%N]
	}
}

// Batch takes one explained batch.
func (a *Analyser) Batch(b *engine.Batch) error {
	p := a.pair(b)
	for j, r := range b.Records {
		rec := a.record(b, j)
		a.mu.Lock()
		p.recs[b.Split][r] = rec
		a.mu.Unlock()
		a.explore(p, b, j, rec)
	}
	return nil
}

func (a *Analyser) pair(b *engine.Batch) *pair {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pairOf(b.Posterior, b.Explainer, len(b.Maps[0]))
}

// pairOf is the pair of (ps, es), new with `draws` draws when the
// analyser has none yet; the caller holds a.mu.
func (a *Analyser) pairOf(ps, es engine.Step, draws int) *pair {
	k := keyOf(ps, es)
	p := a.pairs[k]
	if p == nil {
		p = &pair{post: k.post, exp: k.exp, rep: k.rep, draws: draws, recs: make([][]*record, len(a.s.Tests)), held: map[int][]exploreKey{}}
		for si, ts := range a.s.Tests {
			p.recs[si] = make([]*record, ts.Data.N)
		}
		a.pairs[k] = p
	}
	return p
}

// absMaps returns |m| (new slices) when the run scores |R|, else m.
func (a *Analyser) absMaps(m [][]float64) [][]float64 { return eval.AbsMaps(m, a.s.Abs) }

// record computes what the recipe asks of record j of the batch.
func (a *Analyser) record(b *engine.Batch, j int) *record {
	an := a.s.Analysis
	rec := &record{label: b.Labels[j], target: b.Targets[j], pred: b.Preds[j], correct: b.Preds[j] == b.Labels[j], maskLen: engine.MaskLen(b.Masks[j])}
	maps := b.Maps[j]
	S := len(maps)
	labelled := b.Masks[j] != nil
	if sens := an.Sensitivity; sens != nil && labelled && (sens.Records == "all" || rec.correct) {
		clean := a.absMaps(maps)
		mc := stat.Mean(make([]float64, len(clean[0])), clean)
		iouC, okC := eval.IoU(mc, b.Masks[j])
		scratch := make([]float64, 2*S)
		for d := range b.Distorted {
			dist := a.absMaps(b.Distorted[d][j])
			md := stat.Mean(make([]float64, len(dist[0])), dist)
			var r sensResult
			r.corr, r.corrOK = eval.Pearson(mc, md)
			r.stab, r.stabOK = eval.TopLStability(mc, md, rec.maskLen)
			r.w1 = eval.CoordW1(clean, dist, scratch)
			iouD, okD := eval.IoU(md, b.Masks[j])
			r.dIoU, r.iouOK = iouD-iouC, okC && okD
			rec.sens = append(rec.sens, r)
		}
	}
	if c := an.Calibration; c != nil {
		if S == 2*c.Build {
			lo, up := make([]float64, len(maps[0])), make([]float64, len(maps[0]))
			key := b.Split*100_000_000 + b.Records[j]
			for _, beta := range c.Levels {
				cv, tot := eval.SplitCoverage(lo, up, maps, c.Build, beta)
				ref := eval.PartitionReference(lo, up, maps, c.Build, beta, c.Partitions, a.s.Seed, key)
				rec.cal = append(rec.cal, calResult{covered: cv, total: tot, ref: ref})
			}
		} else if S >= 3 {
			cv, tot := eval.LOOMinMaxCoverage(maps)
			rec.cal = []calResult{{covered: cv, total: tot}} // the reference, (S-2)/S, is the table's level
			rec.loo = true
		}
	}
	if g := an.Agreement; g != nil && labelled {
		rec.agree, rec.agreeOK = eval.AgreementGrid(nil, maps, b.Masks[j], g.Etas, g.Deltas)
	}
	if bd := an.Bound; bd != nil {
		rec.cx, rec.term = eval.MeanMapBound(maps, bd.Delta)
	}
	if an.TotalVariance != nil && b.Repeats != nil {
		tot, mod, exp := eval.TotalVariance(nil, nil, nil, b.Repeats[j])
		rec.tv = &tvResult{total: meanOf(tot), model: meanOf(mod), explainer: meanOf(exp)}
	}
	if f := an.Figures; f != nil && ((rec.correct && wantsFigure(f.Qualitative, rec.label, b.ClassNames)) || (!labelled && slices.Contains(f.Qualitative, "all"))) {
		rec.figure = newPanel(b, j, a.absMaps(maps))
		rec.figure.Fs, rec.figure.F0 = a.rates()
	}
	metricScores(b, j, rec)
	rec.chanShare = channelShare(maps, b.Channels)
	rec.randWhy = b.RandomisedWhy
	if b.RandomisedW1 != nil {
		rec.randW1, rec.randOK = b.RandomisedW1[j], true
		var s float64
		for _, m := range maps {
			for _, v := range m {
				s += math.Abs(v)
			}
		}
		rec.meanAbs = s / float64(len(maps)*len(maps[0]))
	}
	if an.Output.Maps {
		rec.maps = toF32(maps)
		for _, sm := range b.Summaries {
			if sm == nil {
				rec.sums = append(rec.sums, nil)
				continue
			}
			rec.sums = append(rec.sums, toF32([][]float64{sm[j]})[0])
		}
	}
	return rec
}

// channelShare is each channel's share of the total |R| of the mean of
// the maps (C rows, channel-major): sum_t |mean_s R_s[c, t]| over the sum
// over every channel; nil for one channel or a total of 0.
func channelShare(maps [][]float64, C int) []float64 {
	if C <= 1 || len(maps) == 0 {
		return nil
	}
	mean := stat.Mean(make([]float64, len(maps[0])), maps)
	share := eval.ChannelMass(nil, eval.Abs(mean, mean), C)
	total := floats.Sum(share)
	if !(total > 0) {
		return nil
	}
	floats.Scale(1/total, share)
	return share
}

// recordOf is record ri of split si under the pair k (nil: none).
func (a *Analyser) recordOf(k pairKey, si, ri int) *record {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pairs[k]
	if p == nil || si < 0 || si >= len(p.recs) || ri < 0 || ri >= len(p.recs[si]) {
		return nil
	}
	return p.recs[si][ri]
}

// ChannelShare is, for record ri of split si under the pair (posterior
// label, replicate, explainer label), each channel's share of its mean
// map's |R| (false: not analysed, or one channel).
func (a *Analyser) ChannelShare(post string, rep int, exp string, si, ri int) ([]float64, bool) {
	r := a.recordOf(pairKey{post, rep, exp}, si, ri)
	if r == nil || r.chanShare == nil {
		return nil, false
	}
	return r.chanShare, true
}

func meanOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func toF32(m [][]float64) [][]float32 {
	out := make([][]float32, len(m))
	for i, r := range m {
		out[i] = make([]float32, len(r))
		for n, v := range r {
			out[i][n] = float32(v)
		}
	}
	return out
}
