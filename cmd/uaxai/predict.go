package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// predictDetails is the text of uaxai predict -h after the usage.
const predictDetails = `Each weights file is one draw theta_s of the network; the probabilities are
their mean (1/S) sum_s p(c|x,theta_s). ONNX files as --weights, without
--model, are an ensemble of their networks, one draw a file. --mc-dropout S
makes the draws S MC-dropout draws of one network instead, seeded by --seed
(the same command, the same bytes). stdout: a header
input,predicted,class,<the 16 class names>, then one line an input: its 0-based
line in X.csv, the predicted class (the argmax, the lower class on ties), its
name, and the mean probability of each class. With --out, F.csv gets only the
probabilities (one line an input, no header) and stdout nothing. Probabilities
are float32, in the shortest form that reads back to the same float32.
With --reference DIR (a data folder of the network's labelled training
records, as uaxai data generate writes one), every input is also checked
against it, and the table gains ood_score (the input's RMS, fundamental
frequency and THD per channel against the records of its predicted class, in
widths of their range), feature_ood_score (the squared Mahalanobis distance
to the nearest class on each draw's penultimate features, mean over the
draws; empty when the model gives none), ood (either above its threshold, set
so that 1% of a held-back tenth of the records is flagged) and ood_reason;
--fs and --f0 give the waveforms' sampling rate and system frequency.
A waveform of more than --max-in-len samples a channel, or a network of
more than --max-params parameters or whose forward pass of 64 inputs holds
more than --max-batch-values values, is refused before it is allocated.`

func cmdPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("predict", stdout, stderr)
	wf := addWaveformFlags(fs)
	input, channels := wf.input, wf.channels
	out := fs.String("out", "", "write the bare probability matrix to this CSV file (atomically) instead of the table on stdout")
	archName := wf.arch
	classes := fs.String("classes", "", "a classes.txt naming the network's classes, one a line (default: the 16 PQD classes' names for 16 logits, else class0, class1, ...)")
	seed := fs.Uint64("seed", recipe.DefaultSeed, "seed of --mc-dropout's draws")
	mcd := addMCDropoutFlag(fs)
	mf := addModelFlags(fs)
	lf := addLimitFlag(fs)
	bf := addBoundFlags(fs)
	rf := addReferenceFlags(fs)
	ref, rate, f0 := rf.dir, rf.fs, rf.f0
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	bounds, err := bf.bounds("predict")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fs.usageError(fmt.Sprintf("unexpected argument %q (every input is a flag)", pos[0]))
	}
	model, err := mf.torchModel("predict", fs, stderr)
	if err != nil {
		return err
	}
	files, err := weightFiles("predict", wf.weights)
	if err != nil {
		return err
	}
	// An .onnx file holds its weights; the graph checks a .toml spec's.
	if (len(files) == 0 && (model == nil || !model.Native())) || *input == "" {
		return fs.usageError("--weights and --input are required")
	}
	if *ref != "" && *out != "" {
		return fs.usageError("--reference adds the ood columns to the table on stdout, and --out writes the bare probabilities: use one")
	}
	pred, err := runner.Predict(ctx, runner.PredictOptions{Weights: files, Input: *input, Channels: *channels, Arch: *archName, Classes: *classes, Model: model, Bounds: bounds, Limits: lf.limits(),
		Reference: *ref, Fs: *rate, F0: *f0, MCDropout: int(*mcd), Seed: *seed})
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	for _, n := range pred.CheckNotes {
		fmt.Fprintln(stderr, "note:", n)
	}
	if *out != "" {
		tmp, err := atomicfile.Temp(filepath.Dir(*out), filepath.Base(*out), func(w *bufio.Writer) error {
			return writeProbs(w, pred, false)
		})
		if err == nil {
			if err = os.Rename(tmp, *out); err != nil {
				os.Remove(tmp)
			}
		}
		if err != nil {
			return fmt.Errorf("predict: --out %s: %w", *out, err)
		}
		atomicfile.SyncDir(filepath.Dir(*out))
		return nil
	}
	w := bufio.NewWriter(stdout)
	if err := writeProbs(w, pred, true); err != nil {
		return fmt.Errorf("predict: write: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("predict: write: %w", err)
	}
	return nil
}

// writeProbs writes pred's probabilities as CSV, one line an input; with
// table, after a header and the input, predicted and class columns.
func writeProbs(w *bufio.Writer, pred *runner.Predictions, table bool) error {
	var b []byte
	if table {
		b = append(b, "input,predicted,class"...)
		for _, c := range pred.Classes {
			b = append(append(b, ','), csvField(c)...)
		}
		if pred.Checks != nil {
			b = append(b, ",ood_score,feature_ood_score,ood,ood_reason"...)
		}
		b = append(b, '\n')
	}
	for i, row := range pred.Probs {
		if table {
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(pred.Predicted[i]), 10)
			b = append(append(b, ','), csvField(pred.Classes[pred.Predicted[i]])...)
			b = append(b, ',')
		}
		for j, v := range row {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		}
		if table && pred.Checks != nil {
			c := pred.Checks[i]
			b = append(b, ',')
			b = strconv.AppendFloat(b, c.Score, 'g', 6, 64)
			b = append(b, ',')
			if c.HasFeature {
				b = strconv.AppendFloat(b, c.Feature, 'g', 6, 64)
			}
			b = append(b, ',')
			b = strconv.AppendBool(b, c.OOD)
			b = append(append(b, ','), csvField(c.Reason)...)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	_, err := w.Write(b)
	return err
}

// csvField quotes s as a CSV field when it holds a comma, a quote or a
// line break.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
