package occlusion

import (
	"context"
	"strings"
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
	ctx := context.Background()
	dm, stop := sdktest.ServedModel(t, sdktest.BrokenModel(m))
	n := m.InputLen()
	req := sdk.ExplainRequest{X: x[:2*n], Targets: y[:2], Seeds: []uint64{1, 2}, Config: sdk.Config{"window": int64(60), "stride": int64(20)}}
	_, err := New().Explain(ctx, dm, req)
	for _, want := range []string{"explainer.occlusion: input 0: model service: Windows: ", "the network is broken", "(Internal)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a broken served network: %v; want an error containing %q", err, want)
		}
	}
	stop()
	_, err = New().Explain(ctx, dm, req)
	if err == nil || !strings.Contains(err.Error(), "explainer.occlusion: input 0: model service: Windows: ") {
		t.Errorf("the service closed: %v; want the Windows request's error", err)
	}
}
