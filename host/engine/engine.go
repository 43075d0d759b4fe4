// Package engine computes explanation distributions and scores them: for
// every posterior q it draws theta_1..theta_S, applies every explainer to
// every test record under every draw (the Monte Carlo estimate of the
// push-forward Q_x = (tau_x)#q of the paper's def:1), summarises the S maps
// of each record with every summary, and scores the summaries against the
// ground-truth masks (host/eval).
//
// Work is split into fixed batches of records, handed to a worker pool; a
// batch's results go to fixed slots, and every random stream is keyed by
// (seed, purpose, split, record, draw), so results are the same bytes for
// any number of workers.
package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Step is one plugin of a run as the recipe configures it.
type Step struct {
	ID     string // plugin ID, or the script path for a scripted summary
	Label  string // row label
	Draws  int    // posteriors: S
	Target string // explainers: "true" or "predicted"
	Config sdk.Config
	// Replicate is a posterior's replicate (0-based; see Plan.ReplicateSeeds)
	// in a run with Replicated set: a plan of R replicates has each
	// posterior of the recipe R times, one a replicate.
	Replicate  int
	Replicated bool
	// Tests, if not nil, are the test splits a posterior is explained and
	// scored on in place of Plan.Tests (a replicate's own splits: [replicates]
	// resample_splits).
	Tests []TestSplit
}

// testsOf is the test splits of a posterior step: its own, or the plan's.
func (p *Plan) testsOf(ps Step) []TestSplit {
	if ps.Tests != nil {
		return ps.Tests
	}
	return p.Tests
}

// Name is the step's label, with its replicate in a replicated run: what
// messages, progress and timings call it.
func (s Step) Name() string {
	if !s.Replicated {
		return s.Label
	}
	return fmt.Sprintf("%s (replicate %d)", s.Label, s.Replicate)
}

// TestSplit is one test split with its ground-truth masks.
type TestSplit struct {
	Name string
	Data sdk.Dataset // each input C x T values, channel-major (x[c*T+t])
	// Masks holds one ground-truth mask a record, of the input's C x T
	// values (channel-major); an empty mask is counted, never scored.
	Masks [][]bool
	// Channels is C (0 means 1): the maps and masks of this split are C
	// rows of Data.Len/C samples.
	Channels int
	// ChannelNames, if not nil, names the C channels in the per-channel
	// tables ("A", "B", "C" for the phases); nil: ch0..ch<C-1>.
	ChannelNames []string
	// Unlabelled marks inputs without a class or a mask (windows of a real
	// recording): every record is explained, for its predicted class, and
	// nothing is scored; its records have label -1. Data.Y and Masks are
	// not read. A plan's splits are all labelled or all unlabelled.
	Unlabelled bool
}

// NumChannels is C, the channels of the split's maps and masks (1 when
// Channels is 0).
func (ts TestSplit) NumChannels() int { return max(ts.Channels, 1) }

// ChannelLabels names the split's channels: ChannelNames, or ch0..ch<C-1>.
func (ts TestSplit) ChannelLabels() []string {
	if ts.ChannelNames != nil {
		return ts.ChannelNames
	}
	names := make([]string, ts.NumChannels())
	for c := range names {
		names[c] = fmt.Sprintf("ch%d", c)
	}
	return names
}

// channelsOf is the channels of a plan's test splits, C and their names,
// which must be the same for every split; C = 1 is the one-channel case
// with no per-channel scores.
func channelsOf(tests []TestSplit) (int, []string, error) {
	if len(tests) == 0 {
		return 1, nil, nil
	}
	C, names := tests[0].NumChannels(), tests[0].ChannelLabels()
	for _, ts := range tests {
		if ts.NumChannels() != C || !slices.Equal(ts.ChannelLabels(), names) {
			return 0, nil, fmt.Errorf("test split %s has channels %v, split %s has %v: every test split must have the same channels", ts.Name, ts.ChannelLabels(), tests[0].Name, names)
		}
	}
	if len(names) != C {
		return 0, nil, fmt.Errorf("test split %s: %d channel names %v for %d channels", tests[0].Name, len(names), names, C)
	}
	return C, names, nil
}

