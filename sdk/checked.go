package sdk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn"
)

// This file holds the checks every plugin answer passes before the host
// sees it, both for remote plugins (the gRPC clients run them) and for
// in-process ones (the Checked wrappers run them), so that the two behave
// the same: errors name the plugin, answers are validated, panics become
// errors.

// pluginError is an error of a plugin's method: "<id>: <method>: <text>".
// It unwraps to the original error, so errors.Is(err, context.Canceled)
// and status.Code(err) still work.
type pluginError struct {
	msg string
	err error
}

func (e *pluginError) Error() string { return e.msg }
func (e *pluginError) Unwrap() error { return e.err }

// pluginErr prefixes err with the plugin ID and the method. A plugin that
// already starts its messages with its ID does not get it twice.
func pluginErr(id, method string, err error) error {
	text := strings.TrimPrefix(err.Error(), id+": ")
	return &pluginError{msg: id + ": " + method + ": " + text, err: err}
}

// recovered turns a panic of a plugin's method into an error that holds
// the panic value and the stack.
func recovered(id, method string, r any) error {
	return fmt.Errorf("%s: %s: panic: %v\n%s", id, method, r, debug.Stack())
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkExplainRequest checks a batch before it is sent to an explainer.
func checkExplainRequest(m nn.Model, req ExplainRequest, stochastic bool) error {
	if m == nil {
		return errors.New("bad request: nil model")
	}
	n := m.InputLen()
	if n <= 0 {
		return fmt.Errorf("bad request: model input length %d", n)
	}
	b := len(req.Targets)
	if b == 0 {
		return errors.New("bad request: empty batch (no targets)")
	}
	if len(req.X) != b*n {
		return fmt.Errorf("bad request: x has %d values, want %d (%d targets x input length %d)", len(req.X), b*n, b, n)
	}
	k := m.Classes()
	for i, t := range req.Targets {
		if t < 0 || t >= k {
			return fmt.Errorf("bad request: input %d: target class %d out of range 0..%d", i, t, k-1)
		}
	}
	switch {
	case len(req.Seeds) == b:
	case len(req.Seeds) == 0 && !stochastic:
	case stochastic:
		return fmt.Errorf("bad request: a stochastic explainer needs one seed per input: %d seeds for %d inputs", len(req.Seeds), b)
	default:
		return fmt.Errorf("bad request: %d seeds for %d inputs (want one per input, or none)", len(req.Seeds), b)
	}
	return nil
}

// checkMaps checks an explainer's answer: one map of n finite values for
// each of b inputs.
func checkMaps(maps [][]float64, b, n int) error {
	if len(maps) != b {
		return fmt.Errorf("returned %d maps for a batch of %d inputs (want one map per input)", len(maps), b)
	}
	for i, m := range maps {
		if len(m) != n {
			return fmt.Errorf("input %d: map has %d values, want %d (the model's input length)", i, len(m), n)
		}
		for j, v := range m {
			if !finite(v) {
				return fmt.Errorf("input %d: map value %d is %v (want finite values)", i, j, v)
			}
		}
	}
	return nil
}

// checkDrawsIn checks a summary's input: for each input, S >= max(1,
// minDraws) draws of the same length N >= 1.
func checkDrawsIn(draws [][][]float64, minDraws int) error {
	if len(draws) == 0 {
		return errors.New("bad request: empty batch (no inputs)")
	}
	for i, d := range draws {
		if len(d) == 0 {
			return fmt.Errorf("bad request: input %d has no draws", i)
		}
		if len(d) < minDraws {
			return fmt.Errorf("bad request: input %d has %d draws; the summary needs at least %d", i, len(d), minDraws)
		}
		n := len(d[0])
		if n == 0 {
			return fmt.Errorf("bad request: input %d: draw 0 is empty", i)
		}
		for s, r := range d {
			if len(r) != n {
				return fmt.Errorf("bad request: input %d: draw %d has %d values, draw 0 has %d (want S x N)", i, s, len(r), n)
			}
		}
	}
	return nil
}

// checkResults checks a summary's answer to a batch.
func checkResults(out OutputKind, res []Result, draws [][][]float64) error {
	if len(res) != len(draws) {
		return fmt.Errorf("returned %d results for a batch of %d inputs (want one result per input)", len(res), len(draws))
	}
	vec := func(i int, name string, v []float64, n int) error {
		if len(v) != n {
			return fmt.Errorf("input %d: %s has %d values, want %d (the length of its draws) for a %s summary", i, name, len(v), n, out)
		}
		for j, x := range v {
			if !finite(x) {
				return fmt.Errorf("input %d: %s value %d is %v (want finite values)", i, name, j, x)
			}
		}
		return nil
	}
	for i, r := range res {
		n := len(draws[i][0])
		switch out {
		case OutputMap:
			if err := vec(i, "map", r.Map, n); err != nil {
				return err
			}
		case OutputSet:
			if len(r.Set) != n {
				return fmt.Errorf("input %d: set has %d values, want %d (the length of its draws) for a set summary", i, len(r.Set), n)
			}
		case OutputBand:
			if err := vec(i, "lower", r.Lower, n); err != nil {
				return err
			}
			if err := vec(i, "upper", r.Upper, n); err != nil {
				return err
			}
			for j := range r.Lower {
				if r.Lower[j] > r.Upper[j] {
					return fmt.Errorf("input %d: band index %d has lower %v > upper %v (want lower <= upper)", i, j, r.Lower[j], r.Upper[j])
				}
			}
		default:
			return fmt.Errorf("declares output %q (accepted: map, set, band)", out)
		}
	}
	return nil
}

// checkParams checks one parameter draw against its architecture.
func checkParams(p nn.Params) error {
	lay, err := nn.NewLayout(p.Arch)
	if err != nil {
		return err
	}
	if len(p.Data) != lay.Size {
		return fmt.Errorf("%d parameters, want %d for arch %q", len(p.Data), lay.Size, p.Arch.Name)
	}
	for j, v := range p.Data {
		if !finite(float64(v)) {
			return fmt.Errorf("parameter %d is %v (want finite values)", j, v)
		}
	}
	return nil
}

// checkDrawsOut checks a posterior's answer to Sample.
func checkDrawsOut(draws []nn.Params, want int) error {
	if len(draws) != want {
		return fmt.Errorf("returned %d draws for %d seeds (want one draw per seed)", len(draws), want)
	}
	for s, d := range draws {
		if err := checkParams(d); err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
	}
	return nil
}

// checkArtifact checks a posterior's answer to Fit.
func checkArtifact(a Artifact) error {
	if err := a.Arch.Validate(); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	for name, t := range a.Tensors {
		for j, v := range t {
			if !finite(float64(v)) {
				return fmt.Errorf("artifact tensor %q value %d is %v (want finite values)", name, j, v)
			}
		}
	}
	return nil
}

// checkDataset checks a dataset's shape.
func checkDataset(name string, d Dataset) error {
	if d.N < 0 || d.Len < 0 || len(d.X) != d.N*d.Len {
		return fmt.Errorf("bad request: %s set: %d values for %d rows of %d", name, len(d.X), d.N, d.Len)
	}
	if len(d.Y) != d.N && len(d.Y) != 0 {
		return fmt.Errorf("bad request: %s set: %d labels for %d rows", name, len(d.Y), d.N)
	}
	return nil
}

func checkFitRequest(req FitRequest) error {
	if err := req.Arch.Validate(); err != nil {
		return fmt.Errorf("bad request: %w", err)
	}
	if err := checkDataset("training", req.Train); err != nil {
		return err
	}
	return checkDataset("validation", req.Val)
}

func checkSampleRequest(req SampleRequest) error {
	if len(req.Seeds) == 0 {
		return errors.New("bad request: no seeds (one draw per seed)")
	}
	return nil
}

// CheckedPosterior wraps an in-process posterior so that it behaves as a
// remote one does: errors name the plugin and the method, requests and
// answers are validated (draw count, parameter count, finite values) and
// a panic becomes an error. A remote or already checked posterior is
// returned as is.
func CheckedPosterior(p Posterior) Posterior {
	switch p.(type) {
	case *checkedPosterior, *posteriorClient:
		return p
	}
	return &checkedPosterior{impl: p, id: p.Info().ID}
}

type checkedPosterior struct {
	impl Posterior
	id   string
}

func (c *checkedPosterior) Info() PosteriorInfo { return c.impl.Info() }

// checkedCheck calls a plugin's Check, with its panics recovered and its
// error named after the plugin.
func checkedCheck(id string, cfg Config, check func(Config) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered(id, "Check", r)
		}
	}()
	if err := check(cfg); err != nil {
		return pluginErr(id, "Check", err)
	}
	return nil
}

