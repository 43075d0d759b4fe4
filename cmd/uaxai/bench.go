package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
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
	archs := fs.Bool("archs", false, "time the golden graph networks (FCN, ResNet1D, InceptionTime, the Transformer: forward of 64, occlusion maps, a training epoch) beside testdata/peers/archs_bench.py instead")
	nets := fs.String("nets", strings.Join(bench.ArchNets, ","), "with --archs: the networks")
	workers := fs.Int("workers", runtime.NumCPU(), "with --archs: goroutines of the parallel column")
	root := fs.String("root", ".", "with --archs: the repository's root (recipes/archs, testdata/golden/archs)")
	epochN := fs.Int("epoch-n", 512, "with --archs: records of the reference's training epoch")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *reps < 1 || *n < 1 || *threads < 1 || *workers < 1 || *epochN < 1 {
		return fmt.Errorf("bench: --reps, --ref-n, --ref-threads, --workers and --epoch-n must be >= 1")
	}
	if *archs {
		refScript := *script
		if refScript == "testdata/peers/torch_ref.py" {
			refScript = filepath.Join(*root, "testdata", "peers", "archs_bench.py")
		}
		return bench.RunArchs(ctx, bench.ArchOptions{Root: *root, Nets: strings.Split(*nets, ","), Workers: *workers, Seed: *seed,
			Reps: *reps, MinTime: *minTime, Reference: *ref,
			Ref: bench.ReferenceOptions{Python: *python, Script: refScript, Threads: *threads, N: *epochN}}, stdout, stderr)
	}
	return bench.Run(ctx, bench.Options{Seed: *seed, Reps: *reps, MinTime: *minTime, Reference: *ref,
		Ref: bench.ReferenceOptions{Python: *python, Script: *script, Threads: *threads, N: *n}}, stdout, stderr)
}
