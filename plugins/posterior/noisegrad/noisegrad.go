package noisegrad

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ID is the plugin's ID.
const ID = "posterior.noisegrad"

// Version is the plugin's version.
const Version = "1.0.0"

// Base is the posterior whose network the noise is put on, and its
// network's name in that artifact.
const (
	Base       = "posterior.deterministic"
	baseTensor = "member.0"
)

// DefaultSigma is the noise's relative standard deviation.
const DefaultSigma = 0.2

// Posterior is NoiseGrad's multiplicative weight noise.
type Posterior struct{}

// New returns the NoiseGrad posterior.
func New() *Posterior { return &Posterior{} }

// Info describes the plugin: post hoc on the deterministic network.
func (*Posterior) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: Version, Summary: "NoiseGrad: the deterministic network's trainable parameters times N(1, sigma^2) factors (sigma, seed)",
		Base: Base, BaseKeys: []string{"seed"}, Replicates: true}
}

func parse(cfg sdk.Config) (float64, error) {
	if err := cfg.Only("sigma", "seed"); err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	if _, err := cfg.Int("seed", 0); err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	s, err := cfg.Float("sigma", DefaultSigma)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	if !(s >= 0 && s <= 10) {
		return 0, fmt.Errorf("%s: key %q: %v (accepted: 0 <= sigma <= 10)", ID, "sigma", s)
	}
	return s, nil
}

// Check validates sigma (0..10, default 0.2) and seed (the base's); any
// number of draws >= 1 is accepted.
func (*Posterior) Check(cfg sdk.Config, draws int) error {
	if _, err := parse(cfg); err != nil {
		return err
	}
	return sdk.CheckDraws(ID, draws)
}

// Fit keeps the base's network and sigma: the noise is drawn by Sample.
func (*Posterior) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	sigma, err := parse(req.Config)
	if err != nil {
		return sdk.Artifact{}, err
	}
	arch, _, theta, err := sdk.BaseNetwork(ID, Base, baseTensor, req)
	if err != nil {
		return sdk.Artifact{}, err
	}
	return sdk.Artifact{Arch: arch, Tensors: map[string][]float32{"map": append([]float32(nil), theta...)},
		Meta: map[string]string{"sigma": strconv.FormatFloat(sigma, 'g', -1, 64)}}, nil
}

// Sample draws one network a seed (the package comment).
func (*Posterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	theta, ok := a.Tensors["map"]
	if !ok {
		return nil, fmt.Errorf("%s: the artifact has no tensor \"map\"", ID)
	}
	sigma, err := strconv.ParseFloat(a.Meta["sigma"], 64)
	if err != nil {
		return nil, fmt.Errorf("%s: the artifact's sigma %q: %w", ID, a.Meta["sigma"], err)
	}
	lay, err := nn.NewLayout(a.Arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	if len(theta) != lay.Size {
		return nil, fmt.Errorf("%s: the artifact's network has %d parameters; arch %q has %d", ID, len(theta), a.Arch.Name, lay.Size)
	}
	mask := lay.TrainableMask()
	out := make([]nn.Params, len(req.Seeds))
	for s, seed := range req.Seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[s] = nn.Params{Arch: a.Arch, Data: Noisy(make([]float32, len(theta)), theta, mask, sigma, seed)}
	}
	return out, nil
}

// Noisy writes into dst the network theta with each trainable parameter
// (mask) times 1 + sigma eps, eps ~ N(0, 1) from the stream of seed (one
// draw a parameter, trainable or not, so that a parameter's factor does
// not depend on the others' kinds), and returns dst.
func Noisy(dst, theta []float32, mask []bool, sigma float64, seed uint64) []float32 {
	r := rng.New(rng.Key(seed, "noisegrad", "", -1, -1))
	eps := make([]float64, len(theta))
	for j := range eps {
		eps[j] = r.NormFloat64()
	}
	return Scale(dst, theta, mask, sigma, eps)
}

// Scale writes into dst the network theta with each trainable parameter
// (mask) times 1 + sigma eps[j], the others as they are, and returns dst:
//
//	dst[j] = theta[j] (1 + sigma eps[j])   (mask[j]),   theta[j] otherwise,
//
// computed in float64 and rounded once.
func Scale(dst, theta []float32, mask []bool, sigma float64, eps []float64) []float32 {
	if len(dst) != len(theta) || len(mask) != len(theta) || len(eps) != len(theta) {
		panic(fmt.Sprintf("noisegrad: Scale: %d, %d, %d and %d values", len(dst), len(theta), len(mask), len(eps)))
	}
	for j, v := range theta {
		dst[j] = v
		if mask[j] {
			dst[j] = float32(float64(v) * (1 + sigma*eps[j]))
		}
	}
	return dst
}
