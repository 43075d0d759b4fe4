package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/uaxai/uaxai/host/bench"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("bench", stdout, stderr)
	reps := fs.Int("reps", 10, "runs of each case at least (each makes 16 maps)")
	minTime := fs.Duration("min-time", 2*time.Second, "and run each case for at least this long")
	seed := fs.Uint64("seed", 1, "seed of the network and the inputs")
	ref := fs.Bool("reference", true, "run the PyTorch reference harness in the same invocation, if python can import torch")
	python := fs.String("python", "/usr/bin/python3", "the interpreter of the reference")
	script := fs.String("ref-script", "testdata/peers/torch_ref.py", "the reference harness")
	threads := fs.Int("ref-threads", 2, "torch threads of the reference")
	n := fs.Int("ref-n", 10, "waveforms a reference op")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *reps < 1 || *n < 1 || *threads < 1 {
		return fmt.Errorf("bench: --reps, --ref-n and --ref-threads must be >= 1")
	}
	return bench.Run(ctx, bench.Options{Seed: *seed, Reps: *reps, MinTime: *minTime, Reference: *ref,
		Ref: bench.ReferenceOptions{Python: *python, Script: *script, Threads: *threads, N: *n}}, stdout, stderr)
}
