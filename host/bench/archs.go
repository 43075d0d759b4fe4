package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ArchNets are the golden networks `uaxai bench --archs` times:
// recipes/archs/<net>.toml with its golden PyTorch weights (archWeights).
var ArchNets = []string{"fcn", "resnet1d", "inceptiontime", "transformer"}

// archWeights is the golden state_dict of network name under the
// repository's root: testdata/golden/archs/<net>/model.safetensors, and
// the Transformer's own golden set's.
func archWeights(root, name string) string {
	if name == "transformer" {
		return filepath.Join(root, "testdata", "golden", "transformer", "model.safetensors")
	}
	return filepath.Join(root, "testdata", "golden", "archs", name, "model.safetensors")
}

// The archs cases' sizes: a forward batch of ArchBatch inputs; occlusion
// maps with the golden README's settings (Captum's window 60, stride 20,
// baseline 0), ArchMaps maps a run.
const (
	ArchBatch   = 64
	ArchWindow  = 60
	ArchStride  = 20
	ArchMaps    = 8
	archInLen   = 640
	archClasses = 16
)

// LoadArch compiles recipes/archs/<name>.toml under root and loads the
// golden PyTorch weights.
func LoadArch(root, name string) (*graph.Net, error) {
	spec, err := graph.ReadSpecFile(filepath.Join(root, "recipes", "archs", name+".toml"))
	if err != nil {
		return nil, err
	}
	net, err := graph.Compile(spec)
	if err != nil {
		return nil, err
	}
	if err := net.LoadSafetensors(archWeights(root, name)); err != nil {
		return nil, err
	}
	return net, nil
}

// ArchFLOPs is the floating-point work of one input's forward pass counted
// as the reference counts it: 2 x the multiply-adds of the conv, linear,
// dense and attention nodes: a conv's weights times its output length, a
// linear's weights, a dense layer's weights times its rows (tokens), and
// attention's projections times its L tokens plus its two products of L
// x L x E (the scores and the weighted values).
func ArchFLOPs(net *graph.Net) (float64, error) {
	var f float64
	spec := net.Spec()
	for _, p := range net.Params() {
		if len(p.Shape) < 2 {
			continue // batchnorm's, layernorm's weight is a vector
		}
		var node string
		ok := false
		for _, suf := range []string{".in_proj_weight", ".out_proj.weight", ".weight"} {
			if node, ok = strings.CutSuffix(p.Name, suf); ok {
				break
			}
		}
		if !ok {
			continue
		}
		l, err := net.Layer(node)
		if err != nil {
			return 0, err
		}
		switch spec.Nodes[l.Node].Op {
		case "dense":
			f += 2 * float64(p.Len*l.Shape.C)
		case "attention":
			L, E := l.Shape.C, l.Shape.T
			f += 2 * float64(p.Len*L)
			if strings.HasSuffix(p.Name, ".in_proj_weight") {
				f += 2 * 2 * float64(L*L*E)
			}
		case "affine":
		default:
			f += 2 * float64(p.Len*l.Shape.T)
		}
	}
	return f, nil
}

// ArchCase is one measurement on one network: Run does Units units of
// work (inputs of a forward batch, or maps) on the given goroutines.
type ArchCase struct {
	Net, Case string
	Units     int
	FLOPs     float64 // of one run
	Run       func(ctx context.Context, workers int) error
	// Path, if set, says how the runs so far computed perturbed copies
	// (occlusion: nn.GraphModel.Path).
	Path func() string
}

