package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// PredictOptions are the settings of Predict.
type PredictOptions struct {
	Weights  []string // .safetensors with PyTorch state_dict names, one draw each
	Input    string   // CSV of waveforms, one a line, or a .npy array (N, C, T)
	Channels int      // C of a CSV line (0: 1); a .npy file has its own
	Arch     string   // built-in architecture name ("": nn.PaperArchName), on the input's C x T with the weights' classes
	Classes  string   // a classes.txt naming the network's classes ("": see Predictions.Classes)
	// Model, if set, is the network whose draws (one a file of Weights,
	// state_dicts; an ONNX file's own) Predict serves for the time of the
	// call (ModelSource: a PyTorch module's by torchserver.Start, a graph
	// network's in this process) instead of building Arch's networks.
	Model ModelSource
	// Served, if set, is a server already started over the files of
	// Weights (or, with no Weights, its own) on the input's shape; the
	// caller closes it. Model is then unused.
	Served *torchserver.Server
	// Limits bound the requests to served draws (model_call; zero
	// fields: limits.Default's): past it a PyTorch model's server is
	// killed and Predict fails naming the draw and the request.
	Limits limits.Limits
	// Bounds bound the input's length and the network's size, checked
	// before either is allocated (readInputs, checkNetSize); zero:
	// recipe.DefaultSizeBounds, a recipe's.
	Bounds recipe.SizeBounds
	// Reference, if set, is a data folder of the network's labelled
	// training records: every input is then checked against it
	// (Predictions.Checks), its waveforms sampled at Fs Hz on a system of
	// F0 Hz.
	Reference string
	Fs, F0    float64
	// MCDropout, if not 0, is S >= 2: the draws are S MC-dropout draws of
	// the one network of Weights (or Model's own), its dropout on with
	// masks from Seed (mcdropout.go), instead of one draw a file.
	MCDropout int
	Seed      uint64
}

// Predictions are the posterior predictive of every input of a file.
type Predictions struct {
	// Probs holds one row an input (file order) of Classes values: the
	// mean over the S weights files of the class probabilities,
	// (1/S) sum_s p(c | x, theta_s), accumulated in float64 and rounded
	// to float32 (each draw's probabilities are float32).
	Probs [][]float32
	// Predicted is the argmax of each row of Probs, the lower class on
	// ties.
	Predicted []int
	// Classes names the columns: PredictOptions.Classes's names, else
	// data.ClassNames when the network has the 16 PQD classes, else
	// "class0", "class1", ...
	Classes []string
	// Checks, with PredictOptions.Reference, are each input's
	// out-of-distribution check, and CheckNotes how they were fitted.
	Checks     []InputCheck
	CheckNotes []string
}

// predictBatch is the inputs of one forward pass of Predict.
const predictBatch = 256

