package variance

import (
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	draws := sdktest.RandomDraws(3, 4, 30, 0, 2)
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: draws})
}