// ArchCases returns the forward and occlusion cases of a network. Inputs
// are seeded sines with noise; the occlusion targets are the network's own
// predictions. With w workers the forward batch is split in w parts and
// the maps are shared out, each part on a goroutine of its own with the
// Model's pool of nets (and an explainer of its own, as the engine's
// workers have).
//
// With epochN > 0 a third case, "epoch", trains the network (nn.Train,
// from its current parameters) for one epoch of epochN random records in
// batches of 64 with Adam, as archs_bench.py's epoch does; its FLOPs are
// 3 forward passes a record (forward, and a backward of about twice).
func ArchCases(name string, net *graph.Net, seed uint64, epochN int) ([]ArchCase, error) {
	fwd, err := ArchFLOPs(net)
	if err != nil {
		return nil, err
	}
	occlusion, err := explainer(occlusionID)
	if err != nil {
		return nil, err
	}
	m := nn.NewGraphModel(net)
	n := m.InputLen()
	in := net.InShape()
	if in.T != archInLen || m.Classes() != archClasses {
		return nil, fmt.Errorf("bench: %s: inputs of %d samples and %d classes; the reference's networks have %d and %d", name, in.T, m.Classes(), archInLen, archClasses)
	}
	r := rng.New(rng.Key(seed, "bench-archs", "inputs", 0, 0))
	x := make([]float32, ArchBatch*n)
	for b := 0; b < ArchBatch; b++ {
		f := 1 + float64(b%7)
		for c := 0; c < in.C; c++ { // three phases for three channels
			for t := 0; t < in.T; t++ {
				ph := 2 * math.Pi * float64(c) / float64(in.C)
				x[b*n+c*in.T+t] = float32(math.Sin(2*math.Pi*f*float64(t)/float64(in.T)-ph) + 0.3*r.NormFloat64())
			}
		}
	}
	probs := make([]float32, ArchBatch*m.Classes())
	if err := m.Probs(context.Background(), probs, x); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	targets := make([]int, ArchMaps)
	for b := range targets {
		row := probs[b*m.Classes() : (b+1)*m.Classes()]
		targets[b] = slices.Index(row, slices.Max(row))
	}
	split := func(units, workers int, f func(lo, hi int) error) error {
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := 0; w < workers; w++ {
			lo, hi := w*units/workers, (w+1)*units/workers
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w] = f(lo, hi)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	cfg := sdk.Config{"window": int64(ArchWindow), "stride": int64(ArchStride), "baseline": 0.0}
	rows := float64((archInLen-ArchWindow)/ArchStride + 2) // the windows and the input itself
	cases := []ArchCase{
		{Net: name, Case: "forward64", Units: ArchBatch, FLOPs: ArchBatch * fwd,
			Run: func(ctx context.Context, workers int) error {
				return split(ArchBatch, workers, func(lo, hi int) error {
					return m.Probs(ctx, probs[lo*m.Classes():hi*m.Classes()], x[lo*n:hi*n])
				})
			}},
		{Net: name, Case: "occlusion", Units: ArchMaps, FLOPs: ArchMaps * rows * fwd,
			Run: func(ctx context.Context, workers int) error {
				return split(ArchMaps, workers, func(lo, hi int) error {
					if lo == hi {
						return nil
					}
					_, err := occlusion().Explain(ctx, m, sdk.ExplainRequest{X: x[lo*n : hi*n], Targets: targets[lo:hi], Config: cfg})
					return err
				})
			},
			Path: func() string { return m.Path().String() }},
	}
	if epochN > 0 {
		arch := nn.GraphArch(net.Spec())
		d := nn.Data{N: epochN, Len: n, X: make([]float32, epochN*n), Y: make([]int, epochN)}
		for i := range d.X {
			d.X[i] = float32(r.NormFloat64())
		}
		for i := range d.Y {
			d.Y[i] = i % m.Classes()
		}
		tc := nn.PaperTrainConfig()
		tc.Epochs, tc.Batch, tc.LR, tc.WeightDecay = 1, ArchBatch, 1e-3, 0
		init := append([]float32(nil), net.Theta...)
		cases = append(cases, ArchCase{Net: name, Case: "epoch", Units: epochN, FLOPs: 3 * float64(epochN) * fwd,
			Run: func(ctx context.Context, workers int) error {
				_, err := nn.Train(ctx, arch, d, nn.Data{}, tc, seed, nn.TrainOptions{Workers: workers, Init: init})
				return err
			}})
	}
	return cases, nil
}

// ArchResult is a case measured with some workers: the best and the
// median wall time of a run, in ms.
type ArchResult struct {
	ArchCase
	Workers      int
	Best, Median float64
	Reps         int
}

// MeasureArch runs c once to warm up, then reps times or for minTime.
func MeasureArch(ctx context.Context, c ArchCase, workers, reps int, minTime time.Duration) (ArchResult, error) {
	if err := c.Run(ctx, workers); err != nil {
		return ArchResult{}, fmt.Errorf("%s %s: %w", c.Net, c.Case, err)
	}
	var ms []float64
	start := time.Now()
	for len(ms) < reps || time.Since(start) < minTime {
		if err := ctx.Err(); err != nil {
			return ArchResult{}, err
		}
		t0 := time.Now()
		if err := c.Run(ctx, workers); err != nil {
			return ArchResult{}, fmt.Errorf("%s %s: %w", c.Net, c.Case, err)
		}
		ms = append(ms, float64(time.Since(t0).Nanoseconds())/1e6)
	}
	slices.Sort(ms)
	return ArchResult{ArchCase: c, Workers: workers, Best: ms[0], Median: median(ms), Reps: len(ms)}, nil
}

// ArchRef is one line of archs_bench.py: ms of one run of a case (a
// forward batch of 64, one map, one epoch), the best of its reps.
type ArchRef struct {
	Net     string  `json:"net"`
	Case    string  `json:"case"`
	Ms      float64 `json:"ms"`
	Median  float64 `json:"median"`
	Reps    int     `json:"reps"`
	FLOPs   float64 `json:"flops"`
	Records int     `json:"records"`
}

// ArchReference is what archs_bench.py measured.
type ArchReference struct {
	Cases map[string]ArchRef // by "net case"
	Env   RefEnv
	Torch string
}

// ParseArchReference reads archs_bench.py's output: an environment line,
// then one line a measurement; other lines are skipped.
func ParseArchReference(out io.Reader) (*ArchReference, error) {
	r := &ArchReference{Cases: map[string]ArchRef{}}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var probe struct {
			Op    string `json:"op"`
			Torch string `json:"torch"`
		}
		if json.Unmarshal(sc.Bytes(), &probe) != nil {
			continue
		}
		if probe.Op == "environment" {
			if json.Unmarshal(sc.Bytes(), &r.Env) == nil {
				r.Env.Reported = true
				r.Torch = probe.Torch
			}
			continue
		}
		var c ArchRef
		if json.Unmarshal(sc.Bytes(), &c) != nil || c.Net == "" || c.Case == "" || !(c.Ms > 0) {
			continue
		}
		r.Cases[c.Net+" "+c.Case] = c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r.Cases) == 0 {
		return nil, fmt.Errorf("archs reference: no measurement in its output")
	}
	return r, nil
}

