package lime

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
// naming the explainer, the input and the request (Spans), never a
// panic.
func TestServiceFailureIsTheError(t *testing.T) {
	m, x, y, _ := paper.Inference(t)
	ctx := context.Background()
	dm, stop := sdktest.ServedModel(t, sdktest.BrokenModel(m))
	n := m.InputLen()
	req := sdk.ExplainRequest{X: x[:2*n], Targets: y[:2], Seeds: []uint64{1, 2}, Config: sdk.Config{"samples": int64(16)}}
	_, err := New().Explain(ctx, dm, req)
	for _, want := range []string{"explainer.lime: input 0: model service: Spans: ", "the network is broken", "(Internal)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a broken served network: %v; want an error containing %q", err, want)
		}
	}
	stop()
	_, err = New().Explain(ctx, dm, req)
	if err == nil || !strings.Contains(err.Error(), "explainer.lime: input 0: model service: Spans: ") {
		t.Errorf("the service closed: %v; want the Spans request's error", err)
	}
}
