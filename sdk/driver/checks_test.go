package driver

import (
	"context"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

// TestBandEdges: a band whose lower and upper meet (the draws agree) is a
// band; one whose lower exceeds its upper is not.
func TestBandEdges(t *testing.T) {
	local, err := LocalSummary(fakeSummary{sdk.OutputBand})
	if err != nil {
		t.Fatal(err)
	}
	remote := serveTest(t, fakeSummary{sdk.OutputBand}).(sdk.Summary)
	agree := [][][]float64{{{4, 1}, {4, 7}}, {{2, 2}, {2, 2}}}
	for name, s := range map[string]sdk.Summary{"remote": remote, "in-process": local} {
		res, err := s.Summarise(context.Background(), agree, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res[0].Lower[0] != 4 || res[0].Upper[0] != 4 || res[1].Lower[1] != res[1].Upper[1] {
			t.Errorf("%s: bands %+v, want lower = upper where the draws agree", name, res)
		}
	}
}

// TestFitRequestChecks: a training or validation set whose shape is
// wrong is refused before it reaches the posterior, in process and over
// the wire.
func TestFitRequestChecks(t *testing.T) {
	local, err := LocalPosterior(fakePosterior{})
	if err != nil {
		t.Fatal(err)
	}
	remote := serveTest(t, fakePosterior{}).(sdk.Posterior)
	good := sdk.Dataset{X: make([]float32, 8), Y: []int{0, 1}, N: 2, Len: 4}
	bad := sdk.Dataset{X: make([]float32, 7), Y: []int{0, 1}, N: 2, Len: 4}
	for name, p := range map[string]sdk.Posterior{"remote": remote, "in-process": local} {
		for _, c := range []struct {
			train, val sdk.Dataset
			want       string
		}{
			{bad, good, "bad request: training set: 7 values for 2 rows of 4"},
			{good, bad, "bad request: validation set: 7 values for 2 rows of 4"},
		} {
			_, err := p.Fit(context.Background(), sdk.FitRequest{Arch: fakeArch(4), Train: c.train, Val: c.val})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "posterior.fake: Fit: ") {
				t.Errorf("%s: %v, want %q named after the plugin", name, err, c.want)
			}
		}
	}
}