// Predict loads the eval-mode network of every file of opt.Weights and
// returns the mean class probabilities of every waveform of opt.Input.
// Errors name the file (and for the input the line) that is wrong.
func Predict(ctx context.Context, opt PredictOptions) (_ *Predictions, err error) {
	opt.Model, opt.Weights = onnxEnsemble(opt.Model, opt.Weights)
	if len(opt.Weights) == 0 && opt.Served == nil && !native(opt.Model) {
		return nil, errors.New("no weights file (accepted: one or more safetensors files, each one draw)")
	}
	if err := checkMCDropout(opt.MCDropout, opt.Weights, opt.Model, opt.Served != nil); err != nil {
		return nil, err
	}
	in, err := readInputs(opt.Input, opt.Channels, opt.Bounds)
	if err != nil {
		return nil, err
	}
	if opt.Model != nil || opt.Served != nil {
		return predictServed(ctx, opt, in)
	}
	arch, err := inputArch(opt.Arch, in, opt.Input, opt.Weights)
	if err != nil {
		return nil, err
	}
	params := make([]nn.Params, len(opt.Weights))
	names := opt.Weights
	for s, path := range opt.Weights {
		if params[s], err = nn.LoadParams(path, arch); err != nil {
			return nil, fmt.Errorf("weights file %d of %d: %w", s+1, len(opt.Weights), err)
		}
	}
	if mc := (mcDropout{draws: opt.MCDropout, seed: opt.Seed}); mc.on() {
		if params, err = mc.fold(params[0], fmt.Sprintf("architecture %q", arch.Name)); err != nil {
			return nil, err
		}
		names = mc.drawNames(opt.Weights[0])
	}
	models := make([]nn.Model, len(params))
	for s, p := range params {
		if models[s], err = nn.Open(p); err != nil {
			return nil, fmt.Errorf("draw %d of %d: %s: %w", s+1, len(params), names[s], err)
		}
	}
	n, k := models[0].InputLen(), models[0].Classes()
	nIn := in.n
	out, err := newPredictions(opt.Classes, nIn, k)
	if err != nil {
		return nil, err
	}
	pr := make([]float32, predictBatch*k)
	sum := make([]float64, predictBatch*k)
	for b0 := 0; b0 < nIn; b0 += predictBatch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := min(predictBatch, nIn-b0)
		x := in.x[b0*n : (b0+b)*n]
		clear(sum)
		for s, m := range models {
			if err := m.Probs(ctx, pr[:b*k], x); err != nil {
				return nil, fmt.Errorf("draw %d of %d (%s): inputs %d..%d: %w", s+1, len(models), names[s], b0, b0+b-1, err)
			}
			for j, v := range pr[:b*k] {
				sum[j] += float64(v)
			}
		}
		for i := range b {
			for c := range k {
				sum[i*k+c] /= float64(len(models))
			}
		}
		out.set(b0, sum[:b*k])
	}
	if opt.Reference != "" {
		f, D := modelFeatures(ctx, models)
		if out.Checks, out.CheckNotes, err = checkInputs(ctx, opt.Reference, opt.Fs, opt.F0, in, out.Predicted, out.Classes, len(models), D, f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newPredictions are the Predictions of nIn inputs and k classes, named
// by the file classes ("": see Predictions.Classes), with no rows yet.
func newPredictions(classes string, nIn, k int) (*Predictions, error) {
	out := &Predictions{Probs: make([][]float32, nIn), Predicted: make([]int, nIn), Classes: make([]string, k)}
	var names []string
	if classes != "" {
		var err error
		if names, err = data.ReadClasses(classes); err != nil {
			return nil, fmt.Errorf("--classes: %w", err)
		}
		if len(names) != k {
			return nil, fmt.Errorf("--classes %s names %d classes, and the network has %d logits (accepted: one name a logit, in order)", classes, len(names), k)
		}
	}
	for c := range out.Classes {
		if names != nil {
			out.Classes[c] = names[c]
		} else if k == data.NumClasses {
			out.Classes[c] = data.ClassNames[c]
		} else {
			out.Classes[c] = fmt.Sprintf("class%d", c)
		}
	}
	return out, nil
}

// set sets the rows of inputs b0.. from mean, their mean probabilities
// (one row of len(p.Classes) an input), rounded to float32, and their
// argmax (the lower class on ties).
func (p *Predictions) set(b0 int, mean []float64) {
	k := len(p.Classes)
	for i := range len(mean) / k {
		row := make([]float32, k)
		best := 0
		for c := range row {
			row[c] = float32(mean[i*k+c])
			if row[c] > row[best] {
				best = c
			}
		}
		p.Probs[b0+i], p.Predicted[b0+i] = row, best
	}
}

// predictServed is Predict on served draws (opt.Model or opt.Served).
func predictServed(ctx context.Context, opt PredictOptions, in inputs) (_ *Predictions, err error) {
	refs, names, started, calls, err := serveDraws(ctx, opt.Model, opt.Served, opt.Weights, mcDropout{draws: opt.MCDropout, seed: opt.Seed}, in, opt.Limits)
	if err != nil {
		return nil, err
	}
	if started != nil {
		defer func() { err = errors.Join(err, started.Close()) }()
	}
	n := in.c * in.t
	k, err := servedShape(ctx, refs, names, n, calls)
	if err != nil {
		return nil, err
	}
	out, err := newPredictions(opt.Classes, in.n, k)
	if err != nil {
		return nil, err
	}
	mean := make([]float64, in.n*k)
	if err := servedProbs(ctx, mean, refs, names, in.x, n, k, calls); err != nil {
		return nil, err
	}
	out.set(0, mean)
	if opt.Reference != "" {
		f, D := servedFeatures(ctx, refs, calls)
		if out.Checks, out.CheckNotes, err = checkInputs(ctx, opt.Reference, opt.Fs, opt.F0, in, out.Predicted, out.Classes, len(refs), D, f); err != nil {
			return nil, err
		}
	}
	return out, nil
}
