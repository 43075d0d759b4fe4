package mean

import (
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: sdktest.RandomDraws(3, 5, 40, 0, 1)})
}
