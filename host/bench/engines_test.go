package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/plugins/explainer/gradcam"
	"github.com/uaxai/uaxai/plugins/explainer/lime"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// graphDraws are the draws of s as graph networks (graphtest.PaperGraph,
// the layers' layout) with the same parameters.
func graphDraws(tb testing.TB, s *Setup) []nn.Model {
	tb.Helper()
	a := nn.GraphArch(graphtest.PaperGraph())
	var ms []nn.Model
	for _, d := range s.Draws {
		m, err := nn.Open(nn.Params{Arch: a, Data: d.Params().Data})
		if err != nil {
			tb.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// engineCases are the four cases of Cases on the models ms (draw 0 the
// single-draw network).
func engineCases(s *Setup, ms []nn.Model) []Case {
	occCfg := sdk.Config{"window": int64(60), "stride": int64(1), "baseline": 0.0}
	req := func(cfg sdk.Config, seeds []uint64) sdk.ExplainRequest {
		return sdk.ExplainRequest{X: s.X, Targets: s.Targets, Seeds: seeds, Config: cfg}
	}
	run := func(newExplainer func() sdk.Explainer, models []nn.Model, r sdk.ExplainRequest) func(context.Context) error {
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
	occ := func() sdk.Explainer { return occlusion.New() }
	return []Case{
		{Key: "occlusion", Maps: Batch, Run: run(occ, ms[:1], req(occCfg, nil))},
		{Key: "occlusion_mc", Maps: Batch, Run: run(occ, ms, req(occCfg, nil))},
		{Key: "gradcam", Maps: Batch, Run: run(func() sdk.Explainer { return gradcam.New() }, ms[:1], req(sdk.Config{}, nil))},
		{Key: "lime", Maps: Batch, Run: run(func() sdk.Explainer { return lime.New() }, ms[:1], req(sdk.Config{"samples": int64(128)}, s.Seeds))},
	}
}

// BenchmarkEngines runs the cases of `uaxai bench` on the paper network
// of the layer-list engine (nn.Inference) and on the same parameters as a
// graph (nn.GraphModel of graphtest.PaperGraph), side by side:
//
//	go test -run '^$' -bench Engines -count 5 ./host/bench
func BenchmarkEngines(b *testing.B) {
	s := sharedSetup(b)
	var layers []nn.Model
	for _, d := range s.Draws {
		layers = append(layers, d)
	}
	engines := []struct {
		name   string
		models []nn.Model
	}{{"layers", layers}, {"graph", graphDraws(b, s)}}
	for i := range engineCases(s, layers) {
		for _, e := range engines {
			c := engineCases(s, e.models)[i]
			b.Run(c.Key+"/"+e.name, func(b *testing.B) {
				ctx := context.Background()
				runtime.LockOSThread() // the thread's CPU time is the case's
				defer runtime.UnlockOSThread()
				c0, ok0 := threadCPU()
				for b.Loop() {
					if err := c.Run(ctx); err != nil {
						b.Fatal(err)
					}
				}
				c1, ok1 := threadCPU()
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N*c.Maps), "ms/map")
				if ok0 && ok1 {
					b.ReportMetric(float64(c1-c0)/1e6/float64(b.N*c.Maps), "cpu-ms/map")
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
