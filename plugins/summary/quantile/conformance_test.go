package quantile

import (
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(3, 7, 40, 0, 1)})
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(2, 20, 25, 0, 2), Config: map[string]any{"alpha": 0.05}})
}
