package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/sdk/nn"
)

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
