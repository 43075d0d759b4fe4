package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/plugins/explainer/gradcam"
	"github.com/uaxai/uaxai/plugins/explainer/gradinput"
	"github.com/uaxai/uaxai/plugins/explainer/lime"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The tests of this file check served draws (sdk.Info.ServesModels): a
// posterior that serves its networks from model services of its own gives
// a run the same predictions, maps and results as the same networks
// handed to the host as parameters.

const servedLen, servedMembers = 24, 3

func servedArch() nn.Arch {
	return nn.Arch{Name: "served-test", InChannels: 1, InLen: servedLen, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv4", Out: 4, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: classes},
	}}
}

// netsPosterior is a finite posterior of randomly initialised networks
// (member s from seed s); serving, it serves them instead of handing
// their parameters: each Sample starts a model service in the host's
// socket directory (driver.NewModelServiceIn) over the members.
type netsPosterior struct {
	serving bool
	break_  string // "socket": answer a socket nobody serves; "handle": a handle the service does not know
	mu      sync.Mutex
	svcs    []*driver.ModelService
}

func (p *netsPosterior) Info() sdk.Info {
	return sdk.Info{ID: "posterior.nets", Version: "1.0.0", Finite: true, ServesModels: p.serving}
}
func (p *netsPosterior) Check(sdk.Config, int) error { return nil }
func (p *netsPosterior) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	lay, err := nn.NewLayout(req.Arch)
	if err != nil {
		return sdk.Artifact{}, err
	}
	a := sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{}}
	for s := range servedMembers {
		d := make([]float32, lay.Size)
		nn.Init(lay, d, rand.New(rand.NewPCG(uint64(s), 7)))
		a.Tensors[strconv.Itoa(s)] = d
	}
	return a, nil
}
func (p *netsPosterior) Sample(_ context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	out := make([]nn.Params, len(req.Seeds))
	for s := range out {
		out[s] = nn.Params{Arch: a.Arch, Data: a.Tensors[strconv.Itoa(s)]}
	}
	return out, nil
}
func (p *netsPosterior) SampleDraws(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]sdk.Draw, error) {
	if req.SocketDir == "" {
		return nil, errors.New("no socket directory")
	}
	ps, err := p.Sample(ctx, a, req)
	if err != nil {
		return nil, err
	}
	svc := driver.NewModelServiceIn(req.SocketDir)
	p.mu.Lock()
	p.svcs = append(p.svcs, svc)
	p.mu.Unlock()
	out := make([]sdk.Draw, len(ps))
	for s, d := range ps {
		m, err := nn.NewModel(d)
		if err != nil {
			return nil, err
		}
		addr, h, err := svc.Add(m)
		if err != nil {
			return nil, err
		}
		switch {
		case p.break_ == "socket" && s == 1:
			addr = addr[:len(addr)-len(".sock")] + "-gone.sock"
		case p.break_ == "handle" && s == 1:
			h++
		}
		out[s] = sdk.Draw{Served: &sdk.ModelRef{Address: addr, Handle: h}}
	}
	return out, nil
}

func (p *netsPosterior) close() {
	for _, s := range p.svcs {
		s.Close()
	}
}

// realPlugins resolves posterior.nets and the built-in Go explainers, in
// process; host gives the serving posterior its socket directories.
type realPlugins struct {
	post *netsPosterior
	host *driver.ModelService
	sum  sdk.Summary
}

func (r realPlugins) Posterior(context.Context, string) (sdk.Posterior, error) {
	return driver.LocalPosteriorIn(r.post, r.host)
}
func (r realPlugins) Explainer(_ context.Context, id string) (driver.Explainer, error) {
	switch id {
	case occlusion.ID:
		return driver.LocalExplainer(occlusion.New())
	case gradcam.ID:
		return driver.LocalExplainer(gradcam.New())
	case lime.ID:
		return driver.LocalExplainer(lime.New())
	case gradinput.ID:
		return driver.LocalExplainer(gradinput.New())
	}
	return nil, fmt.Errorf("no explainer %s", id)
}
func (r realPlugins) Summary(context.Context, string) (sdk.Summary, error) {
	return driver.LocalSummary(r.sum)
}

