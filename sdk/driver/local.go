package driver

import (
	"context"
	"fmt"
	"sync"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/check"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Local wraps an in-process plugin so that it behaves as a remote one
// does: errors name the plugin and the method, requests and answers are
// validated, and a panic becomes an error. It returns the kind and a
// value of that kind's host-side type (sdk.Posterior, Explainer or
// sdk.Summary), after Describe has checked the plugin's Info.
func Local(p sdk.Plugin) (sdk.Kind, any, error) {
	kind, info, err := sdk.Describe(p)
	if err != nil {
		return "", nil, err
	}
	switch kind {
	case sdk.KindPosterior:
		return kind, &localPosterior{described: described{info}, impl: p.(sdk.Posterior)}, nil
	case sdk.KindExplainer:
		return kind, &localExplainer{described{info}, p.(sdk.Explainer)}, nil
	default:
		return kind, &localSummary{described{info}, p.(sdk.Summary)}, nil
	}
}

// LocalPosterior is Local for a posterior.
func LocalPosterior(p sdk.Posterior) (sdk.Posterior, error) {
	_, v, err := Local(p)
	if err != nil {
		return nil, err
	}
	return v.(sdk.Posterior), nil
}

// LocalPosteriorIn is LocalPosterior for a posterior that may serve its
// draws (sdk.Info.ServesModels): their sockets go in directories that
// models makes (ModelService.DrawDir), which its Close removes.
func LocalPosteriorIn(p sdk.Posterior, models *ModelService) (sdk.Posterior, error) {
	post, err := LocalPosterior(p)
	if err != nil {
		return nil, err
	}
	post.(*localPosterior).models = models
	return post, nil
}

// LocalExplainer is Local for an explainer.
func LocalExplainer(e sdk.Explainer) (Explainer, error) {
	_, v, err := Local(e)
	if err != nil {
		return nil, err
	}
	return v.(Explainer), nil
}

// LocalSummary is Local for a summary.
func LocalSummary(s sdk.Summary) (sdk.Summary, error) {
	_, v, err := Local(s)
	if err != nil {
		return nil, err
	}
	return v.(sdk.Summary), nil
}

// guarded calls f, turning its panic into an error and naming its error
// after the plugin and the method.
func guarded(id, method string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = check.Recovered(id, method, r)
		}
	}()
	if err := f(); err != nil {
		return pluginErr(id, method, err)
	}
	return nil
}

type localPosterior struct {
	described
	impl   sdk.Posterior
	models *ModelService // makes the socket directories of served draws
}

func (c *localPosterior) Check(cfg sdk.Config, draws int) error {
	return guarded(c.info.ID, "Check", func() error { return c.impl.Check(cfg, draws) })
}

// Parts forwards to the plugin if it is parted (sdk.Parted) and checks
// its answer; a plugin that is not parted has 0 parts.
func (c *localPosterior) Parts(cfg sdk.Config) (int, error) {
	p, ok := c.impl.(sdk.Parted)
	if !ok {
		return 0, nil
	}
	var k int
	err := guarded(c.info.ID, "Parts", func() (err error) {
		if k, err = p.Parts(cfg); err != nil {
			return err
		}
		return check.Parts(int64(k))
	})
	if err != nil {
		return 0, err
	}
	return k, nil
}

func (c *localPosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	if err := checkFitRequest(req); err != nil {
		return sdk.Artifact{}, pluginErr(c.info.ID, "Fit", err)
	}
	// As sdk.Serve does for a plugin process, a posterior that is not
	// parted is not asked for a part.
	if _, ok := c.impl.(sdk.Parted); !ok {
		if err := check.Unparted(int64(req.Part), int64(req.Parts)); err != nil {
			return sdk.Artifact{}, pluginErr(c.info.ID, "Fit", err)
		}
	}
	// As over the wire, progress reports reach the host one at a time,
	// and none after Fit returns.
	if report := req.Progress; report != nil {
		var mu sync.Mutex
		done := false
		defer func() {
			mu.Lock()
			done = true
			mu.Unlock()
		}()
		req.Progress = func(p sdk.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				report(p)
			}
		}
	}
	var a sdk.Artifact
	err := guarded(c.info.ID, "Fit", func() (err error) {
		if a, err = c.impl.Fit(ctx, req); err != nil {
			return err
		}
		return checkArtifact(a)
	})
	if err != nil {
		return sdk.Artifact{}, err
	}
	return a, nil
}

func (c *localPosterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	draws, err := c.SampleDraws(ctx, a, req)
	if err != nil {
		return nil, err
	}
	return paramsOf(c.info.ID, draws)
}

