package builtin

import (
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/plugins/explainer/gradcam"
	"github.com/uaxai/uaxai/plugins/explainer/gradients"
	"github.com/uaxai/uaxai/plugins/explainer/lime"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/plugins/posterior/ensemble"
	"github.com/uaxai/uaxai/plugins/posterior/files"
	"github.com/uaxai/uaxai/plugins/posterior/laplace"
	"github.com/uaxai/uaxai/plugins/posterior/mcdropout"
	"github.com/uaxai/uaxai/plugins/posterior/noisegrad"
	"github.com/uaxai/uaxai/plugins/summary/agreement"
	"github.com/uaxai/uaxai/plugins/summary/band"
	"github.com/uaxai/uaxai/plugins/summary/cv"
	"github.com/uaxai/uaxai/plugins/summary/mean"
	"github.com/uaxai/uaxai/plugins/summary/quantile"
	"github.com/uaxai/uaxai/plugins/summary/variance"
	"github.com/uaxai/uaxai/sdk"
)

// Constructors returns the built-in plugin constructors.
func Constructors() []func() sdk.Plugin {
	return []func() sdk.Plugin{
		func() sdk.Plugin { return ensemble.NewDeterministic() },
		func() sdk.Plugin { return ensemble.New() },
		func() sdk.Plugin { return mcdropout.New() },
		func() sdk.Plugin { return files.New() },
		func() sdk.Plugin { return laplace.New() },
		func() sdk.Plugin { return noisegrad.New() },
		func() sdk.Plugin { return occlusion.New() },
		func() sdk.Plugin { return gradcam.New() },
		func() sdk.Plugin { return lime.New() },
		func() sdk.Plugin { return gradients.NewSaliency() },
		func() sdk.Plugin { return gradients.NewInputXGradient() },
		func() sdk.Plugin { return gradients.NewIntegratedGradients() },
		func() sdk.Plugin { return gradients.NewSmoothGrad() },
		func() sdk.Plugin { return gradients.NewGradientShap() },
		func() sdk.Plugin { return mean.New() },
		func() sdk.Plugin { return variance.New() },
		func() sdk.Plugin { return quantile.New() },
		func() sdk.Plugin { return cv.New() },
		func() sdk.Plugin { return agreement.New() },
		func() sdk.Plugin { return band.New() },
		func() sdk.Plugin { return band.NewInterpolated() },
	}
}

// Registry returns a new registry holding every built-in plugin.
func Registry() (*plugin.Registry, error) {
	r := plugin.NewRegistry()
	for _, mk := range Constructors() {
		if err := r.Add(mk); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// RecordingDefaults is what the built-in explainer id gives its table cfg
// by default on a real recording whose windows have period samples a
// cycle (sdk.RecordingDefaulter); nil for a plugin that declares none, or
// an ID that is no built-in explainer.
func RecordingDefaults(id string, cfg sdk.Config, period float64) sdk.Config {
	for _, mk := range Constructors() {
		p := mk()
		if e, ok := p.(sdk.Explainer); !ok || e.Info().ID != id {
			continue
		}
		if d, ok := p.(sdk.RecordingDefaulter); ok {
			return d.RecordingDefaults(cfg, period)
		}
		return nil
	}
	return nil
}
