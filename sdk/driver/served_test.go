package driver

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/nn"
)

// servingPosterior hands two networks as parameters (Sample) or serves
// them from a model service of its own in the host's socket directory
// (SampleDraws); addr, if set, replaces the address it answers.
type servingPosterior struct {
	params []nn.Params
	addr   string
	svc    *ModelService
}

func (p *servingPosterior) Info() sdk.Info {
	return sdk.Info{ID: "posterior.serving", Version: "1", ServesModels: true}
}
func (p *servingPosterior) Check(sdk.Config, int) error { return nil }
func (p *servingPosterior) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	return sdk.Artifact{Arch: req.Arch}, nil
}
func (p *servingPosterior) Sample(context.Context, sdk.Artifact, sdk.SampleRequest) ([]nn.Params, error) {
	return p.params, nil
}
func (p *servingPosterior) SampleDraws(_ context.Context, _ sdk.Artifact, req sdk.SampleRequest) ([]sdk.Draw, error) {
	p.svc = NewModelServiceIn(req.SocketDir)
	out := make([]sdk.Draw, len(p.params))
	for s, d := range p.params {
		m, err := nn.NewModel(d)
		if err != nil {
			return nil, err
		}
		addr, h, err := p.svc.Add(m)
		if err != nil {
			return nil, err
		}
		if p.addr != "" {
			addr = p.addr
		}
		out[s] = sdk.Draw{Served: &sdk.ModelRef{Address: addr, Handle: h}}
	}
	return out, nil
}

// gradExplainer is gradient x input, and says whether its model was a
// local network.
type gradExplainer struct{}

func (gradExplainer) Info() sdk.Info {
	return sdk.Info{ID: "explainer.grad", Version: "1", Needs: sdk.NeedsInputGrad}
}
func (gradExplainer) Check(sdk.Config) error { return nil }
func (gradExplainer) Explain(_ context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	if _, local := m.(*nn.GraphModel); local != (req.Config["want"] == "local") {
		return nil, errors.New("the model is not where the draw is")
	}
	n := m.InputLen()
	g := make([]float32, len(req.X))
	if err := m.InputGrad(context.Background(), g, nil, req.X, req.Targets); err != nil {
		panic(err)
	}
	maps := make([][]float64, len(req.Targets))
	for b := range maps {
		maps[b] = make([]float64, n)
		for i := range maps[b] {
			maps[b][i] = float64(g[b*n+i]) * float64(req.X[b*n+i])
		}
	}
	return maps, nil
}

// TestServedDrawsOverTheWire: a posterior plugin that serves its draws,
// and an explainer plugin that does not want the model service, both over
// gRPC: the explainer computes through the posterior's service and gives
// the same maps as with the draws' parameters; a reference outside the
// socket directory the host gave is refused, naming the posterior and the
// draw.
func TestServedDrawsOverTheWire(t *testing.T) {
	arch := convArch()
	lay, err := nn.NewLayout(arch)
	if err != nil {
		t.Fatal(err)
	}
	var params []nn.Params
	for s := range 2 {
		d := make([]float32, lay.Size)
		nn.Init(lay, d, rand.New(rand.NewPCG(uint64(s), 3)))
		params = append(params, nn.Params{Arch: arch, Data: d})
	}
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: &testWriter{t}})
	host := NewModelService()
	defer host.Close()
	serve := func(p sdk.Plugin, kind string) any {
		rpc, stop, err := proto.InProcess(p, PluginSetFor(Options{Models: host}), DialOptions(), quiet)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		v, err := rpc.Dispense(kind)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	sp := &servingPosterior{params: params}
	post := serve(sp, "posterior").(sdk.Posterior)
	if !post.Info().ServesModels {
		t.Fatal("ServesModels did not cross the wire")
	}
	draws, err := SampleDraws(context.Background(), post, sdk.Artifact{Arch: arch}, sdk.SampleRequest{Seeds: []uint64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.svc.Close()
	ex := serve(gradExplainer{}, "explainer").(Explainer)
	x := make([]float32, 3*arch.InChannels*arch.InLen)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	req := sdk.ExplainRequest{X: x, Targets: []int{0, 1, 2}}
	for s, d := range draws {
		if d.Served == nil {
			t.Fatalf("draw %d is not served", s)
		}
		explain := func(d sdk.Draw, want string) [][]float64 {
			m, err := ex.Load(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			r := req
			r.Config = sdk.Config{"want": want}
			maps, err := m.Explain(context.Background(), r)
			if err != nil {
				t.Fatalf("draw %d (%s): %v", s, want, err)
			}
			return maps
		}
		if a, b := explain(d, "served"), explain(sdk.Draw{Params: params[s]}, "local"); !reflect.DeepEqual(a, b) {
			t.Errorf("draw %d: maps of the served draw differ from those of its parameters", s)
		}
	}
	// A plugin that answers a socket outside the directory it was given.
	bad := &servingPosterior{params: params, addr: host.lis.Addr().String()}
	_, err = SampleDraws(context.Background(), serve(bad, "posterior").(sdk.Posterior), sdk.Artifact{Arch: arch}, sdk.SampleRequest{Seeds: []uint64{1, 2}})
	bad.svc.Close()
	if err == nil || !strings.Contains(err.Error(), "posterior.serving: Sample: draw 0: the served draw's address") || !strings.Contains(err.Error(), "is not a socket directly inside the socket directory") {
		t.Errorf("a reference outside the socket directory: %v", err)
	}
}
