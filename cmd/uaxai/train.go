package main

import (
	"context"
	"fmt"
	"io"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/sdk/nn"
)

func cmdTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("train", stdout, stderr)
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
	var ds runner.Datasets
	opt := runner.TrainOptions{Arch: nn.PaperArch(), Config: cfg, Seed: *trainSeed}
	if *recipePath != "" {
		r, err := recipe.Load(*recipePath)
		if err != nil {
			return err
		}
		if ds, opt, err = runner.RecipeTraining(ctx, r); err != nil {
			return err
		}
	} else {
		var err error
		if ds, err = runner.PaperDatasets(ctx, data.DefaultConfig(), *seed, *perClass, *valFrac, *testSplits, max(*testPerClass, 1)); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	bar := progress.Stderr()
	bar.Stage(fmt.Sprintf("train %d records, %d validation", ds.Train.N, ds.Val.N), opt.Config.Epochs)
	opt.Workers, opt.Out = *workers, *out
	opt.Progress = func(r nn.EpochReport) {
		best := ""
		if r.Best {
			best = " *"
		}
		bar.Advance(r.Epoch, fmt.Sprintf("epoch %d lr %.2g loss %.4f val_loss %.4f val_acc %.4f%s", r.Epoch, r.LR, r.TrainLoss, r.ValLoss, r.ValAcc, best))
	}
	res, err := runner.Train(ctx, ds, opt)
	bar.Finish()
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	last := res.History[len(res.History)-1]
	fmt.Fprintf(stdout, "trained %d epochs in %s (%.2f s/epoch); checkpoint of epoch %d (lowest validation loss) saved to %s\n",
		len(res.History), last.Elapsed.Round(1e6), last.Elapsed.Seconds()/float64(len(res.History)), res.BestEpoch, *out)
	for _, t := range res.Tests {
		fmt.Fprintf(stdout, "test split %s: accuracy %.4f, loss %.4f (%d records)\n", t.Split, t.Accuracy, t.Loss, t.Records)
	}
	if len(res.Tests) > 0 {
		st := res.TestAccuracy()
		fmt.Fprintf(stdout, "test accuracy over %d splits: %.4f ± %.4f\n", st.N, st.Mean, st.SD)
	}
	return nil
}
