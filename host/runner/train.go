package runner

import (
	"context"
	"strconv"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TrainOptions are the settings of Train.
type TrainOptions struct {
	Arch     nn.Arch
	Config   nn.TrainConfig
	Seed     uint64               // initialisation and shuffling
	Workers  int                  // goroutines (0: all cores); the result does not depend on it
	Out      string               // weights file to write (.safetensors); "": none
	Progress func(nn.EpochReport) // called after every epoch; may be nil
}

// Trained is what Train produced: the checkpoint, its epoch and the
// history of nn.Train, and the checkpoint's score on every test split.
type Trained struct {
	nn.TrainResult
	Tests []TestScore
}

// TestScore is the eval-mode mean cross-entropy and accuracy of a
// checkpoint on one test split.
type TestScore struct {
	Split    string
	Records  int
	Loss     float64
	Accuracy float64
}

// TestAccuracy is the mean and standard deviation of the accuracy over
// the test splits.
func (t Trained) TestAccuracy() eval.Stat {
	accs := make([]float64, len(t.Tests))
	for i, s := range t.Tests {
		accs[i] = s.Accuracy
	}
	return eval.StatOf(accs)
}

// Train trains one network of opt.Arch on ds.Train with nn.Train (ds.Val
// picks the checkpoint: the epoch of lowest validation loss), writes the
// checkpoint to opt.Out with its architecture and best epoch as metadata,
// and scores it on every test split of ds. Errors of nn.Train and of the
// write are returned as they are; the write's names the file.
func Train(ctx context.Context, ds Datasets, opt TrainOptions) (Trained, error) {
	res, err := nn.Train(ctx, opt.Arch, ds.Train, ds.Val, opt.Config, opt.Seed,
		nn.TrainOptions{Workers: opt.Workers, Progress: opt.Progress})
	if err != nil {
		return Trained{}, err
	}
	out := Trained{TrainResult: res}
	if opt.Out != "" {
		meta := map[string]string{"arch": opt.Arch.Name, "best_epoch": strconv.Itoa(res.BestEpoch)}
		if err := nn.SaveParams(opt.Out, res.Params, meta); err != nil {
			return Trained{}, err
		}
	}
	if len(ds.Tests) == 0 {
		return out, nil
	}
	const batch = 256
	net, err := nn.NewPass(opt.Arch, batch, 0)
	if err != nil {
		return Trained{}, err
	}
	for _, t := range ds.Tests {
		if err := ctx.Err(); err != nil {
			return Trained{}, err
		}
		d := t.Data
		if err := d.Check("test split "+t.Name, net.InputLen(), net.Classes()); err != nil {
			return Trained{}, err
		}
		loss, acc := nn.EvaluatePass(net, batch, res.Params.Data, d)
		out.Tests = append(out.Tests, TestScore{Split: t.Name, Records: d.N, Loss: loss, Accuracy: acc})
	}
	return out, nil
}

// RecipeTraining returns what recipe r trains: its data (LoadData), and
// its architecture, [train] table and seed as TrainOptions. Splits whose
// waveforms do not fit the architecture's input are an error that points
// into the recipe.
func RecipeTraining(ctx context.Context, r *recipe.Recipe) (Datasets, TrainOptions, error) {
	arch, err := r.Arch()
	if err != nil {
		return Datasets{}, TrainOptions{}, err
	}
	if arch.ShapeOnly() {
		return Datasets{}, TrainOptions{}, r.Errorf([]string{"model", "torch"}, "[model] torch = %s is a PyTorch module: uaxai trains its own networks only; train the module in PyTorch (as scripts/train_torch_example.py does) and name its state_dict files in posterior.torch's weights", sdk.Quote(r.Model.Torch))
	}
	ds, err := LoadData(ctx, r)
	if err != nil {
		return Datasets{}, TrainOptions{}, err
	}
	if err := checkLengths(r, ds, arch); err != nil {
		return Datasets{}, TrainOptions{}, err
	}
	return ds, TrainOptions{Arch: arch, Config: r.Train, Seed: r.Seed}, nil
}

// PaperDatasets generates the paper's splits (data.MakePaperSplits) as
// datasets, without masks.
func PaperDatasets(ctx context.Context, cfg data.Config, seed uint64, trainPerClass int, valFrac float64, testSplits, testPerClass int) (Datasets, error) {
	ps, err := data.MakePaperSplits(ctx, cfg, seed, trainPerClass, valFrac, testSplits, testPerClass)
	if err != nil {
		return Datasets{}, err
	}
	ds := Datasets{Train: ToDataset(ps.Train.Records), Val: ToDataset(ps.Val.Records)}
	for _, t := range ps.Tests {
		ds.Tests = append(ds.Tests, engine.TestSplit{Name: t.Name, Data: ToDataset(t.Records)})
	}
	return ds, nil
}
