package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/sdk/nn"
)

// predictDetails is the text of uaxai predict -h after the usage.
const predictDetails = `stdout: one line an input, its 16 class probabilities.`

func cmdPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("predict", stdout, stderr)
	weights := fs.String("weights", "", "weights (.safetensors, PyTorch state_dict names)")
	input := fs.String("input", "", "CSV of waveforms, one per line")
	archName := fs.String("arch", nn.PaperArchName, "architecture")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *weights == "" || *input == "" {
		return fs.usageError("--weights and --input are required")
	}
	probs, err := runner.Predict(ctx, runner.PredictOptions{Weights: *weights, Input: *input, Arch: *archName})
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	w := bufio.NewWriter(stdout)
	for _, row := range probs {
		for j, v := range row {
			if j > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.FormatFloat(float64(v), 'g', 9, 32))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("predict: write: %w", err)
	}
	return nil
}
