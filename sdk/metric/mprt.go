package metric

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// MPRT is Quantus's MPRT, the model parameter randomisation test (Adebayo
// et al. 2018): the model's layers with parameters are re-initialised one
// after another, from the output down (layer_order "top_down", keeping
// those before: cascading), from the input up ("bottom_up"), or each alone
// ("independent"); after each step the record is explained again, and
//
//	curve_l = similarity(â, â^l)   (Spearman's rho by default),
//
// the value the curve's mean over the layers (lower: the map depends on
// what the model learnt). Quantus's average includes the unrandomised
// model's correlation with itself (1); this one does not. A layer is
// re-initialised as PyTorch's reset_parameters draws it (weights and
// biases uniform on ±1/sqrt(fan_in), a norm's scale 1 and shift 0, its
// running statistics 0 and 1), from the seed; the model must be one
// uaxai computes (Params: a graph or ONNX network).
func MPRT() Entry {
	info := Info{
		ID: "metric.mprt", Quantus: "MPRT", Category: Randomisation,
		Needs: Needs{Model: true, Explain: true, Params: true}, Curve: true, Higher: false,
		Summary: "similarity of the map to the maps of models whose layers are re-initialised (lower: the map depends on the learnt parameters)",
		Params: append([]Param{
			{Name: "layer_order", Default: "top_down", Doc: `"top_down" (cascading from the output), "bottom_up" or "independent"`},
			{Name: "seed", Default: 42, Doc: "the seed of the re-initialised parameters"},
			{Name: "similarity_func", Default: "spearman", Doc: `"spearman", "ssim" or "cosine"`},
		}, prepParamList(true, true)...),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &mprt{info: info}
		var err error
		if m.prep, err = prepParams(cfg, true, true); err != nil {
			return nil, err
		}
		if m.order, err = cfg.String("layer_order", "top_down"); err != nil {
			return nil, err
		}
		if !slices.Contains([]string{"top_down", "bottom_up", "independent"}, m.order) {
			return nil, fmt.Errorf(`layer_order = %s: want "top_down", "bottom_up" or "independent"`, sdk.Quote(m.order))
		}
		s, err := cfg.IntRange("seed", 42, 0, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		m.seed = uint64(s)
		if m.sim, err = similarityParam(cfg, "spearman"); err != nil {
			return nil, err
		}
		return m, nil
	}}
}

type mprt struct {
	prep
	info  Info
	order string
	seed  uint64
	sim   similarity
}

func (m *mprt) Info() Info { return m.info }

// paramsModel is a model that gives its parameters (nn.GraphModel).
type paramsModel interface{ Params() nn.Params }

func (m *mprt) Score(ctx context.Context, in *Input, dst []Score) error {
	if err := in.Check(m.info); err != nil {
		return err
	}
	pm, ok := in.Model.(paramsModel)
	if !ok {
		return fmt.Errorf("%s re-initialises the model's layers: this model (%T) does not give its parameters (accepted: a network uaxai computes, a graph spec or ONNX file)", m.info.ID, in.Model)
	}
	p := pm.Params()
	lay, err := nn.NewLayout(p.Arch)
	if err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	layers := Layers(lay)
	if m.order == "bottom_up" {
		slices.Reverse(layers)
	}
	models := make([]nn.Model, len(layers))
	data := slices.Clone(p.Data)
	for l := range layers {
		if m.order == "independent" {
			data = slices.Clone(p.Data)
		}
		Reinitialise(data, lay, layers[l], m.seed)
		if models[l], err = nn.Open(nn.Params{Arch: p.Arch, Data: slices.Clone(data)}); err != nil {
			return fmt.Errorf("%s: layer %s re-initialised: %w", m.info.ID, layers[l], err)
		}
	}
	return m.scoreModels(ctx, in, models, dst)
}

// scoreModels scores the records against their maps under each of
// models, the curve in order.
func (m *mprt) scoreModels(ctx context.Context, in *Input, models []nn.Model, dst []Score) error {
	n := in.Len()
	a := m.maps(in)
	curves := make([]float64, in.N*len(models))
	maps := make([]float64, in.N*n)
	for l, model := range models {
		sub := *in
		sub.Model = model
		if err := explainAll(ctx, &sub, in.X, in.Targets, maps); err != nil {
			return fmt.Errorf("%s: layer step %d: %w", m.info.ID, l, err)
		}
		b := m.maps(&Input{N: in.N, C: in.C, T: in.T, Maps: maps})
		for i := range in.N {
			s := m.sim(a[i*n:(i+1)*n], b[i*n:(i+1)*n])
			curves[i*len(models)+l] = s.Value // NaN when undefined: the record's score says so below
		}
	}
	for i := range in.N {
		c := curves[i*len(models) : (i+1)*len(models)]
		var sum float64
		bad := false
		for _, v := range c {
			sum += v
			bad = bad || math.IsNaN(v)
		}
		if bad {
			dst[i] = undefined("a map of a re-initialised model is constant: no similarity", c)
			continue
		}
		dst[i] = Score{Value: sum / float64(len(c)), Curve: c}
	}
	return nil
}

// Layers lists the layers with parameters of a layout (a tensor's name
// up to its last dot), from the output down: the reverse of their order
// in the network.
func Layers(lay *nn.Layout) []string {
	var out []string
	for _, t := range lay.Tensors {
		name := t.Name[:max(strings.LastIndex(t.Name, "."), 0)]
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name)
		}
	}
	slices.Reverse(out)
	return out
}

// Reinitialise draws the tensors of layer in data (laid out by lay) as
// PyTorch's reset_parameters does: a weight of two or more dimensions
// and its bias uniform on ±1/sqrt(fan_in) (fan_in the weight's size over
// its first dimension), a one-dimensional weight (a norm's scale) 1, a
// norm's bias 0, running_mean 0, running_var 1; the draws come from seed
// and the layer's name.
func Reinitialise(data []float32, lay *nn.Layout, layer string, seed uint64) {
	r := rng.New(rng.Key(seed, "metric.mprt", layer, 0, 0))
	fanIn := 0
	if w, ok := lay.Lookup(layer + ".weight"); ok && len(w.Shape) >= 2 {
		fanIn = w.Size / w.Shape[0]
	}
	for _, t := range lay.Tensors {
		if t.Name[:max(strings.LastIndex(t.Name, "."), 0)] != layer {
			continue
		}
		v := data[t.Offset : t.Offset+t.Size]
		suffix := t.Name[len(layer)+1:]
		switch {
		case suffix == "running_var" || suffix == "weight" && len(t.Shape) == 1:
			fill(v, 1)
		case suffix == "running_mean" || fanIn == 0:
			fill(v, 0)
		default:
			b := 1 / math.Sqrt(float64(fanIn))
			for j := range v {
				v[j] = float32((2*r.Float64() - 1) * b)
			}
		}
	}
}
