package gradcam

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// shapeOnly is a model known by its shape only, as the model service
// describes a PyTorch draw: the same network, an Arch with no layers.
type shapeOnly struct{ nn.Model }

func (m shapeOnly) Arch() nn.Arch {
	a := m.Model.Arch()
	return nn.Arch{Name: "torch-net", InChannels: a.InChannels, InLen: a.InLen}
}

// TestShapeOnlyModel: on a model without sdk/nn layers, align "none"
// gives the same maps as on the network itself (the raw map, zeros past
// the layer's positions), and "centre", which needs receptive fields, is
// refused naming what is accepted.
func TestShapeOnlyModel(t *testing.T) {
	m, x, y, _ := paper.ThreeChannel(t)
	cfg := sdk.Config{"align": AlignNone}
	want, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	got, err := New().Explain(context.Background(), shapeOnly{m}, sdk.ExplainRequest{X: x, Targets: y, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for b := range want {
		if !slices.Equal(got[b], want[b]) {
			t.Fatalf("map %d differs from the network's own", b)
		}
	}
	_, err = New().Explain(context.Background(), shapeOnly{m}, sdk.ExplainRequest{X: x, Targets: y})
	if err == nil || !strings.Contains(err.Error(), `accepted: align = "none"`) || !strings.Contains(err.Error(), `"torch-net"`) {
		t.Errorf("centre on a model known by its shape only: %v", err)
	}
}