// Plan is everything one run computes.
type Plan struct {
	Seed uint64
	// ReplicateSeeds are the seeds of the replicates of a replicated run
	// (recipe.Replicates.Seed): every fit of a posterior step of replicate
	// r gets FitRequest.Seed = ReplicateSeeds[r] and Replicate = r. nil:
	// one replicate, of Seed.
	ReplicateSeeds []uint64
	Workers        int // 0: GOMAXPROCS
	Batch          int // records per plugin call (0: 32)
	Arch           nn.Arch
	Train          nn.TrainConfig
	TrainSet       sdk.Dataset
	ValSet         sdk.Dataset
	Tests          []TestSplit
	Classes        []int // classes reported, in order
	// ClassNames names every class of the data (ClassNames[label]); nil:
	// the one-phase PQD's 16 (host/data's ClassNames). The results and
	// their outputs carry it to the reports.
	ClassNames []string
	Groups     map[string][]int // macro groups ("all", "disc-7")
	Abs        bool             // score |R| (the paper's nonnegative relevance)
	Posteriors []Step
	Explainers []Step
	Summaries  []Step
	// UnitRecords is the records of an explain unit (0: DefaultUnitRecords;
	// rounded up to a multiple of Batch). See Units.
	UnitRecords int
	// Parts is the number of parts of each posterior's fit (FitParts;
	// nil: RunUnits and Merge ask the plugins).
	Parts []int
	// Fingerprint identifies the run: every unit's payload carries it, and
	// a payload with another is refused (a run directory of another
	// recipe). It must cover everything that changes a result.
	Fingerprint string
	// CacheKey returns the cache key of a posterior's artifact; nil
	// disables the cache. It must be a pure function of its arguments and
	// must not depend on the step's Label or Draws: the base of a post-hoc
	// posterior (BaseStep) gets its key from it, and shares it with the
	// recipe's own step of the same plugin and table.
	CacheKey func(p Step, info sdk.Info) (string, error)
	// Sink, if not nil, receives what the run gives beside its Results:
	// each posterior's predictive probabilities and the records of every
	// set and band summary (see Sink).
	Sink Sink
	// Analysis, if not nil, receives every explained batch with all its
	// maps, and says which distortions and explainer repeats to explain
	// beside them (see Analysis).
	Analysis Analysis
}

// Sink is where a run's results go as the merge makes them (host/runner
// writes them to the run directory). Its methods are called from one
// goroutine, in plan order.
type Sink interface {
	// Predicted receives each posterior's predictions: for every record
	// of every split, the predictive mean probabilities and what its
	// draws say of them (Prediction).
	Predicted(ps Step, pred Prediction) error
	// Output receives the per-record results of every set and band
	// summary after each (posterior, explainer) block; the engine then
	// drops the records (Results keeps the rest of the Output), so a run's
	// memory does not grow with them. Without a Sink, Results keeps the
	// records.
	Output(*Output) error
}

// Analysis is the analyses of a run (host/analysis.Analyser): it sees
// every explained batch of every (posterior, explainer) pair with all its
// maps, and what it keeps of a unit's records travels in the unit's
// payload, so that a run in shards gives the same analyses.
type Analysis interface {
	// Distortions are explained beside the clean inputs (Batch.Distorted).
	Distortions() []Distortion
	// Repeats > 1 explains every draw Repeats times with different
	// explainer seeds, when the explainer is stochastic (Batch.Repeats;
	// the law of total variance, prop:totalvar).
	Repeats() int
	// Batch receives one explained batch. It is called from several
	// workers at once, in no fixed order: it must be safe for concurrent
	// use, and keep what it computes by (split, record) so that its
	// results do not depend on the order.
	Batch(*Batch) error
	// Take returns, encoded, what Batch kept of records [b0, b1) of split
	// si under a pair, and forgets it; it goes into the unit's payload
	// (nil: nothing to carry). Put gives it back when the units are
	// merged.
	Take(ps, es Step, si, b0, b1 int) ([]byte, error)
	Put(ps, es Step, si int, data []byte) error
}

// Plugins resolves a step's ID (a plugin ID, or a script's path) to the
// host's side of the plugin (package sdk/driver). host/plugin's Manager
// implements it for plugin IDs; host/runner adds scripts.
type Plugins interface {
	Posterior(ctx context.Context, id string) (sdk.Posterior, error)
	Explainer(ctx context.Context, id string) (driver.Explainer, error)
	Summary(ctx context.Context, id string) (sdk.Summary, error)
}

