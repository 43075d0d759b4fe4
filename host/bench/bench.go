package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// Draws is the number of MC-dropout draws of the "occlusion, 20 MC-dropout
// draws" case.
const Draws = 20

// Setup is the networks and inputs every case runs on.
type Setup struct {
	Draws   []*nn.GraphModel // MC-dropout draws of one trained network; Draws[0] is the single-draw network
	X       []float32        // Batch inputs of 640 samples
	Targets []int
	Seeds   []uint64 // LIME's seeds, one an input

	// occlusion, gradcam and lime make the built-in explainers.
	occlusion, gradcam, lime func() sdk.Explainer
}

// Batch is the number of inputs one Explain call gets (the engine's
// default batch is 32 records; 16 keeps a bench run short).
const Batch = 16

// NewSetup trains the network (a few seconds on one core) and makes the
// inputs: Batch generated waveforms, one of each class.
func NewSetup(ctx context.Context, seed uint64) (*Setup, error) {
	cfg := data.DefaultConfig()
	train, err := data.MakeSplit(ctx, cfg, seed, "bench-train", 40, nil)
	if err != nil {
		return nil, err
	}
	test, err := data.MakeSplit(ctx, cfg, seed, "bench-test", 1, nil)
	if err != nil {
		return nil, err
	}
	ex, err := explainers(occlusionID, gradcamID, limeID)
	if err != nil {
		return nil, err
	}
	mc, err := posterior(mcdropoutID)
	if err != nil {
		return nil, err
	}
	tc := nn.PaperTrainConfig()
	tc.Epochs = 3
	// MC dropout's Fit: the paper's network with dropout (its default p)
	// on fc2's input, trained on one worker.
	art, err := mc.Fit(ctx, sdk.FitRequest{Arch: nn.PaperArch(), Train: toData(train), Training: tc, Config: sdk.Config{}, Seed: seed, Workers: 1})
	if err != nil {
		return nil, fmt.Errorf("bench: training the network: %w", err)
	}
	seeds := make([]uint64, Draws)
	for s := range seeds {
		seeds[s] = rng.Key(seed, "posterior", mcdropoutID, -1, s)
	}
	draws, err := mc.Sample(ctx, art, sdk.SampleRequest{Seeds: seeds})
	if err != nil {
		return nil, err
	}
	s := &Setup{occlusion: ex[0], gradcam: ex[1], lime: ex[2]}
	for _, d := range draws {
		m, err := nn.NewModel(d)
		if err != nil {
			return nil, err
		}
		s.Draws = append(s.Draws, m)
	}
	td := toData(test)
	s.X = td.X[:Batch*td.Len]
	s.Targets = td.Y[:Batch]
	for i := range Batch {
		s.Seeds = append(s.Seeds, engine.ExplainerSeed(seed, "bench", i, 0, 0))
	}
	return s, nil
}

func toData(s data.Split) nn.Data {
	n := len(s.Records[0].X)
	d := nn.Data{N: len(s.Records), Len: n, X: make([]float32, 0, len(s.Records)*n), Y: make([]int, len(s.Records))}
	for i, r := range s.Records {
		for _, v := range r.X {
			d.X = append(d.X, float32(v))
		}
		d.Y[i] = r.Label
	}
	return d
}

// Case is one measurement: Run makes Maps maps (each of them, for the
// MC-dropout case, under all 20 draws).
type Case struct {
	Name string
	Key  string  // short name: the benchmark's and the reference's
	Goal float64 // ms a map the issue asks for
	Maps int
	// FLOPs is the floating-point work of one map done the plain way
	// (full forward passes, counting the multiply-adds of the conv and
	// dense layers twice); 0 when not reported.
	FLOPs float64
	Run   func(ctx context.Context) error
}

// Cases returns the four measurements on s. Every run of a case starts
// from a new explainer value, so that nothing one run caches serves the
// next.
func (s *Setup) Cases() []Case {
	m := s.Draws[0]
	occCfg := sdk.Config{"window": int64(60), "stride": int64(1), "baseline": 0.0}
	req := func(cfg sdk.Config, seeds []uint64) sdk.ExplainRequest {
		return sdk.ExplainRequest{X: s.X, Targets: s.Targets, Seeds: seeds, Config: cfg}
	}
	run := func(newExplainer func() sdk.Explainer, models []*nn.GraphModel, r sdk.ExplainRequest) func(context.Context) error {
		return func(ctx context.Context) error {
			e := newExplainer()
			for _, m := range models {
				if _, err := e.Explain(ctx, m, r); err != nil {
					return err
				}
			}
			return nil
		}
	}
	occ := s.occlusion
	fwd := forwardFLOPs(m.Arch())
	windows := float64(640 - 60 + 1)
	return []Case{
		{Name: "occlusion, w60 s1", Key: "occlusion", Goal: 2, Maps: Batch, FLOPs: (windows + 1) * fwd,
			Run: run(occ, []*nn.GraphModel{m}, req(occCfg, nil))},
		{Name: fmt.Sprintf("occlusion, %d MC-dropout draws (a map: all draws)", Draws), Key: "occlusion_mc", Goal: 4, Maps: Batch, FLOPs: Draws * (windows + 1) * fwd,
			Run: run(occ, s.Draws, req(occCfg, nil))},
		{Name: "Grad-CAM, conv4", Key: "gradcam", Goal: 0.2, Maps: Batch, FLOPs: 0,
			Run: run(s.gradcam, []*nn.GraphModel{m}, req(sdk.Config{}, nil))},
		{Name: "LIME, 128 samples", Key: "lime", Goal: 5, Maps: Batch, FLOPs: 128 * fwd,
			Run: run(s.lime, []*nn.GraphModel{m}, req(sdk.Config{"samples": int64(128)}, s.Seeds))},
	}
}

// forwardFLOPs counts 2 x the multiply-adds of one input's forward pass
// through the conv and linear nodes of a (ArchFLOPs); 0 for an arch that
// does not compile.
func forwardFLOPs(a nn.Arch) float64 {
	net, err := a.GraphNet()
	if err != nil {
		return 0
	}
	f, err := ArchFLOPs(net)
	if err != nil {
		return 0
	}
	return f
}

// Result is the outcome of measuring one case.
type Result struct {
	Case
	Reps   int
	Median float64 // ms a map of wall time, the median over the reps
	Min    float64
	// CPU is the median CPU time a map of the thread that ran the case
	// (Linux; 0 elsewhere): unlike the wall time, it hardly grows when
	// other processes load the machine.
	CPU float64
}

// Measure runs c once to warm up, then reps times, or for at least minTime
// if that takes more reps, and returns the median time a map.
func Measure(ctx context.Context, c Case, reps int, minTime time.Duration) (Result, error) {
	if err := c.Run(ctx); err != nil {
		return Result{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	// The case runs on this goroutine, locked to its thread so that the
	// thread's CPU time is the case's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ms, cpu []float64
	start := time.Now()
	for len(ms) < reps || time.Since(start) < minTime {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		c0, cok := threadCPU()
		t0 := time.Now()
		if err := c.Run(ctx); err != nil {
			return Result{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		ms = append(ms, float64(time.Since(t0).Nanoseconds())/1e6/float64(c.Maps))
		if c1, ok := threadCPU(); ok && cok {
			cpu = append(cpu, float64(c1-c0)/1e6/float64(c.Maps))
		}
	}
	slices.Sort(ms)
	r := Result{Case: c, Reps: len(ms), Median: median(ms), Min: ms[0]}
	if len(cpu) > 0 {
		slices.Sort(cpu)
		r.CPU = median(cpu)
	}
	return r, nil
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
