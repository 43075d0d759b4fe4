package metric

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Category is the kind of question a metric answers (Quantus's grouping).
type Category string

// The categories.
const (
	Faithfulness  Category = "faithfulness"
	Randomisation Category = "randomisation"
	Robustness    Category = "robustness"
	Complexity    Category = "complexity"
	Localisation  Category = "localisation"
	Axiomatic     Category = "axiomatic"
)

// Needs lists what a metric reads beyond the maps.
type Needs struct {
	Model   bool // forward passes of Input.Model
	Mask    bool // Input.Masks (localisation)
	Explain bool // Input.Explain: the maps of other inputs (robustness)
	// Params: the model must give its parameters (nn.GraphModel's
	// Params), to re-initialise its layers (MPRT).
	Params bool
}

// ExplainFunc writes to dst the maps of the B = len(targets) inputs x (B
// records of the Input's shape) for the classes targets under model m,
// as the explainer that made the Input's maps would: the robustness and
// randomisation metrics ask it for the maps of perturbed inputs and
// models, ExplainBatch inputs at most a call.
type ExplainFunc func(ctx context.Context, m nn.Model, x []float32, targets []int, dst []float64) error

// ExplainBatch is the most inputs a metric hands an ExplainFunc a call.
const ExplainBatch = 64

// Info describes a metric.
type Info struct {
	// ID is "metric." and Quantus's class name in snake case:
	// metric.region_perturbation for RegionPerturbation.
	ID string
	// Quantus is the Quantus 0.6.0 class the metric follows.
	Quantus  string
	Category Category
	Needs    Needs
	// Curve: a score is a curve (Score.Curve) and its area (Score.Value).
	Curve bool
	// Higher: a larger Value is a better explanation (for the tables'
	// reading; false where smaller is better, or where neither is).
	Higher bool
	// Summary is one line on what the score measures.
	Summary string
	// Params are the accepted configuration keys with their defaults.
	Params []Param
}

// Param is one configuration key of a metric, named as Quantus's
// constructor argument.
type Param struct {
	Name    string
	Default any
	Doc     string
}

// Score is one record's score.
type Score struct {
	// Value is the score; for a curve metric, the curve's area by the
	// trapezoidal rule with unit spacing (Quantus's get_auc_score).
	// When Undefined is not empty, Value is NaN.
	Value float64
	// Curve is the score's curve, nil for a scalar metric.
	Curve []float64
	// Undefined, when not empty, says why the record has no score (a
	// correlation of a constant, an empty mask); aggregates count such
	// records apart instead of passing NaN on.
	Undefined string
}

// undefined returns a record's Score without a value, for the reason why.
func undefined(why string, curve []float64) Score {
	return Score{Value: math.NaN(), Curve: curve, Undefined: why}
}

// Input is a batch of records to score: N records of C channels of T
// samples, each with the map that explains class Targets[i].
type Input struct {
	// Model computes the class probabilities (nil for a metric that does
	// not call the model).
	Model nn.Model
	// N, C, T: the records' count and shape.
	N, C, T int
	// X holds the inputs, N*C*T values, record-major, channel-major.
	X []float32
	// Maps holds the explanations, as X.
	Maps []float64
	// Targets[i] is the class record i's map explains.
	Targets []int
	// Masks, nil when there is no ground truth, holds the relevant
	// samples of each record, as X.
	Masks []bool
	// Keys[i] seeds every random draw a metric makes for record i, so a
	// record's score does not depend on the batch, the workers or the
	// shard it was computed in. nil: the records' indices.
	Keys []uint64
	// Fundamental, nil when not known, holds each record's fitted
	// fundamental, as X (the "fundamental" perturbation baseline).
	Fundamental []float32
	// TrainMean, nil when not known, is the training data's mean input,
	// C*T values (the "train_mean" baseline).
	TrainMean []float32
	// Explain, nil when not known, re-explains other inputs.
	Explain ExplainFunc
	// Workers is the number of goroutines a metric may run its model's
	// perturbed copies on (0 or 1: one). The scores do not depend on it.
	Workers int
}

// Len is C*T, the length of one record.
func (in *Input) Len() int { return in.C * in.T }

// Check reports the first fault of in for a metric that needs what info
// says: a length that does not match N, C, T, a value that is not
// finite, a target out of range, no model or no mask where one is needed.
func (in *Input) Check(info Info) error {
	if in.N < 0 || in.C <= 0 || in.T <= 0 {
		return fmt.Errorf("%s: %d records of %d x %d: want N >= 0 records of C >= 1 channels of T >= 1 samples", info.ID, in.N, in.C, in.T)
	}
	n := in.N * in.Len()
	if len(in.X) != n || len(in.Maps) != n || len(in.Targets) != in.N {
		return fmt.Errorf("%s: %d records of %d x %d need %d input values, %d map values and %d targets; have %d, %d and %d",
			info.ID, in.N, in.C, in.T, n, n, in.N, len(in.X), len(in.Maps), len(in.Targets))
	}
	if in.Keys != nil && len(in.Keys) != in.N {
		return fmt.Errorf("%s: %d keys for %d records", info.ID, len(in.Keys), in.N)
	}
	if in.Fundamental != nil && len(in.Fundamental) != n {
		return fmt.Errorf("%s: %d fundamental values for %d records of %d x %d (want %d)", info.ID, len(in.Fundamental), in.N, in.C, in.T, n)
	}
	if in.TrainMean != nil && len(in.TrainMean) != in.Len() {
		return fmt.Errorf("%s: a training mean of %d values for records of %d x %d (want %d)", info.ID, len(in.TrainMean), in.C, in.T, in.Len())
	}
	for i := range in.N {
		for j, v := range in.X[i*in.Len() : (i+1)*in.Len()] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%s: record %d: input sample %d (channel %d, step %d) is %v: want a finite value", info.ID, i, j, j/in.T, j%in.T, v)
			}
		}
		for j, v := range in.Maps[i*in.Len() : (i+1)*in.Len()] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: record %d: map value %d (channel %d, step %d) is %v: want a finite value", info.ID, i, j, j/in.T, j%in.T, v)
			}
		}
	}
	if info.Needs.Model {
		if in.Model == nil {
			return fmt.Errorf("%s calls the model: no model given", info.ID)
		}
		if in.Model.InputLen() != in.Len() {
			return fmt.Errorf("%s: the model takes inputs of %d values, the records have %d x %d = %d", info.ID, in.Model.InputLen(), in.C, in.T, in.Len())
		}
		for i, y := range in.Targets {
			if y < 0 || y >= in.Model.Classes() {
				return fmt.Errorf("%s: record %d: target %d is not a class of the model (0..%d)", info.ID, i, y, in.Model.Classes()-1)
			}
		}
	}
	if info.Needs.Explain && in.Explain == nil {
		return fmt.Errorf("%s explains perturbed inputs again: no explainer given", info.ID)
	}
	if info.Needs.Mask {
		if in.Masks == nil {
			return fmt.Errorf("%s scores against a ground-truth mask: the records have none", info.ID)
		}
		if len(in.Masks) != n {
			return fmt.Errorf("%s: %d mask values for %d records of %d x %d (want %d)", info.ID, len(in.Masks), in.N, in.C, in.T, n)
		}
	}
	return nil
}