// servedPlan explains 6 records of two splits with the four explainers.
func servedPlan() Plan {
	rng := rand.New(rand.NewPCG(5, 6))
	var tests []TestSplit
	for si, name := range []string{"test-0", "test-1"} {
		const n = 6
		d := sdk.Dataset{N: n, Len: servedLen, X: make([]float32, n*servedLen), Y: make([]int, n)}
		masks := make([][]bool, n)
		for r := range n {
			for t := range servedLen {
				d.X[r*servedLen+t] = float32(rng.NormFloat64())
			}
			d.Y[r] = (r + si) % classes
			masks[r] = make([]bool, servedLen)
			masks[r][(3*r+si)%servedLen] = true
		}
		tests = append(tests, TestSplit{Name: name, Data: d, Masks: masks})
	}
	return Plan{
		Seed: seed, Workers: 1, Batch: 4, Arch: servedArch(), Tests: tests,
		Classes: []int{0, 1, 2}, Groups: map[string][]int{"all": {0, 1, 2}}, Abs: true,
		Posteriors: []Step{{ID: "posterior.nets", Label: "Nets", Draws: servedMembers}},
		Explainers: []Step{
			{ID: occlusion.ID, Label: "Occlusion", Target: "true", Config: sdk.Config{"window": int64(4), "stride": int64(2)}},
			{ID: gradcam.ID, Label: "Grad-CAM", Target: "true"},
			{ID: lime.ID, Label: "LIME", Target: "true", Config: sdk.Config{"samples": int64(40)}},
			{ID: gradinput.ID, Label: "GxI", Target: "true"},
		},
		Summaries: []Step{{ID: "summary.spy", Label: "Spy"}},
	}
}

// TestServedDrawsSameRun is the metamorphic relation: the run whose
// draws the posterior serves has the same predictions, maps (the spy
// summary's inputs) and results as the run of the same networks handed as
// parameters, for occlusion, Grad-CAM, LIME and gradient x input.
func TestServedDrawsSameRun(t *testing.T) {
	run := func(serving bool) (*Results, [][][]float64, [][]float64) {
		host := driver.NewModelService()
		defer host.Close()
		post := &netsPosterior{serving: serving}
		defer post.close()
		spy := &spySummary{}
		p := servedPlan()
		var probs [][]float64
		p.Sink = sinkFunc{predicted: func(_ Step, pr Prediction) error {
			probs = pr.Probs
			return nil
		}}
		res, _, err := Run(context.Background(), p, realPlugins{post: post, host: host, sum: spy}, nil, nil)
		if err != nil {
			t.Fatalf("serving %v: %v", serving, err)
		}
		if serving && len(post.svcs) != 1 {
			t.Fatalf("the serving posterior was sampled %d times, want once", len(post.svcs))
		}
		return res, spy.draws, probs
	}
	params, pmaps, pprobs := run(false)
	served, smaps, sprobs := run(true)
	if len(pmaps) == 0 {
		t.Fatal("the summary saw no maps")
	}
	if !reflect.DeepEqual(pmaps, smaps) {
		t.Errorf("the maps of served draws differ from those of the same parameters")
	}
	if !reflect.DeepEqual(params.Rows, served.Rows) {
		t.Errorf("results differ:\nparameters %+v\nserved     %+v", params.Rows, served.Rows)
	}
	if len(pprobs) != 2 || !reflect.DeepEqual(pprobs, sprobs) {
		t.Errorf("predictive probabilities differ: %v vs %v", pprobs, sprobs)
	}
}

// TestServedDrawsBroken: a served draw whose socket nobody serves, or
// whose handle its service does not know, is an error naming the
// posterior, the draw and what failed; so is a serving posterior in a host
// without a socket directory.
func TestServedDrawsBroken(t *testing.T) {
	for _, c := range []struct {
		break_ string
		host   bool
		want   []string
	}{
		{"socket", true, []string{"posterior.nets", "draw 1", "-gone.sock", "Describe"}},
		{"handle", true, []string{"posterior.nets", "draw 1", "no model with handle"}},
		{"", false, []string{"posterior.nets", "no directory for their sockets"}},
	} {
		var host *driver.ModelService
		if c.host {
			host = driver.NewModelService()
		}
		post := &netsPosterior{serving: true, break_: c.break_}
		_, _, err := Run(context.Background(), servedPlan(), realPlugins{post: post, host: host, sum: &spySummary{}}, nil, nil)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %v, want it to say %q", c.break_, err, w)
			}
		}
		post.close()
		if host != nil {
			host.Close()
		}
	}
}

// TestServedDrawDies: a posterior whose service stops mid-run (its
// process died) makes the run fail, naming the posterior and the draw.
func TestServedDrawDies(t *testing.T) {
	host := driver.NewModelService()
	defer host.Close()
	post := &netsPosterior{serving: true}
	var once sync.Once
	obs := advanceFunc(func() { once.Do(post.close) })
	_, _, err := Run(context.Background(), servedPlan(), realPlugins{post: post, host: host, sum: &spySummary{}}, nil, obs)
	if err == nil || !strings.Contains(err.Error(), "model service at") || !strings.Contains(err.Error(), "draw ") {
		t.Errorf("error %v, want a failed call of a served draw's model service", err)
	}
}

// advanceFunc is an Observer that calls f at every explained batch.
type advanceFunc func()

func (advanceFunc) Stage(string, int)     {}
func (f advanceFunc) Advance(int, string) { f() }
func (advanceFunc) Note(string)           {}
