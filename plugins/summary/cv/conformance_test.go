package cv

import (
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	draws := sdktest.RandomDraws(3, 6, 30, 1, 5) // mean away from 0: cv stays moderate
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: draws})
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: draws, Config: map[string]any{"kappa": 0.5}})
}