// Cache stores fitted posteriors.
type Cache interface {
	Get(key string) (sdk.Artifact, bool, error)
	Put(key string, a sdk.Artifact) error
}

// Observer receives progress; all methods may be called from several
// goroutines.
type Observer interface {
	// Stage starts a stage of total units ("fit posterior.ensemble").
	Stage(name string, total int)
	// Advance reports done units of the current stage, with a message.
	Advance(done int, msg string)
	// Note reports something the user should know (a cache hit, a skip).
	Note(msg string)
}

// Record is the score of one record under one (posterior, explainer,
// summary) combination.
type Record struct {
	Split, Index, Label, Target, Pred, MaskLen int
	RMA, IoU                                   float64
	OK                                         bool
	Why                                        eval.Skip
	// Channels is the channel view of a record of a split of C > 1
	// channels with a non-empty mask (eval.ScoreChannels); nil otherwise.
	Channels *eval.Channels
}

// Row is one (posterior, explainer, summary) combination.
type Row struct {
	Posterior string `json:"posterior"` // IDs
	Explainer string `json:"explainer"`
	Summary   string `json:"summary"`
	// Replicate is the posterior step's (Step.Replicate); results.json
	// files a replicated run's rows by replicate instead.
	Replicate int `json:"-"`
	// Label, ExplainerLabel and SummaryLabel are the recipe's labels of the
	// three steps (unique per kind, so they tell rows apart).
	Label           string    `json:"posterior_label"`
	ExplainerLabel  string    `json:"explainer_label"`
	SummaryLabel    string    `json:"summary_label"`
	Draws           int       `json:"draws"`
	Accuracy        eval.Stat `json:"accuracy"`
	AccuracyBySplit []float64 `json:"accuracy_by_split"`
	Agg             eval.Agg  `json:"scores"`
	Records         []Record  `json:"-"`
	// Channels is the channel view of the scores (eval.AggregateChannels)
	// of a run whose test splits have C > 1 channels; nil (and left out of
	// results.json) otherwise.
	Channels *eval.ChannelAgg `json:"channels,omitempty"`

	// Fit is the posterior's fit metadata, its artifact's Meta (a Laplace
	// posterior's scale and delta), keys as the plugin names them.
	Fit map[string]string `json:"fit"`
}

// Output is what a set or band summary gives under one (posterior,
// explainer) pair: its result for every explained record (a disturbance
// record with a non-empty mask), which RMA and IoU do not score.
type Output struct {
	Posterior      string         `json:"posterior"` // IDs
	Explainer      string         `json:"explainer"`
	Summary        string         `json:"summary"`
	Label          string         `json:"posterior_label"`
	ExplainerLabel string         `json:"explainer_label"`
	SummaryLabel   string         `json:"summary_label"`
	Replicate      int            `json:"-"`    // the posterior step's
	ClassNames     []string       `json:"-"`    // the plan's
	Kind           sdk.OutputKind `json:"kind"` // set or band
	Draws          int            `json:"draws"`
	N              int            `json:"length"` // values a map
	Count          int            `json:"records"`
	// File is where the runner wrote the records (relative to the run
	// directory); the engine leaves it empty.
	File    string         `json:"file,omitempty"`
	Records []OutputRecord `json:"-"`
}

// OutputRecord is one record's set (Kind set) or band (Kind band).
type OutputRecord struct {
	Split, Index, Label, Target, Pred, MaskLen int
	Set                                        []bool
	Lower, Upper                               []float64
}

// Results is the outcome of a run. It holds no timings, so that the same
// plan gives the same bytes.
type Results struct {
	Rows    []Row
	Outputs []Output
	Notes   []string
	// ClassNames is the plan's: the names of the labels (nil: the
	// one-phase PQD's).
	ClassNames []string `json:"-"`
}

// Timings are wall times of the stages, kept apart from Results.
type Timings map[string]time.Duration

// Run executes the plan in this process: every unit (RunUnits, keeping
// the payloads in memory), then Merge. Every step's table must have
// passed its plugin's Check already (runner.Check does it, mapping errors
// to recipe lines).
func Run(ctx context.Context, p Plan, res Plugins, cache Cache, obs Observer) (*Results, Timings, error) {
	store := &memStore{}
	tim, _, err := RunUnits(ctx, p, res, cache, store, Shard{N: 1}, obs)
	if err != nil {
		return nil, tim, err
	}
	out, _, err := Merge(ctx, p, res, store)
	return out, tim, err
}

