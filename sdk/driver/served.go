package driver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is the host's side of served draws: the draws of a posterior
// that serves them (sdk.Info.ServesModels) are references to a model
// service of the plugin's own, which the host checks when the posterior
// answers, and to which it routes every explainer's model calls.

// SampleDraws samples posterior p: its draws as sdk.DrawSampler gives
// them (the posteriors of this package, Local's and the gRPC client's,
// implement it: served draws of a posterior that serves them, parameters
// otherwise), or its Sample's parameters.
func SampleDraws(ctx context.Context, p sdk.Posterior, a sdk.Artifact, req sdk.SampleRequest) ([]sdk.Draw, error) {
	if ds, ok := p.(sdk.DrawSampler); ok {
		return ds.SampleDraws(ctx, a, req)
	}
	ps, err := p.Sample(ctx, a, req)
	if err != nil {
		return nil, err
	}
	return sdk.ParamsDraws(ps), nil
}

// ModelCalls is how the host bounds the requests it makes to the model
// service of a served draw (Describe, and each batch of its
// predictions): each has Limit, and one that has no answer within it
// fails with an *sdk.CallTimeoutError, which Expired, if set, is handed
// once: it stops what serves the draw (host/plugin kills the posterior's
// process group) and returns the error to report, which says so.
type ModelCalls struct {
	Limit   sdk.CallLimit
	Expired func(err error) error
}

// Expire is the error of a call that failed: if a request of it had no
// answer within the limit (err holds an *sdk.CallTimeoutError, as a
// Describe of a draw loaded into an explainer may, or is an explainer
// plugin's Load or Explain of a served draw that answered that one of its
// requests did), Expired's, which stops what serves the draw; else err.
func (c ModelCalls) Expire(err error) error { return c.expired(err) }

// expired is the error of a request past the limit: Expired's, or err.
func (c ModelCalls) expired(err error) error {
	if c.Expired == nil {
		return err
	}
	_, timeout := errors.AsType[*sdk.CallTimeoutError](err)
	_, plugins := errors.AsType[*modelCallError](err)
	if !timeout && !plugins {
		return err
	}
	return c.Expired(err)
}

// DrawServer is a posterior whose served draws' requests the host bounds
// (host/plugin's posteriors, whose process serves them): ModelCalls is
// its limit and what stops it.
type DrawServer interface {
	ModelCalls() ModelCalls
}

// ModelCallsOf is p's ModelCalls if it is a DrawServer, else none (no
// limit but the caller's context: an in-process posterior of a test).
func ModelCallsOf(p sdk.Posterior) ModelCalls {
	if s, ok := p.(DrawServer); ok {
		return s.ModelCalls()
	}
	return ModelCalls{}
}

// errNoDrawDir is the error of a posterior that serves its draws in a
// host that has no model service to make their directory in.
var errNoDrawDir = errors.New("the posterior serves its draws (Info.ServesModels), and this host gives it no directory for their sockets (driver.Options.Models)")

// drawDir makes the directory of a serving posterior's sockets.
func drawDir(models *ModelService) (string, error) {
	if models == nil {
		return "", errNoDrawDir
	}
	return models.DrawDir()
}

// checkServed checks the served draws of a posterior: one per seed, each
// a socket directly inside dir (the SampleRequest's SocketDir) whose path
// a unix socket can have, and a handle that is not 0; then it describes
// each draw at its service, which must answer, and with the input length
// and classes of draw 0, each Describe within limit.
func checkServed(ctx context.Context, refs []sdk.ModelRef, dir string, want int, limit sdk.CallLimit) error {
	if len(refs) != want {
		return fmt.Errorf("returned %d served draws for %d seeds (want one draw per seed)", len(refs), want)
	}
	n, k := 0, 0
	for s, r := range refs {
		if err := checkRef(r, dir); err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		m, err := sdk.OpenModel(ctx, r, limit)
		if err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		dn, dk := m.InputLen(), m.Classes()
		m.Close()
		if s == 0 {
			n, k = dn, dk
		} else if dn != n || dk != k {
			return fmt.Errorf("draw %d: %v: inputs of %d values and %d classes, but draw 0 has %d and %d (want one shape for all draws)", s, r, dn, dk, n, k)
		}
	}
	return nil
}

