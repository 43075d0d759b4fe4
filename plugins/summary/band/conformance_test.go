package band

import (
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(3, 10, 30, 0, 1), Config: map[string]any{"k": int64(2), "l": int64(9)}})
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(2, 4, 20, 0, 2), Config: map[string]any{"k": int64(1), "l": int64(4)}})
}

func TestConformanceInterpolated(t *testing.T) {
	sdktest.Summary(t, NewInterpolated(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(3, 20, 30, 0, 3)})
	sdktest.Summary(t, NewInterpolated(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(2, 7, 20, 0, 4), Config: map[string]any{"beta": 0.5}})
}
