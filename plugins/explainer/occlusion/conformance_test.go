package occlusion

import (
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestConformance runs the plugin conformance kit: in process and over
// gRPC, with a coarse stride so that it stays fast; with a number
// baseline and with each baseline signal (the noise's key travels as
// JSON, and the kit's batch splits must not change a record's noise).
func TestConformance(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	for _, extra := range []sdk.Config{{}, {"baseline": Mean}, {"baseline": Noise, "seed": int64(3)}, {"baseline": Fundamental, "period": 64.0}} {
		cfg := sdk.Config{"window": int64(60), "stride": int64(20)}
		for k, v := range extra {
			cfg[k] = v
		}
		sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[:4*640], Targets: y[:4], Config: cfg})
	}
}