// PredictMean writes into dst[i] the class of the posterior predictive
// mean of input i of x (len(dst) inputs, classes outputs each):
//
//	dst[i] = argmax_c (1/S) sum_s p(c | x_i, theta_s)
//
// ties going to the lower class. A failed call of a draw is the error,
// naming the draw.
func PredictMean(ctx context.Context, dst []int, models []nn.Model, x []float32, classes int) error {
	sum := make([]float64, len(dst)*classes)
	if err := sumProbs(ctx, sum, models, x); err != nil {
		return err
	}
	argmaxRows(dst, sum, classes)
	return nil
}

// sumProbs writes into dst the sum over the draws of p(c | x_i, theta_s).
func sumProbs(ctx context.Context, dst []float64, models []nn.Model, x []float32) error {
	clear(dst)
	pr := make([]float32, len(dst))
	for s, m := range models {
		if err := m.Probs(ctx, pr, x); err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		for j, v := range pr {
			dst[j] += float64(v)
		}
	}
	return nil
}

// Prediction is a posterior's predictions on every split (index split,
// then record; Probs row major, Arch.Classes() a record): with p_s the
// class probabilities of draw s of S and p = (1/S) sum_s p_s their mean,
//
//	Probs[i]       = p                             (the predictive mean)
//	MeanEntropy[i] = (1/S) sum_s H(p_s),  H(q) = -sum_c q_c ln q_c   (nats)
//	Agree[i]       = |{s : argmax p_s = argmax p}| / S
//
// so that H(p) - MeanEntropy is the mutual information between the
// prediction and the draw (the epistemic part of the predictive
// entropy), and Agree the share of draws that vote for the predicted
// class (ties: the lower class, as everywhere).
type Prediction struct {
	Probs, MeanEntropy, Agree [][]float64
}

// Entropy is H(q) = -sum_c q_c ln q_c in nats (0 ln 0 = 0).
func Entropy(q []float64) float64 {
	var h float64
	for _, v := range q {
		if v > 0 {
			h -= v * math.Log(v)
		}
	}
	return h
}

// sumDrawProbs is sumProbs over the draws as the host opened them: a
// served draw's probabilities are its model service's, and a call that
// fails is the error, naming the draw. If ent is not nil it gets each
// record's sum over the draws of H(p_s), and votes (classes a record) the
// number of draws whose argmax is each class.
func sumDrawProbs(ctx context.Context, dst []float64, models []*driver.DrawModel, x []float32, ent []float64, votes []int32) error {
	clear(dst)
	clear(ent)
	clear(votes)
	pr := make([]float32, len(dst))
	var k int
	if ent != nil {
		k = len(dst) / len(ent)
	}
	row := make([]float64, k)
	return eachDrawProbs(ctx, models, x, pr, func(int) {
		for j, v := range pr {
			dst[j] += float64(v)
		}
		for i := range ent {
			best := 0
			for c := range k {
				row[c] = float64(pr[i*k+c])
				if row[c] > row[best] {
					best = c
				}
			}
			ent[i] += Entropy(row)
			votes[i*k+best]++
		}
	})
}

// eachDrawProbs writes each draw's class probabilities of x into pr and
// calls f(s) after draw s, in draw order; a failed call is the error,
// naming the draw.
func eachDrawProbs(ctx context.Context, models []*driver.DrawModel, x, pr []float32, f func(s int)) error {
	for s, m := range models {
		err := m.Call(ctx, func(nm nn.Model) error { return nm.Probs(ctx, pr, x) })
		if err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		f(s)
	}
	return nil
}

func scale(dst []float64, a float64) {
	for j := range dst {
		dst[j] *= a
	}
}

// argmaxRows writes into dst[i] the index of the largest value of row i
// of the row-major m (classes columns), ties going to the lower index.
func argmaxRows(dst []int, m []float64, classes int) {
	for i := range dst {
		row := m[i*classes : (i+1)*classes]
		best := 0
		for c, v := range row {
			if v > row[best] {
				best = c
			}
		}
		dst[i] = best
	}
}

