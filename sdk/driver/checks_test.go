package driver

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// lateReporter keeps Fit's progress function and reports after Fit
// returned, from several goroutines during it.
type lateReporter struct {
	fakePosterior
	keep *func(sdk.Progress)
}

func (l lateReporter) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	*l.keep = req.Progress
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); req.Progress(sdk.Progress{Done: i, Total: 8}) }()
	}
	wg.Wait()
	return sdk.Artifact{Arch: req.Arch}, nil
}

// TestLocalProgress: in process as over the wire, progress reports reach
// the host one at a time, and none after Fit returned.
func TestLocalProgress(t *testing.T) {
	var keep func(sdk.Progress)
	local, err := LocalPosterior(lateReporter{keep: &keep})
	if err != nil {
		t.Fatal(err)
	}
	var inside, calls, overlaps int32
	req := sdk.FitRequest{Arch: fakeArch(4), Progress: func(sdk.Progress) {
		if atomic.AddInt32(&inside, 1) > 1 {
			atomic.AddInt32(&overlaps, 1)
		}
		time.Sleep(time.Millisecond)
		atomic.AddInt32(&calls, 1)
		atomic.AddInt32(&inside, -1)
	}}
	if _, err := local.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if calls != 8 || overlaps != 0 {
		t.Errorf("%d reports, %d overlapping; want 8, none overlapping", calls, overlaps)
	}
	keep(sdk.Progress{Done: 9, Total: 8})
	if calls != 8 {
		t.Errorf("a report after Fit returned reached the host")
	}
}
