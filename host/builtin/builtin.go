// Package builtin lists the plugins compiled into the uaxai binary. The host
// serves each one out of process by re-executing itself
// ("uaxai plugin serve <id>"), so built-ins speak the same protocol as a
// third-party plugin binary.
package builtin

import (
	"fmt"

	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/plugins/posterior/ensemble"
	"github.com/uaxai/uaxai/plugins/summary/mean"
	"github.com/uaxai/uaxai/plugins/summary/variance"
	"github.com/uaxai/uaxai/sdk"
)

// Constructors returns the built-in plugin constructors.
func Constructors() []func() any {
	return []func() any{
		func() any { return ensemble.NewDeterministic() },
		func() any { return ensemble.New() },
		func() any { return occlusion.New() },
		func() any { return mean.New() },
		func() any { return variance.New() },
	}
}

// Registry returns a new registry holding every built-in plugin.
func Registry() (*plugin.Registry, error) {
	r := plugin.NewRegistry()
	for _, mk := range Constructors() {
		p := mk()
		kind, err := sdk.KindOf(p)
		if err != nil {
			return nil, err
		}
		var info sdk.Info
		switch v := p.(type) {
		case sdk.Posterior:
			info = v.Info().Info
		case sdk.Explainer:
			info = v.Info().Info
		case sdk.Summary:
			info = v.Info().Info
		}
		if err := r.Add(info.ID, kind, info.Version, mk); err != nil {
			return nil, fmt.Errorf("built-in %s: %w", info.ID, err)
		}
	}
	return r, nil
}