// RunArchReference runs archs_bench.py in the environment of the paper's
// reference (referenceEnv: the malloc tuning and o.Threads threads).
func RunArchReference(ctx context.Context, o ReferenceOptions, nets []string, reps int) (*ArchReference, error) {
	if _, err := os.Stat(o.Script); err != nil {
		return nil, fmt.Errorf("archs reference: %w", err)
	}
	env := referenceEnv(os.Environ(), o.Threads)
	probe := exec.CommandContext(ctx, o.Python, "-c", probeScript)
	probe.Env = env
	if _, err := probe.Output(); err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoTorch, o.Python, err)
	}
	cmd := exec.CommandContext(ctx, o.Python, o.Script, "--threads", strconv.Itoa(o.Threads),
		"--nets", strings.Join(nets, ","), "--reps", strconv.Itoa(reps), "--epoch-n", strconv.Itoa(o.N))
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("archs reference: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return ParseArchReference(&stdout)
}

// ArchOptions configure RunArchs.
type ArchOptions struct {
	Root    string   // the repository's root: recipes/archs, testdata/golden/archs
	Nets    []string // default ArchNets
	Workers int      // goroutines of the parallel rows (the cores)
	Seed    uint64
	Reps    int
	MinTime time.Duration
	// Reference runs archs_bench.py (Ref.Script) in the same invocation;
	// Ref.N is the records of its training epoch.
	Reference bool
	Ref       ReferenceOptions
}