// block is the work of one (posterior, explainer) pair: explain every
// scorable record under every draw, summarise, score.
type block struct {
	p      *Plan
	ps, es Step
	tests  []TestSplit // the posterior's test splits (Plan.testsOf)
	ex     driver.Explainer
	step   Explaining // the explainer with the S draws loaded: the explain step
	sums   []sdk.Summary
	active []bool              // summaries whose maps are scored
	output []bool              // set and band summaries, written per record
	preds  [][]int             // predicted class per split and record
	ment   [][]float64         // the draws' mean entropy per split and record (Prediction)
	agree  [][]float64         // the share of draws voting for the predicted class
	probs  [][]float64         // predictive mean per split, row major
	recs   [][][]Record        // summary -> split -> record
	outs   [][][]*OutputRecord // summary -> split -> record (nil: not explained)
	draws  int                 // S
	done   *atomic.Int64       // records explained, for the progress
	// repeats and dists are the Analysis's (1 and none without one).
	repeats int
	dists   []Distortion
}

// activate marks the summaries whose maps RMA and IoU score, and says
// why the others are left out.
func (b *block) activate(S int) []string {
	var notes []string
	b.active = make([]bool, len(b.sums))
	b.output = make([]bool, len(b.sums))
	for i, sm := range b.sums {
		info := sm.Info()
		if S < info.MinDraws {
			notes = append(notes, fmt.Sprintf("%s with %s: %d draw(s), %s needs at least %d: skipped", b.ps.Name(), b.es.Label, S, info.ID, info.MinDraws))
			continue
		}
		if info.Output != sdk.OutputMap {
			b.output[i] = true
			continue
		}
		b.active[i] = true
	}
	return notes
}

// outputs gathers the records of every set and band summary, in the
// order of the recipe's summaries, splits and records.
func (b *block) outputs() []Output {
	var out []Output
	for i, sm := range b.sums {
		if !b.output[i] {
			continue
		}
		info := sm.Info()
		o := Output{ClassNames: b.p.ClassNames, Posterior: b.ps.ID, Explainer: b.es.ID, Summary: info.ID, Label: b.ps.Label, Replicate: b.ps.Replicate, ExplainerLabel: b.es.Label,
			SummaryLabel: b.p.Summaries[i].Label, Kind: info.Output, Draws: b.draws, Records: []OutputRecord{}}
		for si := range b.tests {
			for _, rec := range b.outs[i][si] {
				if rec != nil {
					o.Records = append(o.Records, *rec)
				}
			}
		}
		o.Count = len(o.Records)
		if o.Count > 0 {
			o.N = max(len(o.Records[0].Set), len(o.Records[0].Lower))
		}
		out = append(out, o)
	}
	return out
}

// pathReporter is a loaded draw whose model says how it computed the
// perturbed copies of occlusion and LIME (a graph network's, driver's
// PerturbedPath).
type pathReporter interface {
	PerturbedPath() (graph.Path, bool)
}

// notePaths notes how the block's draws computed perturbed copies, if
// they say and computed any.
func (b *block) notePaths(obs Observer) {
	var p graph.Path
	for _, m := range b.step.Models {
		if r, ok := m.(pathReporter); ok {
			if q, ok := r.PerturbedPath(); ok {
				p = p.Add(q)
			}
		}
	}
	if p.Copies > 0 {
		obs.Note(fmt.Sprintf("%s / %s on a graph network: %v", b.ps.Name(), b.es.Label, p))
	}
}

// close releases every loaded draw.
func (b *block) close() error {
	var errs []error
	for _, m := range b.step.Models {
		errs = append(errs, m.Close())
	}
	b.step.Models = nil
	return errors.Join(errs...)
}

// explainBatch explains the records b0..b1-1 of split si that have a
// non-empty mask (idx; every record of an unlabelled split) under every
// draw: maps[j][s] is the map of record idx[j] under draw s. The draws of
// a batch run one after the other on one worker: an explainer that caches
// per input what draws share (occlusion's trunk cache under MC dropout)
// then needs one batch of entries a worker.
func (b *block) explainBatch(ctx context.Context, si, b0, b1 int) (idx []int, maps [][][]float64, err error) {
	ts := b.tests[si]
	d := ts.Data
	for r := b0; r < b1; r++ {
		if ts.Unlabelled || MaskLen(ts.Masks[r]) > 0 {
			idx = append(idx, r)
		}
	}
	if len(idx) == 0 {
		return nil, nil, nil
	}
	x := make([]float32, 0, len(idx)*d.Len)
	targets := make([]int, len(idx))
	for j, r := range idx {
		x = append(x, d.Row(r)...)
		targets[j] = b.target(si, r)
	}
	maps = newMaps(len(idx), b.draws)
	if err := b.step.Explain(ctx, maps, Inputs{Split: ts.Name, Records: idx, X: x, Targets: targets}); err != nil {
		return nil, nil, err
	}
	return idx, maps, nil
}