// SampleDraws samples the plugin's draws (sdk.DrawSampler's of a
// posterior that serves them, in a socket directory the driver makes)
// and checks them as the gRPC client does.
func (c *localPosterior) SampleDraws(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]sdk.Draw, error) {
	if err := checkSampleRequest(req); err != nil {
		return nil, pluginErr(c.info.ID, "Sample", err)
	}
	ds, serves := c.impl.(sdk.DrawSampler)
	serves = serves && c.info.ServesModels
	req.SocketDir = ""
	if serves {
		var err error
		if req.SocketDir, err = drawDir(c.models); err != nil {
			return nil, pluginErr(c.info.ID, "Sample", err)
		}
	}
	var d []sdk.Draw
	err := guarded(c.info.ID, "Sample", func() error {
		if !serves {
			ps, err := c.impl.Sample(ctx, a, req)
			if err != nil {
				return err
			}
			d = sdk.ParamsDraws(ps)
			return checkDrawsOut(ps, len(req.Seeds))
		}
		var err error
		if d, err = ds.SampleDraws(ctx, a, req); err != nil {
			return err
		}
		return checkDraws(ctx, d, req)
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// checkDraws checks the draws of a posterior that serves them: all
// served (checkServed) or all parameters (checkDrawsOut).
func checkDraws(ctx context.Context, d []sdk.Draw, req sdk.SampleRequest) error {
	var refs []sdk.ModelRef
	var ps []nn.Params
	for s, x := range d {
		if x.Served != nil && x.Params.Data != nil {
			return fmt.Errorf("draw %d has both parameters and a served model (want one of them)", s)
		}
		if x.Served != nil {
			refs = append(refs, *x.Served)
		} else {
			ps = append(ps, x.Params)
		}
	}
	if len(refs) > 0 && len(ps) > 0 {
		return fmt.Errorf("%d draws are served and %d are parameters (want all one way)", len(refs), len(ps))
	}
	if len(refs) > 0 {
		return checkServed(ctx, refs, req.SocketDir, len(req.Seeds), sdk.CallLimit{})
	}
	return checkDrawsOut(ps, len(req.Seeds))
}

type localExplainer struct {
	described
	impl sdk.Explainer
}

func (c *localExplainer) Check(cfg sdk.Config) error {
	return guarded(c.info.ID, "Check", func() error { return c.impl.Check(cfg) })
}

// Load builds the draw's model in process, once; a served draw's model
// is a client of its posterior's model service.
func (c *localExplainer) Load(ctx context.Context, draw sdk.Draw) (Model, error) {
	m, err := openDraw(ctx, draw, ModelCalls{}) // in process: no limits (as Options.InProcess's built-ins)
	if err != nil {
		return nil, pluginErr(c.info.ID, "Load", err)
	}
	return &localModel{e: c, m: m}, nil
}

// localModel is one draw loaded into an in-process explainer.
type localModel struct {
	e  *localExplainer
	mu sync.Mutex
	m  *drawModel // nil once closed
}

func (l *localModel) Explain(ctx context.Context, req sdk.ExplainRequest) ([][]float64, error) {
	l.mu.Lock()
	id, m := l.e.info.ID, l.m
	l.mu.Unlock()
	if m == nil {
		return nil, pluginErr(id, "Explain", errClosed)
	}
	n := m.inputLen()
	if err := check.Batch(n, m.classes(), req.X, req.Targets, req.Seeds, l.e.info.Stochastic); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	var maps [][]float64
	err := guarded(id, "Explain", func() error {
		return m.call(ctx, func(nm nn.Model) (err error) {
			if maps, err = l.e.impl.Explain(ctx, nm, req); err != nil {
				return err
			}
			return checkMaps(maps, len(req.Targets), n)
		})
	})
	if err != nil {
		return nil, err
	}
	return maps, nil
}

// PerturbedPath is how the draw's model computed the perturbed copies of
// occlusion and LIME so far (nn.GraphModel.Path), and false for a model
// that does not say (not a graph network, or served from elsewhere).
func (l *localModel) PerturbedPath() (nn.PathStats, bool) {
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	if m == nil {
		return nn.PathStats{}, false
	}
	return nn.PathStatsOf(m.m)
}

func (l *localModel) Close() error {
	l.mu.Lock()
	m := l.m
	l.m = nil
	l.mu.Unlock()
	if m != nil {
		return m.close()
	}
	return nil
}

type localSummary struct {
	described
	impl sdk.Summary
}

func (c *localSummary) Check(cfg sdk.Config) error {
	return guarded(c.info.ID, "Check", func() error { return c.impl.Check(cfg) })
}

func (c *localSummary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	id := c.info.ID
	if err := check.Draws(draws, c.info.MinDraws); err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	var res []sdk.Result
	err := guarded(id, "Summarise", func() (err error) {
		if res, err = c.impl.Summarise(ctx, draws, cfg); err != nil {
			return err
		}
		return checkResults(c.info.Output, res, draws)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
