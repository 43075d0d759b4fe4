package sdk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is what a posterior that serves its draws (Info.ServesModels)
// and the host that uses them share: the Draw a posterior answers, the
// reference to a served draw, and the client of a served draw (the
// model service's client of servicemodel.go).

// ModelRef names a draw that a model service serves: the unix socket the
// service listens on and the draw's handle there (not 0).
type ModelRef struct {
	Address string
	Handle  uint64
}

// String is how errors name the reference.
func (r ModelRef) String() string {
	return fmt.Sprintf("model service at %s, handle %d", r.Address, r.Handle)
}

// Draw is one posterior draw as the host receives it: the network's
// parameters, or, from a posterior that serves its draws, a reference to
// the model service that computes it (Served, and then no Params).
type Draw struct {
	Params nn.Params
	Served *ModelRef
}

// ParamsDraws are the draws of a posterior that hands its parameters.
func ParamsDraws(ps []nn.Params) []Draw {
	out := make([]Draw, len(ps))
	for i, p := range ps {
		out[i] = Draw{Params: p}
	}
	return out
}

// DrawSampler is a posterior that serves its draws (Info.ServesModels).
// The host calls SampleDraws instead of Sample: it returns one draw per
// seed, each served by a model service the plugin's process runs, on a
// unix socket directly inside req.SocketDir, until the process ends (Go:
// driver.NewModelServiceIn(req.SocketDir) over sdk/nn networks, or any
// service that answers the protocol's Model service). Its draws are
// either all served or all parameters. The draws' dependence on seeds is
// Sample's.
type DrawSampler interface {
	SampleDraws(ctx context.Context, a Artifact, req SampleRequest) ([]Draw, error)
}

// ServedModel is a served draw as a client computes with it: an nn.Model
// whose computations the model service of its reference does. The host
// calls the model only through Call, whose error names the reference.
type ServedModel struct {
	ref   ModelRef
	conns serviceConns
	m     *serviceModel
}

// OpenModel dials the model service of ref and describes its draw (the
// service's Describe): an error says what failed, and names ref. limit
// bounds each request to the service, the Describe and every one a Call
// makes: past it the request fails with a *CallTimeoutError (the service
// is not stopped: the caller, who knows what serves ref, does that).
func OpenModel(ctx context.Context, ref ModelRef, limit CallLimit) (*ServedModel, error) {
	s := &ServedModel{ref: ref}
	m, err := newServiceModel(ctx, &s.conns, &pb.ModelService{Address: ref.Address, Handle: ref.Handle}, limit)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%v: %w", ref, err)
	}
	s.m = m
	return s, nil
}

// Ref is the draw's reference.
func (s *ServedModel) Ref() ModelRef { return s.ref }

// InputLen and Classes are the draw's, as the service described them.
func (s *ServedModel) InputLen() int { return s.m.InputLen() }

// Classes is the number of class probabilities of the draw.
func (s *ServedModel) Classes() int { return s.m.Classes() }

// Call calls f with the draw's model, whose requests the model's
// CallLimit bounds (and each call's own ctx), unless ctx has ended; f's
// error, such as a failed request of the service (a *CallTimeoutError
// past the limit), or ctx's, is Call's, naming the reference.
func (s *ServedModel) Call(ctx context.Context, f func(m nn.Model) error) error {
	if err := ctx.Err(); err != nil {
		return &refError{s.ref, err}
	}
	if err := f(s.m); err != nil {
		return &refError{s.ref, err}
	}
	return nil
}

// refError is a failed call of a served draw, named by its reference
// ("model service at A, handle H: Probs of 64 inputs: ...").
type refError struct {
	ref ModelRef
	err error
}

func (e *refError) Error() string {
	return e.ref.String() + ": " + strings.TrimPrefix(e.err.Error(), "model service: ")
}
func (e *refError) Unwrap() error { return e.err }

// Close closes the connection to the service. Calls after it fail.
func (s *ServedModel) Close() error {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	var errs []error
	for addr, cc := range s.conns.conns {
		errs = append(errs, cc.Close())
		delete(s.conns.conns, addr)
	}
	return errors.Join(errs...)
}