// newMaps is room for the maps of n inputs under S draws each.
func newMaps(n, S int) [][][]float64 {
	maps := make([][][]float64, n)
	for j := range maps {
		maps[j] = make([][]float64, S)
	}
	return maps
}

// target is the class explained for record r of split si: the predicted
// class for an unlabelled split.
func (b *block) target(si, r int) int {
	if b.es.Target == "predicted" || b.tests[si].Unlabelled {
		return b.preds[si][r]
	}
	return b.tests[si].Data.Y[r]
}

// label is the class of record r of split si, -1 for an unlabelled split.
func (b *block) label(si, r int) int {
	if b.tests[si].Unlabelled {
		return -1
	}
	return b.tests[si].Data.Y[r]
}

// maskLen is the mask length of record r of split si, 0 when unlabelled.
func (b *block) maskLen(si, r int) int {
	if b.tests[si].Unlabelled {
		return 0
	}
	return MaskLen(b.tests[si].Masks[r])
}

// scoreBatch is the score step: every active summary of the maps of the
// explained records idx, scored against their masks; records b0..b1-1
// without a mask are counted as such.
func (b *block) scoreBatch(ctx context.Context, si, b0, b1 int, idx []int, maps [][][]float64) ([][][]float64, error) {
	ts := b.tests[si]
	sumMaps := make([][][]float64, len(b.sums))
	for i, sm := range b.sums {
		if !b.active[i] && !b.output[i] {
			continue
		}
		var results []sdk.Result
		if len(idx) > 0 {
			var err error
			if results, err = sm.Summarise(ctx, maps, b.p.Summaries[i].Config); err != nil {
				return nil, fmt.Errorf("%s on split %s records %d..%d: %w", sm.Info().ID, ts.Name, b0, b1-1, err)
			}
		}
		if b.output[i] {
			for j, r := range idx {
				b.outs[i][si][r] = &OutputRecord{Split: si, Index: r, Label: b.label(si, r), Target: b.target(si, r), Pred: b.preds[si][r],
					MaskLen: b.maskLen(si, r), Set: results[j].Set, Lower: results[j].Lower, Upper: results[j].Upper}
			}
			continue
		}
		if b.p.Analysis != nil && b.active[i] {
			sumMaps[i] = make([][]float64, len(results))
			for j := range results {
				sumMaps[i][j] = results[j].Map
			}
		}
		if ts.Unlabelled {
			continue // nothing to score
		}
		j := 0
		for r := b0; r < b1; r++ {
			rec := Record{Split: si, Index: r, Label: ts.Data.Y[r], Target: b.target(si, r), Pred: b.preds[si][r], MaskLen: MaskLen(ts.Masks[r])}
			if rec.MaskLen == 0 {
				rec.Why = eval.EmptyMask
			} else {
				var err error
				rec.RMA, rec.IoU, rec.Why, rec.Channels, err = score(results[j].Map, ts.Masks[r], b.p.Abs, ts.NumChannels())
				if err != nil {
					return nil, fmt.Errorf("%s on split %s record %d: %w", sm.Info().ID, ts.Name, r, err)
				}
				rec.OK = rec.Why == eval.Scored
				j++
			}
			b.recs[i][si][r] = rec
		}
	}
	return sumMaps, nil
}