func (c *checkedPosterior) Check(cfg Config) error { return checkedCheck(c.id, cfg, c.impl.Check) }

func (c *checkedPosterior) Fit(ctx context.Context, req FitRequest) (a Artifact, err error) {
	if err := checkFitRequest(req); err != nil {
		return Artifact{}, pluginErr(c.id, "Fit", err)
	}
	defer func() {
		if r := recover(); r != nil {
			a, err = Artifact{}, recovered(c.id, "Fit", r)
		}
	}()
	a, err = c.impl.Fit(ctx, req)
	if err != nil {
		return Artifact{}, pluginErr(c.id, "Fit", err)
	}
	if err := checkArtifact(a); err != nil {
		return Artifact{}, pluginErr(c.id, "Fit", err)
	}
	return a, nil
}

func (c *checkedPosterior) Sample(ctx context.Context, a Artifact, req SampleRequest) (d []nn.Params, err error) {
	if err := checkSampleRequest(req); err != nil {
		return nil, pluginErr(c.id, "Sample", err)
	}
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, recovered(c.id, "Sample", r)
		}
	}()
	d, err = c.impl.Sample(ctx, a, req)
	if err != nil {
		return nil, pluginErr(c.id, "Sample", err)
	}
	if err := checkDrawsOut(d, len(req.Seeds)); err != nil {
		return nil, pluginErr(c.id, "Sample", err)
	}
	return d, nil
}

