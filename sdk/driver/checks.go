package driver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/check"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file holds the checks every request and answer passes, both for
// remote plugins (the gRPC clients run them) and for in-process ones (the
// Local wrappers run them), so that the two behave the same: errors name
// the plugin, answers are validated, panics become errors.

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
			if !check.Finite(v) {
				return fmt.Errorf("input %d: map value %d is %v (want finite values)", i, j, v)
			}
		}
	}
	return nil
}

// checkResults checks a summary's answer to a batch.
func checkResults(out sdk.OutputKind, res []sdk.Result, draws [][][]float64) error {
	if len(res) != len(draws) {
		return fmt.Errorf("returned %d results for a batch of %d inputs (want one result per input)", len(res), len(draws))
	}
	vec := func(i int, name string, v []float64, n int) error {
		if len(v) != n {
			return fmt.Errorf("input %d: %s has %d values, want %d (the length of its draws) for a %s summary", i, name, len(v), n, out)
		}
		for j, x := range v {
			if !check.Finite(x) {
				return fmt.Errorf("input %d: %s value %d is %v (want finite values)", i, name, j, x)
			}
		}
		return nil
	}
	for i, r := range res {
		n := len(draws[i][0])
		switch out {
		case sdk.OutputMap:
			if err := vec(i, "map", r.Map, n); err != nil {
				return err
			}
		case sdk.OutputSet:
			if len(r.Set) != n {
				return fmt.Errorf("input %d: set has %d values, want %d (the length of its draws) for a set summary", i, len(r.Set), n)
			}
		case sdk.OutputBand:
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
		if !check.Finite(float64(v)) {
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
func checkArtifact(a sdk.Artifact) error {
	if err := a.Arch.Validate(); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	for name, t := range a.Tensors {
		for j, v := range t {
			if !check.Finite(float64(v)) {
				return fmt.Errorf("artifact tensor %q value %d is %v (want finite values)", name, j, v)
			}
		}
	}
	return nil
}

// checkDataset checks a dataset's shape.
func checkDataset(name string, d sdk.Dataset) error { return check.Dataset(name, d.X, d.Y, d.N, d.Len) }

func checkFitRequest(req sdk.FitRequest) error {
	if err := req.Arch.Validate(); err != nil {
		return fmt.Errorf("bad request: %w", err)
	}
	if err := checkDataset("training", req.Train); err != nil {
		return err
	}
	if err := check.Part(int64(req.Part), int64(req.Parts)); err != nil {
		return err
	}
	if err := check.Replicate(int64(req.Replicate)); err != nil {
		return err
	}
	if req.Base != nil {
		if err := checkArtifact(*req.Base); err != nil {
			return fmt.Errorf("bad request: base %w", err)
		}
	}
	return checkDataset("validation", req.Val)
}

func checkSampleRequest(req sdk.SampleRequest) error {
	if len(req.Seeds) == 0 {
		return errors.New("bad request: no seeds (one draw per seed)")
	}
	return nil
}

// checkModel checks a draw before it is loaded into an explainer.
func checkModel(p nn.Params) (inputLen, classes int, err error) {
	if err := checkParams(p); err != nil {
		return 0, 0, fmt.Errorf("bad request: draw: %w", err)
	}
	return p.Arch.InChannels * p.Arch.InLen, p.Arch.Classes(), nil
}