// rows aggregates the scores of every active summary into its row (none
// for unlabelled splits).
func (b *block) rows() ([]Row, []string, error) {
	p := b.p
	if len(b.tests) > 0 && b.tests[0].Unlabelled {
		return nil, []string{fmt.Sprintf("%s / %s: unlabelled inputs: explained for their predicted class, not scored", b.ps.Name(), b.es.Label)}, nil
	}
	reported := map[int]bool{}
	for _, c := range p.Classes {
		reported[c] = true
	}
	var rows []Row
	var notes []string
	for i, sm := range b.sums {
		if !b.active[i] {
			continue
		}
		var scores []eval.Score
		var all []Record
		outside := 0
		for si := range b.tests {
			for _, rec := range b.recs[i][si] {
				all = append(all, rec)
				if !reported[rec.Label] {
					outside++ // the normal class: counted in records.csv, never scored
					continue
				}
				scores = append(scores, eval.Score{Split: si, Class: rec.Label, RMA: rec.RMA, IoU: rec.IoU, OK: rec.OK, Why: rec.Why})
			}
		}
		agg, err := eval.Aggregate(scores, p.Classes, p.Groups, len(b.tests))
		if err != nil {
			return nil, nil, fmt.Errorf("aggregate %s / %s / %s: %w", b.ps.Name(), b.es.Label, sm.Info().ID, err)
		}
		chAgg, err := b.channelAgg(all, reported)
		if err != nil {
			return nil, nil, fmt.Errorf("aggregate %s / %s / %s by channel: %w", b.ps.Name(), b.es.Label, sm.Info().ID, err)
		}
		if i == firstActive(b.active) {
			notes = append(notes, fmt.Sprintf("%s / %s: %d records of unscored classes (normal) left out; %d disturbance records with an empty mask, %d with zero relevance mass, %d non-finite: counted, not scored",
				b.ps.Name(), b.es.Label, outside, agg.Counts.EmptyMask, agg.Counts.ZeroMass, agg.Counts.NonFinite))
		}
		rows = append(rows, Row{Posterior: b.ps.ID, Explainer: b.es.ID, Summary: sm.Info().ID, Label: b.ps.Label, Replicate: b.ps.Replicate, ExplainerLabel: b.es.Label, SummaryLabel: p.Summaries[i].Label,
			Draws: b.draws, Agg: agg, Records: all, Channels: chAgg})
	}
	return rows, notes, nil
}

// channelAgg aggregates the channel view of the records of the reported
// classes; nil when the splits have one channel.
func (b *block) channelAgg(recs []Record, reported map[int]bool) (*eval.ChannelAgg, error) {
	C, names, err := channelsOf(b.tests)
	if err != nil || C == 1 {
		return nil, err
	}
	var crs []eval.ChannelRecord
	for _, rec := range recs {
		if rec.Channels != nil && reported[rec.Label] {
			crs = append(crs, eval.ChannelRecord{Split: rec.Split, Class: rec.Label, Ch: *rec.Channels})
		}
	}
	a, err := eval.AggregateChannels(crs, names, b.p.Classes, b.p.Groups, len(b.tests))
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// score takes RMA and IoU of a map (of |R| when abs) and, for C > 1
// channels, its channel view (eval.ScoreChannels, of the same |R|).
func score(m []float64, mask []bool, abs bool, C int) (rma, iou float64, why eval.Skip, ch *eval.Channels, err error) {
	if len(m) != len(mask) {
		return 0, 0, 0, nil, fmt.Errorf("a map of %d values for a mask of %d", len(m), len(mask))
	}
	if abs {
		m = eval.Abs(make([]float64, len(m)), m)
	} else {
		for n, v := range m {
			if v < 0 {
				return 0, 0, 0, nil, fmt.Errorf("map value %d is %g: a signed map needs evaluate.abs = true", n, v)
			}
		}
	}
	rma, iou, why = eval.Localise(m, mask)
	if C > 1 {
		if len(m)%C != 0 {
			return 0, 0, 0, nil, fmt.Errorf("a map of %d values is not %d channels of equal length", len(m), C)
		}
		c := eval.ScoreChannels(nil, m, mask, C)
		ch = &c
	}
	return rma, iou, why, ch, nil
}

func firstActive(a []bool) int {
	for i, v := range a {
		if v {
			return i
		}
	}
	return -1
}

// MaskLen is the number of true values of a mask, |I(x)|.
func MaskLen(m []bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// Parallel runs fn(ctx, 0..n-1) on up to workers goroutines, tasks taken
// in order; the first error cancels the ctx the others get, stops them and
// is returned (a panic becomes an error, see protect).
func Parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := protect(func() error { return fn(ctx, i) }); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// protect runs fn and turns a panic into an error, so that a bug on a
// worker goroutine fails the run cleanly (plugins are killed, results
// written so far are kept) instead of crashing the host.
func protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error (please report): %v", r)
		}
	}()
	return fn()
}

// NopObserver discards progress.
type NopObserver struct{}

func (NopObserver) Stage(string, int)   {}
func (NopObserver) Advance(int, string) {}
func (NopObserver) Note(string)         {}