// RunArchs measures every network's cases on one goroutine and on
// o.Workers, runs the reference if asked, and prints the table.
func RunArchs(ctx context.Context, o ArchOptions, w, logw io.Writer) error {
	nets := o.Nets
	if len(nets) == 0 {
		nets = ArchNets
	}
	var res [][2]ArchResult
	for _, name := range nets {
		net, err := LoadArch(o.Root, name)
		if err != nil {
			return err
		}
		epochN := 0
		if o.Reference || o.Ref.N > 0 {
			epochN = max(o.Ref.N, 1)
		}
		cases, err := ArchCases(name, net, o.Seed, epochN)
		if err != nil {
			return err
		}
		for _, c := range cases {
			fmt.Fprintf(logw, "bench: %s %s\n", c.Net, c.Case)
			var pair [2]ArchResult
			for i, wk := range []int{1, o.Workers} {
				if pair[i], err = MeasureArch(ctx, c, wk, o.Reps, o.MinTime); err != nil {
					return err
				}
			}
			res = append(res, pair)
		}
	}
	var ref *ArchReference
	refNote := "reference not run (--reference=false)"
	if o.Reference {
		fmt.Fprintf(logw, "bench: PyTorch reference: %s %s --threads %d --nets %s\n", o.Ref.Python, o.Ref.Script, o.Ref.Threads, strings.Join(nets, ","))
		var err error
		ref, err = RunArchReference(ctx, o.Ref, nets, o.Reps)
		switch {
		case err == nil:
			refNote = fmt.Sprintf("reference measured in this run: torch %s, %d threads; %s", ref.Torch, o.Ref.Threads, ref.envLine())
		default:
			refNote = fmt.Sprintf("reference not measured: %v", err)
		}
	}
	fmt.Fprintf(w, "uaxai bench --archs: golden networks (640 samples a channel -> 16 classes), ops on sdk/nn's kernels (%s: UAXAI_KERNELS), GOMAXPROCS %d\n", nn.Kernels(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "ms a run, the best of >= %d runs (median in brackets); forward64: one batch of %d; occlusion: one map (window %d, stride %d, baseline 0), runs of %d maps; epoch: one training epoch of %d records, batch %d, Adam; GFLOP/s: 2 x the conv, linear, dense and attention multiply-adds (an epoch: 3 forward passes a record)\n",
		o.Reps, ArchBatch, ArchWindow, ArchStride, ArchMaps, o.Ref.N, ArchBatch)
	tbl := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	tbl.Header("network", "case", "Go, 1 goroutine, ms", fmt.Sprintf("Go, %d goroutines, ms", o.Workers), fmt.Sprintf("PyTorch, %d threads, ms", o.Ref.Threads), "PyTorch / Go", "Go GFLOP/s", "PyTorch GFLOP/s")
	cell := func(r ArchResult) string {
		return fmt.Sprintf("%.2f (%.2f)", r.Best/float64(r.unitsPerRow()), r.Median/float64(r.unitsPerRow()))
	}
	for _, p := range res {
		one, par := p[0], p[1]
		per := float64(par.unitsPerRow())
		goMs := par.Best / per
		row := []string{par.Net, par.Case, cell(one), cell(par), "not measured", "", fmt.Sprintf("%.1f", par.FLOPs/per/goMs/1e6), ""}
		if rc, ok := ref.lookup(par.Net, par.Case); ok {
			row[4] = fmt.Sprintf("%.2f (%.2f)", rc.Ms, rc.Median)
			row[5] = fmt.Sprintf("%.2f", rc.Ms/goMs)
			row[7] = fmt.Sprintf("%.1f", par.FLOPs/per/rc.Ms/1e6)
		}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	for _, p := range res {
		if p[1].Path != nil {
			fmt.Fprintf(w, "%s %s: %s\n", p[1].Net, p[1].Case, p[1].Path())
		}
	}
	fmt.Fprintln(w, refNote)
	return nil
}

// unitsPerRow is what a table row divides a run by: the forward batch is
// one unit (ms a batch), occlusion runs make Units maps (ms a map).
func (r ArchResult) unitsPerRow() int {
	if r.Case == "occlusion" {
		return r.Units
	}
	return 1
}

func (r *ArchReference) lookup(net, kase string) (ArchRef, bool) {
	if r == nil {
		return ArchRef{}, false
	}
	c, ok := r.Cases[net+" "+kase]
	return c, ok
}

func (r *ArchReference) envLine() string {
	return (&Reference{Env: r.Env}).EnvLine()
}
