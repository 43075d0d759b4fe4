package occlusion

import (
	"context"
	"fmt"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
)

// BenchmarkOcclusionBaselines: one map of the golden paper network
// (window 60, stride 1) under each baseline, by a new Explainer each time
// (the trunk cache misses: the cost of an ensemble member or a
// deterministic network), in ms a map.
func BenchmarkOcclusionBaselines(b *testing.B) {
	m, x, y, _ := paper.Inference(b)
	for _, baseline := range []any{0.0, Mean, Noise, Fundamental} {
		b.Run(fmt.Sprint(baseline), func(b *testing.B) {
			req := sdk.ExplainRequest{X: x[:640], Targets: y[:1], Config: sdk.Config{"baseline": baseline}}
			for b.Loop() {
				if _, err := New().Explain(context.Background(), m, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/map")
		})
	}
}
