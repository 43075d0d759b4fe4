package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/sdk/nn"
)

func cmdTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("train", stderr)
	recipePath := fs.String("recipe", "", "take data, model and [train] from a recipe")
	perClass := fs.Int("per-class", 900, "training pool per class (without --recipe)")
	valFrac := fs.Float64("val", 0.1, "validation fraction of the pool")
	testPerClass := fs.Int("test-per-class", 100, "test records per class and split, for the final accuracy")
	testSplits := fs.Int("test-splits", 1, "independent test splits (0: none)")
	seed := fs.Uint64("seed", 2026, "data seed")
	trainSeed := fs.Uint64("train-seed", 2026, "initialisation and shuffling seed")
	cfg := nn.PaperTrainConfig()
	fs.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "epochs")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "batch size")
	fs.Float64Var(&cfg.LR, "lr", cfg.LR, "initial learning rate")
	workers := fs.Int("workers", 0, "goroutines (0: all cores)")
	out := fs.String("out", "", "weights file to write (.safetensors, required)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("train: --out W.safetensors is required")
	}
	arch := nn.PaperArch()
	var ds runner.Datasets
	var err error
	if *recipePath != "" {
		r, err := recipe.Load(*recipePath)
		if err != nil {
			return err
		}
		if arch, err = r.Arch(); err != nil {
			return err
		}
		cfg = r.Train
		*trainSeed = r.Seed
		if ds, err = runner.LoadData(ctx, r); err != nil {
			return err
		}
	} else {
		dc := data.DefaultConfig()
		ps, err := data.MakePaperSplits(ctx, dc, *seed, *perClass, *valFrac, *testSplits, max(*testPerClass, 1))
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		ds.Train = runner.ToDataset(ps.Train.Records)
		ds.Val = runner.ToDataset(ps.Val.Records)
		for _, t := range ps.Tests {
			ds.Tests = append(ds.Tests, engine.TestSplit{Name: t.Name, Data: runner.ToDataset(t.Records)})
		}
	}
	bar := progress.Stderr()
	train := nn.Data{X: ds.Train.X, Y: ds.Train.Y, N: ds.Train.N, Len: ds.Train.Len}
	val := nn.Data{X: ds.Val.X, Y: ds.Val.Y, N: ds.Val.N, Len: ds.Val.Len}
	bar.Stage(fmt.Sprintf("train %d records, %d validation", train.N, val.N), cfg.Epochs)
	res, err := nn.Train(ctx, arch, train, val, cfg, *trainSeed, nn.TrainOptions{Workers: *workers, Progress: func(r nn.EpochReport) {
		best := ""
		if r.Best {
			best = " *"
		}
		bar.Advance(r.Epoch, fmt.Sprintf("epoch %d lr %.2g loss %.4f val_loss %.4f val_acc %.4f%s", r.Epoch, r.LR, r.TrainLoss, r.ValLoss, r.ValAcc, best))
	}})
	bar.Finish()
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := nn.SaveParams(*out, res.Params, map[string]string{"arch": arch.Name, "best_epoch": strconv.Itoa(res.BestEpoch)}); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	last := res.History[len(res.History)-1]
	fmt.Fprintf(stdout, "trained %d epochs in %s (%.2f s/epoch); checkpoint of epoch %d (lowest validation loss) saved to %s\n",
		len(res.History), last.Elapsed.Round(1e6), last.Elapsed.Seconds()/float64(len(res.History)), res.BestEpoch, *out)
	if len(ds.Tests) > 0 {
		net, err := nn.NewNet(arch)
		if err != nil {
			return err
		}
		ws := net.NewWorkspace(256)
		var accs []float64
		for _, t := range ds.Tests {
			d := nn.Data{X: t.Data.X, Y: t.Data.Y, N: t.Data.N, Len: t.Data.Len}
			loss, acc := nn.Evaluate(net, ws, res.Params.Data, d)
			accs = append(accs, acc)
			fmt.Fprintf(stdout, "test split %s: accuracy %.4f, loss %.4f (%d records)\n", t.Name, acc, loss, d.N)
		}
		st := eval.StatOf(accs)
		fmt.Fprintf(stdout, "test accuracy over %d splits: %.4f ± %.4f\n", st.N, st.Mean, st.SD)
	}
	return nil
}
