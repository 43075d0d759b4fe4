package occlusion

import (
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestConformance runs the plugin conformance kit: in process and over
// gRPC, with a coarse stride so that it stays fast.
func TestConformance(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	p, err := nn.LoadParams(filepath.Join(dir, "model.safetensors"), nn.PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	x, y := golden.Inputs(t, dir)
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[:4*640], Targets: y[:4], Config: sdk.Config{"window": int64(60), "stride": int64(20)}})
}
