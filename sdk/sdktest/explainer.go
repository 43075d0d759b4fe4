package sdktest

import (
	"slices"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ExplainerCase is a small batch to explain: a model draw (built with
// nn.NewModel), len(Targets) inputs in X, and the explainer's config.
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
	h, cancel := newHarness(t, info.Info, sdk.KindExplainer)
	defer cancel()
	ctx := h.ctx
	h.checkConfig("in process", sdk.CheckedExplainer(impl).Check, c.Config)

	m, err := nn.NewModel(c.Model)
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
	request := func(lo, hi int, seeds []uint64) sdk.ExplainRequest {
		return sdk.ExplainRequest{
			X: slices.Clone(c.X[lo*n : hi*n]), Targets: slices.Clone(c.Targets[lo:hi]),
			Seeds: slices.Clone(seeds[lo:hi]), Config: c.Config,
		}
	}
	local := sdk.CheckedExplainer(impl)

	req := request(0, b, seeds)
	want, err := local.Explain(ctx, m, req)
	if err != nil {
		h.fatalf("in process: %v", err)
	}
	if d := diff32(req.X, c.X); d != "" {
		h.errorf("Explain modified its input X (%s); treat the request as read-only", d)
	}
	if !slices.Equal(req.Targets, c.Targets) || !slices.Equal(req.Seeds, seeds) {
		h.errorf("Explain modified its request's targets or seeds; treat the request as read-only")
	}

	// Determinism.
	if got, err := local.Explain(ctx, m, request(0, b, seeds)); err != nil {
		h.errorf("in process, second call: %v", err)
	} else if d := diffMaps(got, want); d != "" {
		h.errorf("not deterministic: the same request gave different maps (%s)", d)
	}

	// Batch split: each input's map depends on that input (and its seed)
	// only.
	if b >= 2 {
		half := b / 2
		for _, r := range [][2]int{{0, half}, {half, b}} {
			got, err := local.Explain(ctx, m, request(r[0], r[1], seeds))
			if err != nil {
				h.errorf("in process, inputs %d..%d alone: %v", r[0], r[1]-1, err)
				continue
			}
			if d := diffMaps(got, want[r[0]:r[1]]); d != "" {
				h.errorf("maps depend on the batch: inputs %d..%d explained alone differ from the full batch (%s, input index relative to %d)", r[0], r[1]-1, d, r[0])
			}
		}
	}

	// Seeds.
	if got, err := local.Explain(ctx, m, request(0, b, otherSeeds(seeds))); err != nil {
		h.errorf("in process, other seeds: %v", err)
	} else {
		same := diffMaps(got, want) == ""
		switch {
		case info.Stochastic && same:
			h.errorf("declares itself stochastic but its maps did not change when every seed changed; draw the random state from req.Seeds[i]")
		case !info.Stochastic && !same:
			h.errorf("declares itself deterministic (Stochastic false) but its maps changed with the seeds (%s); set Stochastic or ignore req.Seeds", diffMaps(got, want))
		}
	}

	// Over the wire.
	v, stop := h.serve(impl, sdk.KindExplainer)
	defer stop()
	remote := v.(sdk.Explainer)
	if ri := remote.Info(); ri != info {
		h.errorf("remote Info %+v differs from in-process Info %+v", ri, info)
	}
	h.checkConfig("remote", remote.Check, c.Config)
	got, err := remote.Explain(ctx, m, request(0, b, seeds))
	if err != nil {
		h.errorf("remote: %v", err)
	} else if d := diffMaps(got, want); d != "" {
		h.errorf("remote maps differ from in-process maps (%s)", d)
	}
}
