package occlusion

import (
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestServiceFailureIsTheError: a model-service request that fails (the
// served network's computation, or the service gone) is Explain's error,
// naming the explainer, the input and the request (Windows), never a
// panic.
func TestServiceFailureIsTheError(t *testing.T) {
	m, x, y, _ := paper.Inference(t)
	n := m.InputLen()
	req := sdk.ExplainRequest{X: x[:2*n], Targets: y[:2], Seeds: []uint64{1, 2}, Config: sdk.Config{"window": int64(60), "stride": int64(20)}}
	sdktest.ServiceFailure(t, func() sdk.Explainer { return New() }, m, req, "explainer.occlusion: input 0: model service: Windows: ")
}
