// Command uaxai computes and evaluates explanation distributions of a 1-D
// CNN power-quality classifier: run a recipe, generate data, train, predict,
// and serve the built-in plugins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `uaxai: uncertainty-aware explanations of a 1-D CNN power-quality classifier

usage:
  uaxai run RECIPE.toml [--workers N] [--plugins DIR] [--out DIR] [--no-cache | --refit]
                                     run a recipe: fit, explain, summarise, score, report
  uaxai run RECIPE.toml --run-dir DIR --shard i/n [--units fit|explain|all]
                                     do one shard of a run's units into a shared directory
  uaxai run RECIPE.toml --run-dir DIR --prepare
                                     check a recipe and write DIR's plan of units; run nothing
  uaxai run --resume DIR             finish an interrupted run (only the units not done), then merge
  uaxai merge DIR                    write the results of a sharded run once every unit is done
  uaxai recipe check RECIPE.toml     validate a recipe (and every plugin's table) without running it
  uaxai plugins [--plugins DIR]      list the plugins: ID, kind, version, source
  uaxai data generate --per-class N --seed S --out DIR [--f0 HZ] [--noise=false]
                                     write synthetic PQD records as CSV
  uaxai data generate --paper [--per-class 900 --val 0.1 --test-splits 5 --test-per-class 100] --out DIR
                                     write the train, val and test splits that recipes use
  uaxai data import REC [REC...] --out DIR [--channel C] [--nominal V] [--label C] [--raw]
                                     cut a COMTRADE/WAV/CSV recording into 640-sample windows at 3.2 kHz
  uaxai train (--recipe R.toml | --per-class N ...) --out W.safetensors
                                     train one network and save its weights
  uaxai predict --weights W.safetensors --input X.csv [--arch paper-1dcnn]
                                     print 16 class probabilities per input line
  uaxai explain --weights W.safetensors[,W2.safetensors,...] --input X.csv --explainer NAME
                --target C|predicted|FILE [--set key=value ...] [--summary NAME[:key=value,...] ...]
                [--out F.csv] [--arch paper-1dcnn] [--workers N] [--seed S] [--plugins DIR]
                                     explain your own waveforms under your own weights (CSV)
  uaxai slurm submit RECIPE.toml [--run-dir DIR] [--shards N] [--partition P] [--time T] [--dry-run] ...
                                     run a recipe on Slurm: a fit array, an explain array, a merge job
  uaxai slurm submit --resume DIR    resubmit the failed array tasks of DIR, and a merge job
  uaxai slurm status DIR             units done/running/missing, each array task's Slurm state
  uaxai bench [--reps 10] [--reference=true] [--ref-n 10]
                                     ms a map of every operator on the paper's network, beside PyTorch's
  uaxai plugin serve ID              (internal) serve a built-in plugin to a host
  uaxai plugin serve --script PATH [--memory BYTES --instances N]
                                     (internal) serve a summary script to a host
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command; it returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	// Ctrl-C and SIGTERM cancel the context; commands stop their work and
	// kill their plugin processes before returning.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore the default handlers, so that a
		// second Ctrl-C ends the process at once (plugin processes die with
		// it: they are started with a parent-death signal).
		<-ctx.Done()
		stop()
	}()
	var err error
	switch args[0] {
	case "merge":
		err = cmdMerge(ctx, args[1:], stdout, stderr)
	case "run":
		err = cmdRun(ctx, args[1:], stdout, stderr)
	case "recipe":
		if len(args) < 2 || args[1] != "check" {
			err = fmt.Errorf("usage: uaxai recipe check RECIPE.toml")
			break
		}
		err = cmdRecipeCheck(ctx, args[2:], stdout, stderr)
	case "plugins":
		err = cmdPlugins(ctx, args[1:], stdout, stderr)
	case "plugin":
		if len(args) < 3 || args[1] != "serve" {
			err = fmt.Errorf("usage: uaxai plugin serve ID | --script PATH")
			break
		}
		err = cmdPluginServe(args[2:], stderr)
	case "data":
		if len(args) >= 2 && args[1] == "import" {
			err = cmdDataImport(ctx, args[2:], stdout, stderr)
			break
		}
		if len(args) < 2 || args[1] != "generate" {
			err = fmt.Errorf("usage: uaxai data generate --per-class N --seed S --out DIR | uaxai data import REC --out DIR")
			break
		}
		err = cmdDataGenerate(ctx, args[2:], stdout, stderr)
	case "train":
		err = cmdTrain(ctx, args[1:], stdout, stderr)
	case "predict":
		err = cmdPredict(ctx, args[1:], stdout, stderr)
	case "bench":
		err = cmdBench(ctx, args[1:], stdout, stderr)
	case "explain":
		err = cmdExplain(ctx, args[1:], stdout, stderr)
	case "paper":
		err = cmdPaper(ctx, args[1:], stdout, stderr)
	case "slurm":
		err = cmdSlurm(ctx, args[1:], stdout, stderr)
	default:
		err = fmt.Errorf("unknown command %q (commands: run, recipe check, plugins, data generate, data import, train, predict, explain, bench, paper, slurm)", args[0])
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "uaxai: interrupted:", err)
		return 130
	}
	fmt.Fprintln(stderr, "uaxai:", err)
	return 1
}

// flags returns a FlagSet that reports errors instead of exiting.
func flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
