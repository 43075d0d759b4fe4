package agreement

import (
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	draws := sdktest.RandomDraws(3, 8, 30, 0, 7)
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: draws})
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: draws, Config: map[string]any{"eta": 0.75, "delta": -0.2}})
}