// record returns record i's input, map and mask (nil when none).
func (in *Input) record(i int) (x []float32, a []float64, mask []bool) {
	n := in.Len()
	x, a = in.X[i*n:(i+1)*n], in.Maps[i*n:(i+1)*n]
	if in.Masks != nil {
		mask = in.Masks[i*n : (i+1)*n]
	}
	return x, a, mask
}

// key is record i's random key.
func (in *Input) key(i int) uint64 {
	if in.Keys == nil {
		return uint64(i)
	}
	return in.Keys[i]
}

// Metric scores explanations.
type Metric interface {
	Info() Info
	// Score writes the score of each record of in to dst (len in.N).
	// It checks in (Input.Check) and returns an error for bad input
	// or a failed model call; a record whose score does not exist gets
	// a Score with Undefined set.
	Score(ctx context.Context, in *Input, dst []Score) error
}

// Entry is a metric in a Registry: its Info and its constructor from a
// configuration (the keys of Info.Params).
type Entry struct {
	Info Info
	New  func(cfg sdk.Config) (Metric, error)
}

// Registry holds metrics by ID. It is a value: Builtin returns a new one
// holding the built-in metrics, to which a program may Add its own.
type Registry struct {
	entries map[string]Entry
}

var idPattern = regexp.MustCompile(`^metric\.[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Add adds e, checking its Info: an ID "metric." + snake case, not yet
// taken, a Quantus class name (or "" for a metric of uaxai's own), a
// category, a constructor.
func (r *Registry) Add(e Entry) error {
	if !idPattern.MatchString(e.Info.ID) {
		return fmt.Errorf("metric ID %s: want \"metric.\" and a snake-case name (metric.region_perturbation)", sdk.Quote(e.Info.ID))
	}
	if r.entries == nil {
		r.entries = map[string]Entry{}
	}
	if _, ok := r.entries[e.Info.ID]; ok {
		return fmt.Errorf("metric %s is registered twice", e.Info.ID)
	}
	switch e.Info.Category {
	case Faithfulness, Randomisation, Robustness, Complexity, Localisation, Axiomatic:
	default:
		return fmt.Errorf("metric %s: category %s (want faithfulness, randomisation, robustness, complexity, localisation or axiomatic)", e.Info.ID, sdk.Quote(string(e.Info.Category)))
	}
	if e.New == nil {
		return fmt.Errorf("metric %s: no constructor", e.Info.ID)
	}
	r.entries[e.Info.ID] = e
	return nil
}

// FullID is a metric's ID from its name as a user writes it:
// "pixel_flipping" or "metric.pixel_flipping" both give the latter.
func FullID(name string) string {
	if strings.HasPrefix(name, "metric.") {
		return name
	}
	return "metric." + name
}

// IDs lists the registered metrics' IDs in order.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.entries))
	for id := range r.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Lookup returns the entry of id.
func (r *Registry) Lookup(id string) (Entry, bool) {
	e, ok := r.entries[id]
	return e, ok
}

// New returns the metric id configured by cfg (nil: the defaults). An
// unknown ID is an error that lists the known ones; a bad key or value
// one that names the key and what it accepts.
func (r *Registry) New(id string, cfg sdk.Config) (Metric, error) {
	e, ok := r.entries[id]
	if !ok {
		return nil, fmt.Errorf("unknown metric %s (known: %s)", sdk.Quote(id), strings.Join(r.IDs(), ", "))
	}
	if cfg == nil {
		cfg = sdk.Config{}
	}
	names := make([]string, len(e.Info.Params))
	for i, p := range e.Info.Params {
		names[i] = p.Name
	}
	if err := cfg.Only(names...); err != nil {
		return nil, fmt.Errorf("metric %s: %w", id, err)
	}
	m, err := e.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("metric %s: %w", id, err)
	}
	return m, nil
}