// checkRef checks one served draw's reference: its address is a socket
// path directly inside dir, of at most maxSocketPath bytes, and its handle
// is not 0 (proto3's unset value).
func checkRef(r sdk.ModelRef, dir string) error {
	a := r.Address
	switch {
	case a == "":
		return errors.New("a served draw without an address (want a unix socket inside the SampleRequest's socket directory)")
	case len(a) > maxSocketPath:
		return fmt.Errorf("the served draw's address %.120q is %d bytes (a unix socket path has at most %d)", a, len(a), maxSocketPath)
	case !filepath.IsAbs(a) || filepath.Clean(a) != a || filepath.Dir(a) != filepath.Clean(dir):
		return fmt.Errorf("the served draw's address %q is not a socket directly inside the socket directory %s the host gave (SampleRequest.socket_dir)", a, dir)
	case r.Handle == 0:
		return fmt.Errorf("the served draw at %s has handle 0 (want the draw's handle at its service, not 0)", a)
	}
	return nil
}

// drawShape is the input length and classes of a draw: its
// architecture's, or its service's (ctx and limit bound the Describe).
func drawShape(ctx context.Context, d sdk.Draw, limit sdk.CallLimit) (inputLen, classes int, err error) {
	if d.Served == nil {
		return checkModel(d.Params)
	}
	if d.Params.Data != nil {
		return 0, 0, errors.New("bad request: a draw with both parameters and a served model (want one of them)")
	}
	m, err := sdk.OpenModel(ctx, *d.Served, limit)
	if err != nil {
		return 0, 0, err
	}
	defer m.Close()
	return m.InputLen(), m.Classes(), nil
}

// drawModel is the nn.Model of a draw in the host's process: its network
// built from the parameters, or a client of the service that serves it;
// call calls f with it, a failed service call being its error.
type drawModel struct {
	m      nn.Model
	served *sdk.ServedModel
	calls  ModelCalls
}

// openDraw builds or dials draw d; calls bounds a served draw's requests.
func openDraw(ctx context.Context, d sdk.Draw, calls ModelCalls) (*drawModel, error) {
	if d.Served != nil {
		if d.Params.Data != nil {
			return nil, errors.New("bad request: a draw with both parameters and a served model (want one of them)")
		}
		m, err := sdk.OpenModel(ctx, *d.Served, calls.Limit)
		if err != nil {
			return nil, calls.expired(err)
		}
		return &drawModel{served: m, calls: calls}, nil
	}
	if _, _, err := checkModel(d.Params); err != nil {
		return nil, err
	}
	m, err := nn.Open(d.Params)
	if err != nil {
		return nil, fmt.Errorf("building the model: %w", err)
	}
	return &drawModel{m: m}, nil
}

func (d *drawModel) inputLen() int {
	if d.served != nil {
		return d.served.InputLen()
	}
	return d.m.InputLen()
}

func (d *drawModel) classes() int {
	if d.served != nil {
		return d.served.Classes()
	}
	return d.m.Classes()
}

func (d *drawModel) call(ctx context.Context, f func(nn.Model) error) error {
	if d.served != nil {
		return d.calls.expired(d.served.Call(ctx, f))
	}
	return f(d.m)
}

func (d *drawModel) close() error {
	if d.served != nil {
		return d.served.Close()
	}
	return nil
}

// DrawModel is a draw as the host computes with it (its predictions): an
// nn.GraphModel of its parameters, or a client of the model service that
// serves it.
type DrawModel struct{ d *drawModel }

// OpenDraw builds draw d's network, or dials and describes the service
// that serves it, each request to which calls bounds (ModelCallsOf the
// posterior of d: past its limit the posterior's process is stopped and
// the call fails). The caller closes it.
func OpenDraw(ctx context.Context, d sdk.Draw, calls ModelCalls) (*DrawModel, error) {
	m, err := openDraw(ctx, d, calls)
	if err != nil {
		return nil, err
	}
	return &DrawModel{m}, nil
}

// InputLen is the length of one input of the draw.
func (m *DrawModel) InputLen() int { return m.d.inputLen() }

// Classes is the number of class probabilities of the draw.
func (m *DrawModel) Classes() int { return m.d.classes() }

// Call calls f with the draw's nn.Model; a call of a served draw's
// service that fails is Call's error (ctx and OpenDraw's ModelCalls
// bound each request).
func (m *DrawModel) Call(ctx context.Context, f func(nn.Model) error) error { return m.d.call(ctx, f) }

// Close closes a served draw's connection; a built network has nothing to
// close.
func (m *DrawModel) Close() error { return m.d.close() }
