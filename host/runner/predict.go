package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/sdk/nn"
)

// PredictOptions are the settings of Predict.
type PredictOptions struct {
	Weights  []string // .safetensors with PyTorch state_dict names, one draw each
	Input    string   // CSV of waveforms, one a line, or a .npy array (N, C, T)
	Channels int      // C of a CSV line (0: 1); a .npy file has its own
	Arch     string   // built-in architecture name ("": nn.PaperArchName), on the input's C x T with the weights' classes
	Classes  string   // a classes.txt naming the network's classes ("": see Predictions.Classes)
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
}

// predictBatch is the inputs of one forward pass of Predict.
const predictBatch = 256

// Predict loads the eval-mode network of every file of opt.Weights and
// returns the mean class probabilities of every waveform of opt.Input.
// Errors name the file (and for the input the line) that is wrong.
func Predict(ctx context.Context, opt PredictOptions) (*Predictions, error) {
	if len(opt.Weights) == 0 {
		return nil, errors.New("no weights file (accepted: one or more safetensors files, each one draw)")
	}
	in, err := readInputs(opt.Input, opt.Channels)
	if err != nil {
		return nil, err
	}
	arch, err := inputArch(opt.Arch, in, opt.Input, opt.Weights)
	if err != nil {
		return nil, err
	}
	models := make([]*nn.Inference, len(opt.Weights))
	for s, path := range opt.Weights {
		p, err := nn.LoadParams(path, arch)
		if err != nil {
			return nil, fmt.Errorf("weights file %d of %d: %w", s+1, len(opt.Weights), err)
		}
		if models[s], err = nn.NewModel(p); err != nil {
			return nil, fmt.Errorf("weights file %d of %d: %s: %w", s+1, len(opt.Weights), path, err)
		}
	}
	n, k := models[0].InputLen(), models[0].Classes()
	nIn := in.n
	out := &Predictions{Probs: make([][]float32, nIn), Predicted: make([]int, nIn), Classes: make([]string, k)}
	var names []string
	if opt.Classes != "" {
		if names, err = data.ReadClasses(opt.Classes); err != nil {
			return nil, fmt.Errorf("--classes: %w", err)
		}
		if len(names) != k {
			return nil, fmt.Errorf("--classes %s names %d classes, and the network has %d logits (accepted: one name a logit, in order)", opt.Classes, len(names), k)
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
	pr := make([]float32, predictBatch*k)
	sum := make([]float64, predictBatch*k)
	for b0 := 0; b0 < nIn; b0 += predictBatch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := min(predictBatch, nIn-b0)
		x := in.x[b0*n : (b0+b)*n]
		clear(sum)
		for _, m := range models {
			m.Probs(pr[:b*k], x)
			for j, v := range pr[:b*k] {
				sum[j] += float64(v)
			}
		}
		for i := range b {
			row := make([]float32, k)
			best := 0
			for c := range row {
				row[c] = float32(sum[i*k+c] / float64(len(models)))
				if row[c] > row[best] {
					best = c
				}
			}
			out.Probs[b0+i], out.Predicted[b0+i] = row, best
		}
	}
	return out, nil
}
