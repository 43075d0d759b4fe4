package metric

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Normalisation modes of the normalise key.
const (
	NormaliseNone   = "none"   // the maps as given
	NormaliseRecord = "record" // a / max |a| over the record (default)
	NormaliseBatch  = "batch"  // a / max |a| over the whole batch (Quantus)
)

// normaliseParam reads the normalise key: true (NormaliseRecord), false
// (NormaliseNone), or one of the three mode names.
func normaliseParam(cfg sdk.Config, def bool) (string, error) {
	v, ok := cfg["normalise"]
	if !ok {
		if def {
			return NormaliseRecord, nil
		}
		return NormaliseNone, nil
	}
	switch v := v.(type) {
	case bool:
		if v {
			return NormaliseRecord, nil
		}
		return NormaliseNone, nil
	case string:
		switch v {
		case NormaliseNone, NormaliseRecord, NormaliseBatch:
			return v, nil
		}
	}
	return "", fmt.Errorf("normalise = %s: want true (each record by its max |a|), false, %q, %q (by the batch's max |a|, as Quantus does) or %q",
		sdk.Quote(v), NormaliseRecord, NormaliseBatch, NormaliseNone)
}

// prep is the pre-processing of the maps a metric scores (Quantus's
// normalise and abs).
type prep struct {
	normalise string
	abs       bool
}

// prepParams reads normalise and abs with the metric's defaults.
func prepParams(cfg sdk.Config, normalise, abs bool) (prep, error) {
	var p prep
	var err error
	if p.normalise, err = normaliseParam(cfg, normalise); err != nil {
		return p, err
	}
	if p.abs, err = cfg.Bool("abs", abs); err != nil {
		return p, err
	}
	return p, nil
}

// prepParamList are the Params entries of normalise and abs.
func prepParamList(normalise, abs bool) []Param {
	return []Param{
		{Name: "normalise", Default: normalise, Doc: `divide each map by its max |a| (true, "record"), by the batch's ("batch": Quantus), or not (false, "none")`},
		{Name: "abs", Default: abs, Doc: "score |a| instead of a"},
	}
}

// maps returns in's maps pre-processed: dst[i] = a_i / s_i, then |.| if
// abs, where s_i = max_j |a_i[j]| (record) or the max over all records
// (batch); a map whose s is 0 is left as it is.
func (p prep) maps(in *Input) []float64 {
	dst := slices.Clone(in.Maps)
	n := in.Len()
	switch p.normalise {
	case NormaliseRecord:
		for i := range in.N {
			scale(dst[i*n:(i+1)*n], maxAbs(dst[i*n:(i+1)*n]))
		}
	case NormaliseBatch:
		scale(dst, maxAbs(dst))
	}
	if p.abs {
		for j, v := range dst {
			dst[j] = math.Abs(v)
		}
	}
	return dst
}

func maxAbs(a []float64) float64 {
	var m float64
	for _, v := range a {
		m = max(m, math.Abs(v))
	}
	return m
}

func scale(a []float64, s float64) {
	if s == 0 {
		return
	}
	for j := range a {
		a[j] /= s
	}
}

// orderDesc writes to dst the indices of a from the largest value down,
// ties in index order (the most relevant first: MoRF).
func orderDesc(dst []int, a []float64) {
	for j := range dst {
		dst[j] = j
	}
	slices.SortStableFunc(dst, func(i, j int) int { return cmp.Compare(a[j], a[i]) })
}

// orderAsc writes to dst the indices of a from the smallest value up, ties
// in index order.
func orderAsc(dst []int, a []float64) {
	for j := range dst {
		dst[j] = j
	}
	slices.SortStableFunc(dst, func(i, j int) int { return cmp.Compare(a[i], a[j]) })
}

// Baselines of the perturb_baseline key: what a removed sample becomes.
const (
	BaselineBlack       = "black"       // the record's minimum over all channels and samples (Quantus)
	BaselineWhite       = "white"       // the record's maximum (Quantus)
	BaselineMean        = "mean"        // the record's mean (Quantus)
	BaselineZero        = "zero"        // 0
	BaselineFundamental = "fundamental" // the record's fitted fundamental, sample by sample
	BaselineTrainMean   = "train_mean"  // the training data's mean input, sample by sample
)

var baselines = []string{BaselineBlack, BaselineWhite, BaselineMean, BaselineZero, BaselineFundamental, BaselineTrainMean}

