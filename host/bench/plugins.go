package bench

import (
	"fmt"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/sdk"
)

// The built-in plugins the cases run, by ID: the host finds plugins in the
// registry of built-ins (host/builtin) and names none itself.
const (
	mcdropoutID = "posterior.mcdropout"
	occlusionID = "explainer.occlusion"
	gradcamID   = "explainer.gradcam"
	limeID      = "explainer.lime"
)

// lookup returns the built-in plugin id.
func lookup(id string) (plugin.Builtin, error) {
	r, err := builtin.Registry()
	if err != nil {
		return plugin.Builtin{}, fmt.Errorf("bench: %w", err)
	}
	b, err := r.Lookup(id)
	if err != nil {
		return plugin.Builtin{}, fmt.Errorf("bench: %w", err)
	}
	return b, nil
}

// explainer returns a constructor of the built-in explainer id.
func explainer(id string) (func() sdk.Explainer, error) {
	b, err := lookup(id)
	if err != nil {
		return nil, err
	}
	if _, ok := b.New().(sdk.Explainer); !ok {
		return nil, fmt.Errorf("bench: built-in %s is of kind %s, not an explainer", id, b.Kind)
	}
	return func() sdk.Explainer { return b.New().(sdk.Explainer) }, nil
}

// posterior returns a new value of the built-in posterior id.
func posterior(id string) (sdk.Posterior, error) {
	b, err := lookup(id)
	if err != nil {
		return nil, err
	}
	p, ok := b.New().(sdk.Posterior)
	if !ok {
		return nil, fmt.Errorf("bench: built-in %s is of kind %s, not a posterior", id, b.Kind)
	}
	return p, nil
}

// explainers returns the constructors of the built-in explainers ids, in
// their order.
func explainers(ids ...string) ([]func() sdk.Explainer, error) {
	out := make([]func() sdk.Explainer, len(ids))
	for i, id := range ids {
		mk, err := explainer(id)
		if err != nil {
			return nil, err
		}
		out[i] = mk
	}
	return out, nil
}
