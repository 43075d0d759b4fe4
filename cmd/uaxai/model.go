package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/sdk/nn"
)

func cmdDataGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("data generate", stderr)
	perClass := fs.Int("per-class", 100, "records per class (with --paper: the training pool per class, default 900)")
	seed := fs.Uint64("seed", 2026, "dataset seed")
	out := fs.String("out", "", "output directory (required)")
	f0 := fs.Float64("f0", 50, "nominal frequency, Hz")
	noise := fs.Bool("noise", true, "add white Gaussian noise (SNR 20-50 dB)")
	split := fs.String("split", "data", "split name (part of every record's random stream)")
	paper := fs.Bool("paper", false, "write the splits that recipes and train use: OUT/train, OUT/val, OUT/test-0, ...")
	valFrac := fs.Float64("val", 0.1, "with --paper: validation fraction of the pool")
	testSplits := fs.Int("test-splits", 5, "with --paper: independent test splits")
	testPerClass := fs.Int("test-per-class", 100, "with --paper: test records per class and split")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("data generate: --out DIR is required")
	}
	for _, f := range []string{"val", "test-splits", "test-per-class", "split"} {
		if isSet(fs, f) && *paper == (f == "split") {
			if *paper {
				return fmt.Errorf("data generate: --split does not go with --paper, which names its splits train, val, test-0, ...")
			}
			return fmt.Errorf("data generate: --%s needs --paper", f)
		}
	}
	if *paper && !isSet(fs, "per-class") {
		*perClass = 900
	}
	if *paper && !(*valFrac >= 0 && *valFrac < 1) {
		return fmt.Errorf("data generate: --val %v: want a fraction in [0, 1)", *valFrac)
	}
	cfg := data.DefaultConfig()
	cfg.F0, cfg.Noise = *f0, *noise
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("data generate: %w", err)
	}
	// dataset.json: what regenerates any record: Generate(config, label,
	// rng.New(seed of params.jsonl)).
	meta := map[string]any{"generator": "uaxai host/data", "seed": *seed, "per_class": *perClass, "config": cfg}
	var splits []data.Split
	if *paper {
		ps, err := data.MakePaperSplits(ctx, cfg, *seed, *perClass, *valFrac, *testSplits, *testPerClass)
		if err != nil {
			return fmt.Errorf("data generate: %w", err)
		}
		splits = append([]data.Split{ps.Train, ps.Val}, ps.Tests...)
		meta["val_fraction"], meta["test_splits"], meta["test_per_class"] = *valFrac, *testSplits, *testPerClass
	} else {
		s, err := data.MakeSplit(ctx, cfg, *seed, *split, *perClass, nil)
		if err != nil {
			return fmt.Errorf("data generate: %w", err)
		}
		splits = []data.Split{s}
		meta["split"] = *split
	}
	b, err := json.MarshalIndent(meta, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("data generate: %w", err)
	}
	if err := report.WriteFile(*out, "dataset.json", append(b, '\n')); err != nil {
		return fmt.Errorf("data generate: %w", err)
	}
	for _, s := range splits {
		dir := *out
		if *paper {
			dir = filepath.Join(*out, s.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("data generate: %w", err)
			}
		}
		if err := data.WriteCSV(dir, s); err != nil {
			return fmt.Errorf("data generate: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %d records of split %q (seed %d) to %s\n", len(s.Records), s.Name, *seed, dir)
	}
	return nil
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

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

func cmdPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("predict", stderr)
	weights := fs.String("weights", "", "weights (.safetensors, PyTorch state_dict names)")
	input := fs.String("input", "", "CSV of waveforms, one per line")
	archName := fs.String("arch", nn.PaperArchName, "architecture")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *weights == "" || *input == "" {
		return fmt.Errorf("predict: --weights and --input are required")
	}
	arch, err := nn.LookupArch(*archName)
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	p, err := nn.LoadParams(*weights, arch)
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	m, err := nn.NewModel(p)
	if err != nil {
		return fmt.Errorf("predict: %s: %w", *weights, err)
	}
	rows, err := data.ReadWaveforms(*input, m.InputLen())
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	w := bufio.NewWriter(stdout)
	k := m.Classes()
	x := make([]float32, m.InputLen())
	pr := make([]float32, k)
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, v := range r {
			x[i] = float32(v)
		}
		m.Probs(pr, x)
		for j, v := range pr {
			if j > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.FormatFloat(float64(v), 'g', 9, 32))
		}
		if err := w.WriteByte('\n'); err != nil {
			return fmt.Errorf("predict: write: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("predict: write: %w", err)
	}
	return nil
}