// baselineSignal writes to dst (C*T) what each sample of record i becomes
// when removed under baseline b; an error if in lacks what b reads.
func baselineSignal(dst []float32, in *Input, i int, b string) error {
	x, _, _ := in.record(i)
	switch b {
	case BaselineBlack, BaselineWhite, BaselineMean:
		v := x[0]
		var sum float64
		for _, s := range x {
			switch b {
			case BaselineBlack:
				v = min(v, s)
			case BaselineWhite:
				v = max(v, s)
			}
			sum += float64(s)
		}
		if b == BaselineMean {
			v = float32(sum / float64(len(x)))
		}
		fill(dst, v)
	case BaselineZero:
		fill(dst, 0)
	case BaselineFundamental:
		if in.Fundamental == nil {
			return fmt.Errorf("perturb_baseline = %q: the records have no fitted fundamental (accepted without one: %v)", b, baselines[:4])
		}
		copy(dst, in.Fundamental[i*in.Len():(i+1)*in.Len()])
	case BaselineTrainMean:
		if in.TrainMean == nil {
			return fmt.Errorf("perturb_baseline = %q: no training mean is known (accepted without one: %v)", b, baselines[:4])
		}
		copy(dst, in.TrainMean)
	default:
		panic("metric: unknown baseline " + b)
	}
	return nil
}

func fill(dst []float32, v float32) {
	for j := range dst {
		dst[j] = v
	}
}

// trapz is the area under y at unit spacing: sum_k (y[k] + y[k+1]) / 2
// (numpy.trapz(y, dx=1)).
func trapz(y []float64) float64 {
	var s float64
	for k := 1; k < len(y); k++ {
		s += (y[k-1] + y[k]) / 2
	}
	return s
}

// ForwardBatch is the most copies a metric hands the model in one call.
const ForwardBatch = 256

// forwards queues inputs and asks the model for their target class
// probabilities ForwardBatch at a time.
type forwards struct {
	m      nn.Model
	logits nn.Logiter // not nil: the queue asks for logits
	hits   bool       // the queue answers 1 if the target is the argmax (lowest class on ties), else 0
	n      int        // values an input
	xs     []float32
	target []int
	out    []*float64
	probs  []float32
}

func newForwards(m nn.Model) *forwards {
	return &forwards{m: m, n: m.InputLen()} // buffers on the first input (a chain metric only checks the model here)
}

// newOutputs is newForwards for the logit f_y when softmax is false
// (Quantus's softmax key), an error if the model gives probabilities only.
func newOutputs(m nn.Model, softmax bool) (*forwards, error) {
	f := newForwards(m)
	if softmax {
		return f, nil
	}
	l, ok := m.(nn.Logiter)
	if !ok {
		return nil, fmt.Errorf("softmax = false reads the logits, and this model (%T) gives probabilities only: set softmax = true to score p_y", m)
	}
	f.logits = l
	return f, nil
}

// next returns the buffer of the next queued input, whose p_target goes
// to *out at the next flush; a full queue is flushed first.
func (f *forwards) next(ctx context.Context, target int, out *float64) ([]float32, error) {
	if len(f.target) == ForwardBatch {
		if err := f.flush(ctx); err != nil {
			return nil, err
		}
	}
	if f.xs == nil {
		f.xs, f.probs = make([]float32, 0, ForwardBatch*f.n), make([]float32, ForwardBatch*f.m.Classes())
	}
	f.xs = f.xs[:len(f.xs)+f.n]
	f.target = append(f.target, target)
	f.out = append(f.out, out)
	return f.xs[len(f.xs)-f.n:], nil
}

// flush runs the queued inputs.
func (f *forwards) flush(ctx context.Context) error {
	B := len(f.target)
	if B == 0 {
		return nil
	}
	K := f.m.Classes()
	var err error
	if f.logits != nil {
		err = f.logits.Logits(ctx, f.probs[:B*K], f.xs)
	} else {
		err = f.m.Probs(ctx, f.probs[:B*K], f.xs)
	}
	if err != nil {
		return err
	}
	for b, y := range f.target {
		row := f.probs[b*K : (b+1)*K]
		best := 0
		for k, p := range row {
			if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
				return fmt.Errorf("the model gave %v for class %d of a perturbed input: want a finite value", p, k)
			}
			if p > row[best] {
				best = k
			}
		}
		if f.hits {
			*f.out[b] = 0
			if best == y {
				*f.out[b] = 1
			}
			continue
		}
		*f.out[b] = float64(row[y])
	}
	f.xs, f.target, f.out = f.xs[:0], f.target[:0], f.out[:0]
	return nil
}
