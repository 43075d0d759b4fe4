package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// command is one command of uaxai. The table commands is the only list of
// them: the dispatch, the overview of uaxai help and every command's
// usage (its -h and its usage errors) all read it.
type command struct {
	name     string   // the words after uaxai: "run", "data import"
	forms    []string // the arguments after "uaxai <name>", one form a line
	summary  string   // one line: what it does
	details  string   // more text for its -h, or ""
	internal bool     // started by uaxai itself, not by a user
	run      func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is filled in init: the commands' functions read it (through
// flags), which a package-level initialiser could not allow.
var commands []command

func init() {
	commands = []command{
		{name: "run", forms: []string{
			"[flags] RECIPE.toml",
			"[flags] RECIPE.toml --run-dir DIR --shard i/n [--units fit|explain|all]",
			"[flags] RECIPE.toml --run-dir DIR --prepare",
			"[flags] --resume RUN_DIR",
		}, summary: "run a recipe: fit, explain, summarise, score, report (or one shard of it, its plan only, the rest of an interrupted run)",
			run: cmdRun},
		{name: "merge", forms: []string{"[flags] RUN_DIR"}, summary: "write the results of a sharded run once every unit is done", run: cmdMerge},
		{name: "view", forms: []string{"RUN_DIR", "--serve RUN_DIR"}, summary: "open a run's report.html in the browser, or serve its directory on 127.0.0.1",
			details: "Without --serve, xdg-open opens RUN_DIR/report.html; when it cannot, or with --serve, the run directory is served on 127.0.0.1 at a free port, its URL printed, until Ctrl-C.", run: cmdView},
		{name: "recipe check", forms: []string{"[flags] RECIPE.toml", "[flags] --trial RECIPE.toml"},
			summary: "validate a recipe without running any code it brings (--trial: start its plugins and scripts too)", details: checkDetails, run: cmdRecipeCheck},
		{name: "plugins", forms: []string{"[flags]"}, summary: "list the plugins: ID, kind, version, language, source", run: cmdPlugins},
		{name: "data generate", forms: []string{
			"[flags] --per-class N --seed S --out DIR",
			"[flags] --paper [--per-class 900 --val 0.1 --test-splits 5 --test-per-class 100] --out DIR",
		}, summary: "write synthetic records of a generator (--source) as CSV or NumPy .npy files (--format; with --paper: the train, val and test splits that recipes use)", run: cmdDataGenerate},
		{name: "data import", forms: []string{
			"[flags] RECORDING [RECORDING...] --out DIR",
			"[flags] RECORDING --raw --out F.csv",
		}, summary: "cut a COMTRADE/WAV/CSV recording into 640-sample windows at 3.2 kHz", details: importDetails, run: cmdDataImport},
		{name: "train", forms: []string{
			"[flags] --per-class N --out W.safetensors",
			"[flags] --recipe RECIPE.toml --out W.safetensors",
		}, summary: "train one network and save its weights", run: cmdTrain},
		{name: "predict", forms: []string{
			"[flags] --weights W.safetensors[,W2.safetensors,...] --input X.csv|X.npy [--channels C] [--classes classes.txt] [--out F.csv]",
			"[flags] --model F.py:Class [--model-args k=v,...] --weights W[,W2,...] --input X.csv|X.npy [--channels C] [--out F.csv]",
			"[flags] --model F.onnx | --model SPEC.toml --weights W[,W2,...] --input X.csv|X.npy [--channels C] [--out F.csv]",
			"[flags] [--model M] --weights W --mc-dropout S [--seed N] --input X.csv|X.npy [--channels C] [--out F.csv]",
		}, summary: "class probabilities of your waveforms: the mean over the weights files (or MC-dropout draws), and the predicted class", details: predictDetails, run: cmdPredict},
		{name: "explain", forms: []string{
			"[flags] --weights W.safetensors[,W2.safetensors,...] --input X.csv|X.npy [--channels C] --explainer NAME --target C|predicted|FILE",
			"[flags] --model F.py:Class [--model-args k=v,...] --weights W[,W2,...] --input X.csv|X.npy [--channels C] --explainer NAME --target C|predicted|FILE",
			"[flags] --model F.onnx | --model SPEC.toml --weights W[,W2,...] --input X.csv|X.npy [--channels C] --explainer NAME --target C|predicted|FILE",
			"[flags] [--model M] --weights W --mc-dropout S [--seed N] --input X.csv|X.npy [--channels C] --explainer NAME --target C|predicted|FILE",
		}, summary: "explain your own waveforms (CSV or .npy, any channels) under your own weights, your own PyTorch model, or an ONNX or graph-spec network computed in Go", details: explainDetails, run: cmdExplain},
		{name: "evaluate", forms: []string{
			"[flags] --weights W[,W2,...] | --model M --input X.csv|X.npy --maps A.csv --target C|predicted|FILE --metric ID [--set key=value ...] [--mask S.csv] [--explainer NAME]",
			"[--metric ID [--set key=value ...] ...] [--out DIR] RUN_DIR",
		}, summary: "score maps made by any tool (uaxai explain, Captum, ...) with explanation metrics of Quantus's names: faithfulness, robustness, complexity, localisation", details: evaluateDetails(), run: cmdEvaluate},
		{name: "paper", forms: []string{
			"[flags] [--quick] [--dir DIR] [--out DIR]",
			"--report PAPER_DIR",
		}, summary: "run every recipe of recipes/paper in the paper's order and write REPORT.md beside the paper's values", run: cmdPaper},
		{name: "slurm submit", forms: []string{
			"[flags] RECIPE.toml",
			"[--dry-run] --resume RUN_DIR",
		}, summary: "run a recipe on Slurm: a fit array, an explain array, a merge job (--resume: resubmit the failed tasks)", details: slurmSubmitDetails, run: cmdSlurmSubmit},
		{name: "slurm status", forms: []string{"RUN_DIR"}, summary: "units done/running/missing, each array task's Slurm state", run: cmdSlurmStatus},
		{name: "bench", forms: []string{"[flags]"}, summary: "ms a map of every operator on the paper's network, beside PyTorch's", run: cmdBench},
		{name: "help", forms: []string{"[COMMAND]"}, summary: "this overview, or a command's usage and flags", run: cmdHelp},
		{name: "plugin serve", forms: []string{
			"ID",
			"--script PATH [--memory BYTES] [--instances N]",
		}, summary: "serve a built-in plugin or a summary script to a host", internal: true, run: cmdPluginServe},
	}
}

// lookup returns the command named by the first one or two words of args
// and the arguments after them. An error says what is wrong and which
// commands there are.
func lookup(args []string) (*command, []string, error) {
	if len(args) >= 2 {
		if c := find(args[0] + " " + args[1]); c != nil {
			return c, args[2:], nil
		}
	}
	if c := find(args[0]); c != nil {
		return c, args[1:], nil
	}
	if sub := group(args[0]); len(sub) > 0 {
		if len(args) == 1 || strings.HasPrefix(args[1], "-") {
			return nil, nil, fmt.Errorf("%s needs a command (accepted: %s)", args[0], strings.Join(sub, ", "))
		}
		return nil, nil, fmt.Errorf("unknown command %q (accepted: %s)", args[0]+" "+args[1], strings.Join(sub, ", "))
	}
	return nil, nil, fmt.Errorf("unknown command %q (accepted: %s)", args[0], strings.Join(names(), ", "))
}

// find returns the command called name, or nil.
func find(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// group returns the commands whose first word is word ("data": data
// generate, data import), if they have more than one.
func group(word string) []string {
	var out []string
	for _, c := range commands {
		if first, _, two := strings.Cut(c.name, " "); two && first == word {
			out = append(out, c.name)
		}
	}
	return out
}

// names lists the commands a user runs.
func names() []string {
	var out []string
	for _, c := range commands {
		if !c.internal {
			out = append(out, c.name)
		}
	}
	return out
}

// writeOverview writes the overview of every command (those of the group
// word only, if word is not "").
func writeOverview(w io.Writer, word string) {
	var b strings.Builder
	if word == "" {
		b.WriteString("uaxai: uncertainty-aware explanations of time-series classifiers (the paper's power-quality CNN, your PyTorch, ONNX or graph-spec networks)\n\n")
		b.WriteString("Usage: uaxai COMMAND [ARGS] [flags]\n\nCommands:\n")
	} else {
		b.WriteString("Commands of uaxai " + word + ":\n")
	}
	for _, c := range commands {
		if first, _, _ := strings.Cut(c.name, " "); word != "" && first != word {
			continue
		}
		for _, f := range c.forms {
			fmt.Fprintf(&b, "  uaxai %s %s\n", c.name, f)
		}
		s := c.summary
		if c.internal {
			s = "(internal) " + s
		}
		fmt.Fprintf(&b, "      %s\n", s)
	}
	b.WriteString("\n'uaxai help COMMAND' or 'uaxai COMMAND -h' shows a command's arguments and flags.\n")
	io.WriteString(w, b.String())
}

// usageLines is c's "Usage:" block.
func (c *command) usageLines() string {
	var b strings.Builder
	for i, f := range c.forms {
		lead := "Usage:"
		if i > 0 {
			lead = "      "
		}
		fmt.Fprintf(&b, "%s uaxai %s %s\n", lead, c.name, f)
	}
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// onceWarner returns an sdk.Warn function that writes each distinct
// warning to w once ("uaxai: warning: ..."), from any goroutine.
func onceWarner(w io.Writer) func(string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[msg] {
			seen[msg] = true
			fmt.Fprintf(w, "uaxai: warning: %s\n", msg)
		}
	}
}

// run executes one command; it returns the process exit code: 0, 1 when
// the command fails, 2 for a command that does not exist, 130 when
// interrupted.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeOverview(stderr, "")
		return 2
	}
	if isHelp(args[0]) && args[0] != "help" { // uaxai help is a command
		writeOverview(stdout, "")
		return 0
	}
	c, rest, err := lookup(args)
	if err != nil {
		word := ""
		if len(group(args[0])) > 0 {
			word = args[0]
			if len(args) == 2 && isHelp(args[1]) { // uaxai data -h: the group's commands
				writeOverview(stdout, word)
				return 0
			}
		}
		fmt.Fprintf(stderr, "uaxai: %v\n\n", err)
		writeOverview(stderr, word)
		return 2
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
	if err := nn.KernelsError(); err != nil {
		fmt.Fprintf(stderr, "uaxai: %v\n", err)
		return 2
	}
	ctx = sdk.WithWarn(ctx, onceWarner(stderr))
	err = c.run(ctx, rest, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var u unknownCommand
	if errors.As(err, &u) {
		fmt.Fprintf(stderr, "uaxai: %v\n\n", err)
		writeOverview(stderr, u.group)
		return 2
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "uaxai: interrupted:", err)
		return 130
	}
	fmt.Fprintln(stderr, "uaxai:", err)
	return 1
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return slices.Contains([]string{"-h", "-help", "--help", "help"}, arg)
}

// unknownCommand is the error of uaxai help with a command that does not
// exist: exit code 2 and the overview (of group, if it is one).
type unknownCommand struct {
	err   error
	group string
}

func (u unknownCommand) Error() string { return u.err.Error() }

// cmdHelp is uaxai help [COMMAND]: the overview, a group's commands, or
// the command's usage and flags (what its -h prints), on stdout.
func cmdHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("help", stdout, stderr)
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		writeOverview(stdout, "")
		return nil
	}
	words = strings.Fields(strings.Join(words, " ")) // uaxai help "data import"
	if len(words) == 1 && len(group(words[0])) > 0 {
		writeOverview(stdout, words[0])
		return nil
	}
	c, rest, err := lookup(words)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unknown command %q (accepted: %s)", strings.Join(words, " "), strings.Join(names(), ", "))
	}
	if err != nil {
		u := unknownCommand{err: fmt.Errorf("help: %w", err)}
		if len(group(words[0])) > 0 {
			u.group = words[0]
		}
		return u
	}
	return c.run(ctx, []string{"-h"}, stdout, stderr)
}

