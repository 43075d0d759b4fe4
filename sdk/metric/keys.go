package metric

import (
	"fmt"
	"slices"

	"github.com/uaxai/uaxai/sdk"
)

// keys are the settings many metrics share (Quantus's names).
type keys struct {
	prep
	step     int    // features_in_step
	baseline string // perturb_baseline
	softmax  bool
}

// keySpec says which shared keys a metric takes, with its defaults.
type keySpec struct {
	normalise, abs bool
	step           int    // features_in_step's default; 0: not a key
	baseline       string // perturb_baseline's default; "": not a key
	uniform        bool   // perturb_baseline may also be "uniform"
	softmax        *bool  // softmax's default; nil: not a key
}

var (
	onProbs  = func() *bool { b := true; return &b }()
	onLogits = func() *bool { b := false; return &b }()
)

// params lists the metric's keys: extra, then the shared ones it takes.
func (s keySpec) params(extra ...Param) []Param {
	ps := slices.Clone(extra)
	if s.step > 0 {
		ps = append(ps, Param{Name: "features_in_step", Default: s.step, Doc: "samples a step or group; must divide C*T"})
	}
	if s.baseline != "" {
		doc := fmt.Sprintf("what a removed sample becomes: %v", baselines)
		if s.uniform {
			doc = fmt.Sprintf(`"uniform" (a group takes one value U(0, 1) a change) or one of %v`, baselines)
		}
		ps = append(ps, Param{Name: "perturb_baseline", Default: s.baseline, Doc: doc})
	}
	if s.softmax != nil {
		ps = append(ps, Param{Name: "softmax", Default: *s.softmax, Doc: "score the probability p_y (true) or the logit f_y (false: the model must give its logits)"})
	}
	return append(ps, prepParamList(s.normalise, s.abs)...)
}

// read reads the shared keys the metric takes from cfg.
func (s keySpec) read(cfg sdk.Config) (keys, error) {
	var k keys
	var err error
	if k.prep, err = prepParams(cfg, s.normalise, s.abs); err != nil {
		return k, err
	}
	if s.step > 0 {
		if k.step, err = cfg.IntRange("features_in_step", s.step, 1, 1<<24); err != nil {
			return k, err
		}
	}
	if s.baseline != "" {
		if k.baseline, err = cfg.String("perturb_baseline", s.baseline); err != nil {
			return k, err
		}
		if !(s.uniform && k.baseline == "uniform") && !slices.Contains(baselines, k.baseline) {
			also := ""
			if s.uniform {
				also = ` or "uniform"`
			}
			return k, fmt.Errorf("perturb_baseline = %s: want one of %v%s", sdk.Quote(k.baseline), baselines, also)
		}
	}
	if s.softmax != nil {
		if k.softmax, err = cfg.Bool("softmax", *s.softmax); err != nil {
			return k, err
		}
	}
	return k, nil
}

// start checks in for the metric info and, where the metric takes
// features_in_step, that it divides a record; it returns the
// pre-processed maps and, for a metric that calls the model, the queue of
// its forward passes (logits unless softmax).
func (k keys) start(info Info, in *Input) (a []float64, fw *forwards, err error) {
	if err := in.Check(info); err != nil {
		return nil, nil, err
	}
	if n := in.Len(); k.step > 0 && n%k.step != 0 {
		return nil, nil, fmt.Errorf("%s: features_in_step = %d does not divide a record's %d x %d = %d samples", info.ID, k.step, in.C, in.T, n)
	}
	if info.Needs.Model {
		if fw, err = newOutputs(in.Model, k.softmax); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", info.ID, err)
		}
	}
	return k.maps(in), fw, nil
}

// baselineOf writes record i's baseline signal to dst, the error naming
// the metric.
func (k keys) baselineOf(info Info, dst []float32, in *Input, i int) error {
	if err := baselineSignal(dst, in, i, k.baseline); err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
	}
	return nil
}
