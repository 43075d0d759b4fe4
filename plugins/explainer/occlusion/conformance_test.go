package occlusion

import (
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestConformance runs the plugin conformance kit: in process and over
// gRPC, with a coarse stride so that it stays fast.
func TestConformance(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[:4*640], Targets: y[:4], Config: sdk.Config{"window": int64(60), "stride": int64(20)}})
}