// CheckedExplainer wraps an in-process explainer so that it behaves as a
// remote one does: errors name the plugin and the method, requests and
// answers are validated (one map per input, of the model's input length,
// finite) and a panic becomes an error. A remote or already checked
// explainer is returned as is.
func CheckedExplainer(e Explainer) Explainer {
	switch e.(type) {
	case *checkedExplainer, *explainerClient:
		return e
	}
	return &checkedExplainer{impl: e, info: e.Info()}
}

type checkedExplainer struct {
	impl Explainer
	info ExplainerInfo
}

func (c *checkedExplainer) Info() ExplainerInfo { return c.impl.Info() }

func (c *checkedExplainer) Check(cfg Config) error { return checkedCheck(c.info.ID, cfg, c.impl.Check) }

func (c *checkedExplainer) Explain(ctx context.Context, m nn.Model, req ExplainRequest) (maps [][]float64, err error) {
	id := c.info.ID
	if err := checkExplainRequest(m, req, c.info.Stochastic); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	defer func() {
		if r := recover(); r != nil {
			maps, err = nil, recovered(id, "Explain", r)
		}
	}()
	maps, err = c.impl.Explain(ctx, m, req)
	if err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	if err := checkMaps(maps, len(req.Targets), m.InputLen()); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	return maps, nil
}

// CheckedSummary wraps an in-process summary so that it behaves as a
// remote one does: errors name the plugin and the method, requests and
// answers are validated (one result per input, of the declared output
// kind and the draws' length, finite) and a panic becomes an error. A
// remote or already checked summary is returned as is.
func CheckedSummary(s Summary) Summary {
	switch s.(type) {
	case *checkedSummary, *summaryClient:
		return s
	}
	return &checkedSummary{impl: s, info: s.Info()}
}

type checkedSummary struct {
	impl Summary
	info SummaryInfo
}

func (c *checkedSummary) Info() SummaryInfo { return c.impl.Info() }

func (c *checkedSummary) Check(cfg Config) error { return checkedCheck(c.info.ID, cfg, c.impl.Check) }

func (c *checkedSummary) Summarise(ctx context.Context, draws [][][]float64, cfg Config) (res []Result, err error) {
	id := c.info.ID
	if err := checkDrawsIn(draws, c.info.MinDraws); err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, recovered(id, "Summarise", r)
		}
	}()
	res, err = c.impl.Summarise(ctx, draws, cfg)
	if err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	if err := checkResults(c.info.Output, res, draws); err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	return res, nil
}