// flagSet is a FlagSet of one command, whose usage is the command's in
// the table. -h prints it to stdout; a flag error prints it to stderr.
type flagSet struct {
	*flag.FlagSet
	cmd    *command
	stdout io.Writer
	stderr io.Writer
	usage  bytes.Buffer // what the last Parse printed as usage
}

// flags returns the flagSet of the command called name, which reports
// errors instead of exiting.
func flags(name string, stdout, stderr io.Writer) *flagSet {
	c := find(name)
	if c == nil {
		panic("uaxai: no command " + name + " in the table")
	}
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), cmd: c, stdout: stdout, stderr: stderr}
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fs.usage.WriteString(c.usageLines())
		fmt.Fprintf(&fs.usage, "\n%s\n", c.summary)
		if c.details != "" {
			fmt.Fprintf(&fs.usage, "\n%s\n", strings.TrimSpace(c.details))
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fs.usage.WriteString("\nFlags:\n")
			fs.SetOutput(&fs.usage)
			fs.PrintDefaults()
			fs.SetOutput(stderr)
		}
	}
	return fs
}

// usageError is the error of a command line whose arguments do not fit
// the command's forms: they, and where to find the flags.
func (fs *flagSet) usageError(what string) error {
	return fmt.Errorf("%s: %s\n%s(uaxai help %s shows the flags)", fs.cmd.name, what, fs.cmd.usageLines(), fs.cmd.name)
}

// parse parses flags that may come before or after positional arguments.
// -h writes the command's usage to stdout and returns flag.ErrHelp.
func parse(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		fs.usage.Reset()
		err := fs.Parse(args)
		if fs.usage.Len() > 0 {
			w := fs.stderr
			if errors.Is(err, flag.ErrHelp) {
				w = fs.stdout
			}
			w.Write(fs.usage.Bytes())
		}
		if err != nil {
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
func isSet(fs *flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
