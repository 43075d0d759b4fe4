package occlusion

import (
	"context"
	"fmt"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// BenchmarkOcclusionBaselines: one map of the golden paper network
// (window 60, stride 1) under each baseline, by a new Explainer each time
// (the cost of an ensemble member or a deterministic network), in ms a
// map.
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

// BenchmarkOcclusionChannels: one map (window 60, stride 1, baseline 0)
// of the golden paper network (C = 1) and of its three-channel golden
// twin (C = 3) under channels "each" and "all", by a new Explainer each
// time, in ms a map. "each" on C = 3 should cost
// about three one-channel maps of a signal baseline.
func BenchmarkOcclusionChannels(b *testing.B) {
	m1, x1, y1, _ := paper.Inference(b)
	m3, x3, y3, _ := paper.ThreeChannel(b)
	for _, c := range []struct {
		name     string
		m        nn.Model
		x        []float32
		y        []int
		channels string
	}{
		{"C=1", m1, x1[:640], y1[:1], Each},
		{"C=3/each", m3, x3[:3*640], y3[:1], Each},
		{"C=3/all", m3, x3[:3*640], y3[:1], All},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := sdk.ExplainRequest{X: c.x, Targets: c.y, Config: sdk.Config{"channels": c.channels}}
			for b.Loop() {
				if _, err := New().Explain(context.Background(), c.m, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/map")
		})
	}
}
