package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/metric"
	"github.com/uaxai/uaxai/sdk/nn"
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
	// HeldOut, if not empty, is labelled records that are only predicted:
	// each posterior's predictive mean on them reaches the Sink
	// (Prediction.HeldOut), for the model's quality beside the answers on
	// an unlabelled test split (a recording's windows).
	HeldOut sdk.Dataset
	Classes []int // classes reported, in order
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
	// Metrics, with an Analysis, score every explained batch's maps: each
	// draw's and each map summary's (the metric step, metrics.go), into
	// Batch.DrawScores and Batch.SummaryScores.
	Metrics []metric.Metric
	// RandomiseDraws, with an Analysis, explains every batch again under
	// every draw re-initialised in every layer, into Batch.RandomisedW1.
	RandomiseDraws bool
	// Stored, if not nil, gives the maps instead of the explainer (uaxai
	// evaluate RUN_DIR: a finished run's [output] maps scored again); the
	// explainer is still loaded, for the metrics that explain perturbed
	// inputs.
	Stored StoredMaps
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

// StoredMaps are a run's maps as [output] maps stored them (float32).
type StoredMaps interface {
	// Maps writes into dst[j][s] the map of record records[j] of split si
	// under draw s of the pair (ps, es); an error names what is missing.
	Maps(ps, es Step, si int, records []int, dst [][][]float64) error
	// Summary returns map summary i's maps of the records.
	Summary(ps, es Step, i, si int, records []int) ([][]float64, error)
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

// NopObserver discards progress.
type NopObserver struct{}

func (NopObserver) Stage(string, int)   {}
func (NopObserver) Advance(int, string) {}
func (NopObserver) Note(string)         {}
