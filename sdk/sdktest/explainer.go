package sdktest

import (
	"context"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ExplainerCase is a small batch to explain: a model draw (built with
// nn.Open), len(Targets) inputs in X, and the explainer's config.
// Seeds, if nil, are derived; otherwise one per input.
type ExplainerCase struct {
	Model   nn.Params
	X       []float32
	Targets []int
	Seeds   []uint64
	Config  sdk.Config
}

// Explainer runs the conformance checks on an explainer (see the package
// documentation). The case should take well under a second to explain:
// it is explained about eight times.
func Explainer(t testing.TB, impl sdk.Explainer, c ExplainerCase) {
	t.Helper()
	info := impl.Info()
	h, cancel := newHarness(t, impl, sdk.KindExplainer)
	defer cancel()
	ctx := h.ctx
	local, err := driver.LocalExplainer(impl)
	if err != nil {
		h.fatalf("%v", err)
	}
	h.checkConfig("in process", local.Check, c.Config)

	seeds, request := prepare(h, c)
	b := len(c.Targets)
	lm, err := local.Load(ctx, sdk.Draw{Params: c.Model})
	if err != nil {
		h.fatalf("in process: Load: %v", err)
	}
	defer lm.Close()
	req := request(0, b, seeds)
	want, err := lm.Explain(ctx, req)
	if err != nil {
		h.fatalf("in process: %v", err)
	}
	if d := diff32(req.X, c.X); d != "" {
		h.errorf("Explain modified its input X (%s); treat the request as read-only", d)
	}
	if !slices.Equal(req.Targets, c.Targets) || !slices.Equal(req.Seeds, seeds) {
		h.errorf("Explain modified its request's targets or seeds; treat the request as read-only")
	}

	checkBehaviour(h, "in process", lm.Explain, info, request, seeds, want)

	// Over the wire: with the parameters sent to the plugin process (unless
	// the explainer wants the model service), and with the host's model
	// service. Both must give the in-process maps, bit for bit: the
	// service computes with the same sdk/nn.
	if !info.WantsModel {
		overTheWire(h, impl, info, c, driver.Options{}, "remote", request, seeds, want)
	}
	svc := driver.NewModelService()
	defer svc.Close()
	overTheWire(h, impl, info, c, driver.Options{Models: svc, ServeModels: true}, "remote with the model service", request, seeds, want)
	if n := svc.Len(); n != 0 {
		h.errorf("remote with the model service: %d draws still served after their release", n)
	}
}

// prepare checks the case (its model builds, X holds one input a target,
// one seed an input if any) and returns its seeds, derived when it has
// none, and request(lo, hi, seeds), a fresh request for inputs lo..hi-1.
func prepare(h *harness, c ExplainerCase) ([]uint64, func(lo, hi int, seeds []uint64) sdk.ExplainRequest) {
	h.t.Helper()
	m, err := nn.Open(c.Model)
	if err != nil {
		h.fatalf("bad case: building the model: %v", err)
	}
	b, n := len(c.Targets), m.InputLen()
	if b == 0 || len(c.X) != b*n {
		h.fatalf("bad case: %d values in X for %d targets of input length %d", len(c.X), b, n)
	}
	seeds := c.Seeds
	if seeds == nil {
		seeds = defaultSeeds(b, "explain")
	}
	if len(seeds) != b {
		h.fatalf("bad case: %d seeds for %d inputs", len(seeds), b)
	}
	return seeds, func(lo, hi int, seeds []uint64) sdk.ExplainRequest {
		return sdk.ExplainRequest{
			X: slices.Clone(c.X[lo*n : hi*n]), Targets: slices.Clone(c.Targets[lo:hi]),
			Seeds: slices.Clone(seeds[lo:hi]), Config: c.Config,
		}
	}
}

// overTheWire serves impl over gRPC with the driver options o, explains
// the case in two batches under one loaded draw, checks the maps against
// the in-process ones, and checks that a released draw explains nothing.
func overTheWire(h *harness, impl sdk.Explainer, info sdk.Info, c ExplainerCase, o driver.Options, where string,
	request func(lo, hi int, seeds []uint64) sdk.ExplainRequest, seeds []uint64, want [][]float64) {
	ctx := h.ctx
	b := len(c.Targets)
	v, stop := h.serveWith(impl, sdk.KindExplainer, driver.PluginSetFor(o))
	defer stop()
	remote := v.(driver.Explainer)
	if ri := remote.Info(); !sameInfo(ri, info) {
		h.errorf("%s: Info %+v differs from in-process Info %+v", where, ri, info)
	}
	h.checkConfig(where, remote.Check, c.Config)
	rm, err := remote.Load(ctx, sdk.Draw{Params: c.Model})
	if err != nil {
		h.fatalf("%s: Load: %v", where, err)
	}
	for _, r := range [][2]int{{0, b / 2}, {b / 2, b}} { // two batches under one loaded draw
		lo, hi := r[0], r[1]
		if lo == hi {
			continue
		}
		got, err := rm.Explain(ctx, request(lo, hi, seeds))
		if err != nil {
			h.errorf("%s: %v", where, err)
		} else if d := diffMaps(got, want[lo:hi]); d != "" {
			h.errorf("%s: maps of inputs %d..%d differ from in-process maps (%s)", where, lo, hi-1, d)
		}
	}
	if err := rm.Close(); err != nil {
		h.errorf("%s: releasing the draw: %v", where, err)
	}
	if _, err := rm.Explain(ctx, request(0, b, seeds)); err == nil {
		h.errorf("%s: Explain under a released draw succeeded", where)
	}
}

// checkBehaviour checks, through explain, what any explainer must do
// whatever runs it: the same request gives the same maps (want, the
// answer to request(0, b, seeds)), whatever the batch split, and the
// seeds change a stochastic explainer's maps and no other's. where
// prefixes the errors of the calls.
func checkBehaviour(h *harness, where string, explain func(context.Context, sdk.ExplainRequest) ([][]float64, error), info sdk.Info,
	request func(lo, hi int, seeds []uint64) sdk.ExplainRequest, seeds []uint64, want [][]float64) {
	h.t.Helper()
	ctx, b := h.ctx, len(want)
	if got, err := explain(ctx, request(0, b, seeds)); err != nil {
		h.errorf("%s, second call: %v", where, err)
	} else if d := diffMaps(got, want); d != "" {
		h.errorf("not deterministic: the same request gave different maps (%s)", d)
	}
	// Batch split: each input's map depends on that input (and its seed)
	// only.
	if b >= 2 {
		half := b / 2
		for _, r := range [][2]int{{0, half}, {half, b}} {
			got, err := explain(ctx, request(r[0], r[1], seeds))
			if err != nil {
				h.errorf("%s, inputs %d..%d alone: %v", where, r[0], r[1]-1, err)
				continue
			}
			if d := diffMaps(got, want[r[0]:r[1]]); d != "" {
				h.errorf("maps depend on the batch: inputs %d..%d explained alone differ from the full batch (%s, input index relative to %d)", r[0], r[1]-1, d, r[0])
			}
		}
	}
	if got, err := explain(ctx, request(0, b, otherSeeds(seeds))); err != nil {
		h.errorf("%s, other seeds: %v", where, err)
	} else {
		same := diffMaps(got, want) == ""
		switch {
		case info.Stochastic && same:
			h.errorf("declares itself stochastic but its maps did not change when every seed changed; draw the random state from req.Seeds[i]")
		case !info.Stochastic && !same:
			h.errorf("declares itself deterministic (Stochastic false) but its maps changed with the seeds (%s); set Stochastic or ignore req.Seeds", diffMaps(got, want))
		}
	}
}
