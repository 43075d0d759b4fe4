package gradcam

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// ID is the plugin's ID.
const ID = "explainer.gradcam"

// Version is the plugin's version.
const Version = "1.4.0"

// DefaultLayer is the layer explained when the recipe names none.
const DefaultLayer = "conv4"

// The alignments of "align".
const (
	AlignCentre  = "centre"
	AlignNone    = "none"
	AlignLinear  = "linear"
	AlignNearest = "nearest"
)

// aligns are the accepted values of "align".
var aligns = []string{AlignCentre, AlignNone, AlignLinear, AlignNearest}

// Explainer is Grad-CAM.
type Explainer struct{}

// New returns the Grad-CAM explainer.
func New() *Explainer { return &Explainer{} }

// Info describes the plugin: it needs a layer's activations and their
// gradient, and is deterministic.
func (*Explainer) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: Version, Summary: "Grad-CAM of a named layer, signed (layer, align)", Needs: sdk.NeedsLayer}
}

type config struct {
	layer, align string
}

func parse(cfg sdk.Config) (config, error) {
	if err := cfg.Only("layer", "align"); err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	layer, err := cfg.String("layer", DefaultLayer)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if layer == "" {
		return config{}, fmt.Errorf("%s: key %q is empty (accepted: the name of a layer, e.g. %q)", ID, "layer", DefaultLayer)
	}
	align, err := cfg.String("align", AlignCentre)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if !slices.Contains(aligns, align) {
		return config{}, fmt.Errorf("%s: key %q is %q (accepted: %q, %q, %q, %q)", ID, "align", align, AlignCentre, AlignNone, AlignLinear, AlignNearest)
	}
	return config{layer: layer, align: align}, nil
}

// Check validates "layer" and "align". Whether the layer exists is known
// only with the model, so Explain checks it.
func (*Explainer) Check(cfg sdk.Config) error {
	_, err := parse(cfg)
	return err
}

// Explain returns the Grad-CAM map of each input for its target class.
func (*Explainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	c, err := parse(req.Config)
	if err != nil {
		return nil, err
	}
	sh, err := m.LayerShape(ctx, c.layer)
	if err != nil {
		return nil, fmt.Errorf("%s: key %q: %w", ID, "layer", err)
	}
	n := m.InputLen()
	a := m.Arch()
	var sp span // the layer's receptive field, for "centre"
	if c.align == AlignCentre {
		if sp, err = graphField(m, a, c.layer); err != nil {
			return nil, err
		}
	}
	if c.align == AlignNone && sh.T > a.InLen {
		return nil, fmt.Errorf("%s: key %q: layer %q has %d positions, more than the input's %d samples, so its raw map does not fit the input (accepted: a layer of at most %d positions)", ID, "layer", c.layer, sh.T, a.InLen, a.InLen)
	}
	b := len(req.Targets)
	sz := b * sh.Size()
	if _, ok := checked.Prod(2, b, sh.C, sh.T); !ok {
		return nil, fmt.Errorf("%s: layer %q: %d inputs of %d x %d values each overflow an int; want a smaller batch", ID, c.layer, b, sh.C, sh.T)
	}
	buf := getScratch(2 * sz)
	defer scratch.Put(buf)
	act, grad := (*buf)[:sz:sz], (*buf)[sz:2*sz]
	if err := m.LayerGrad(ctx, act, grad, req.X, req.Targets, c.layer); err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cam := make([]float64, sh.T)
	maps := make([][]float64, b)
	all := make([]float64, b*n)
	for i := range maps {
		Raw(cam, act[i*sh.Size():(i+1)*sh.Size()], grad[i*sh.Size():(i+1)*sh.Size()], sh.C)
		maps[i] = all[i*n : (i+1)*n : (i+1)*n]
		for ch := range a.InChannels {
			row := maps[i][ch*a.InLen : (ch+1)*a.InLen]
			switch c.align {
			case AlignNone:
				copy(row, cam) // T <= InLen: the field checks that R >= 1
			case AlignLinear:
				Linear(row, cam)
			case AlignNearest:
				Nearest(row, cam)
			default:
				CentreSpan(row, cam, sp.stride, sp.lo, sp.hi)
			}
		}
	}
	return maps, nil
}

// scratch holds *[]float32 buffers of Explain's activations and
// gradients: a batch's are large (16 inputs of conv4: 1.3 MB), and
// allocating them zeroed each call cost about as much as the layer's
// gradient pass. LayerGrad writes every value, so a reused buffer's old
// values are never read.
var scratch sync.Pool

// getScratch returns a buffer of scratch with at least n values.
func getScratch(n int) *[]float32 {
	if b, ok := scratch.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

// LayerFielder is a model that knows its layers' receptive fields in
// input samples: position l of layer's output reads the input samples
// [l*stride + lo, l*stride + hi] (nn.GraphModel).
type LayerFielder interface {
	LayerField(layer string) (stride, lo, hi int, err error)
}

// span is a layer's receptive field: position l reads the input samples
// [l*stride + lo, l*stride + hi].
type span struct{ stride, lo, hi int }

// graphField is the receptive field of a layer of m: from m's
// LayerField, or from its Arch's graph (a network served by the model
// service); a model known by its shape only has none.
func graphField(m nn.Model, a nn.Arch, layer string) (span, error) {
	var s span
	var err error
	switch f, ok := m.(LayerFielder); {
	case ok:
		s.stride, s.lo, s.hi, err = f.LayerField(layer)
	case !a.ShapeOnly():
		var net *graph.Net
		if net, err = a.GraphNet(); err == nil {
			var g graph.Span
			g, err = net.LayerSpan(layer)
			s = span{g.Stride, g.Lo, g.Hi}
		}
	default:
		return span{}, fmt.Errorf("%s: key %q: %q needs receptive fields, of an sdk/nn network, and model %q is known by its shape only (a network served by the model service, e.g. a PyTorch module); accepted: align = %q, the raw map, or %q or %q, resampled to the input", ID, "align", AlignCentre, a.Name, AlignNone, AlignLinear, AlignNearest)
	}
	if err != nil {
		return span{}, fmt.Errorf("%s: key %q: %q on layer %q: %w; or align = %q, %q or %q, which need no receptive field", ID, "align", AlignCentre, layer, err, AlignNone, AlignLinear, AlignNearest)
	}
	if s.stride < 1 || s.lo > s.hi {
		return span{}, fmt.Errorf("%s: model %q gives layer %q the receptive field of stride %d over [%d, %d]; want stride >= 1 and lo <= hi", ID, a.Name, layer, s.stride, s.lo, s.hi)
	}
	return s, nil
}

// Raw writes the Grad-CAM map of one input, dst[t] = sum_c alpha_c
// act[c*T+t] with alpha_c = (1/T) sum_t grad[c*T+t], T = len(dst), from a
// layer's C x T activations and gradients, and returns dst. The sums run
// in float64, in the order of the formula: channel after channel, each
// alpha_c over t in order (the zero gradients, which leave a sum that
// starts at +0 as it is, skipped: a gradient through a global max pool
// is zero but at one step a channel); the channels are taken four at a
// time, dst[t] kept in a register across the four.
func Raw(dst []float64, act, grad []float32, c int) []float64 {
	t := len(dst)
	if len(act) != c*t || len(grad) != c*t {
		panic(fmt.Sprintf("gradcam: Raw: %d activations and %d gradients for %d channels of %d", len(act), len(grad), c, t))
	}
	clear(dst)
	if t == 0 {
		return dst
	}
	row := func(ch int) []float32 { return act[ch*t : (ch+1)*t][:len(dst)] }
	ch := 0
	for ; ch+4 <= c; ch += 4 {
		a0, a1, a2, a3 := meanGrad(grad, ch, t), meanGrad(grad, ch+1, t), meanGrad(grad, ch+2, t), meanGrad(grad, ch+3, t)
		x0, x1, x2, x3 := row(ch), row(ch+1), row(ch+2), row(ch+3)
		for i, d := range dst {
			d += a0 * float64(x0[i])
			d += a1 * float64(x1[i])
			d += a2 * float64(x2[i])
			d += a3 * float64(x3[i])
			dst[i] = d
		}
	}
	for ; ch < c; ch++ {
		a, x := meanGrad(grad, ch, t), row(ch)
		for i, v := range x {
			dst[i] += a * float64(v)
		}
	}
	return dst
}

// meanGrad is (1/t) sum_i grad[ch*t+i], summed in float64 in order of i
// without the zero terms: a sum that starts at +0 is never -0 (x + y is
// -0 only for x = y = -0), and s + (±0) = s for every other s, NaN
// included, so the bits are the full sum's. Zeros are skipped eight at a
// time.
func meanGrad(grad []float32, ch, t int) float64 {
	g := grad[ch*t : (ch+1)*t]
	var s float64
	i := 0
	for ; i+8 <= len(g); i += 8 {
		q := g[i : i+8 : i+8]
		if (math.Float32bits(q[0])|math.Float32bits(q[1])|math.Float32bits(q[2])|math.Float32bits(q[3])|
			math.Float32bits(q[4])|math.Float32bits(q[5])|math.Float32bits(q[6])|math.Float32bits(q[7]))<<1 == 0 {
			continue // eight zeros (±0)
		}
		for _, v := range q {
			if v != 0 {
				s += float64(v)
			}
		}
	}
	for _, v := range g[i:] {
		if v != 0 {
			s += float64(v)
		}
	}
	return s / float64(t)
}

// Centre writes a layer map cam of T positions at the centres of their
// receptive fields of r input samples: dst[t+floor((r-1)/2)] = cam[t],
// with dst[n] = cam[0] before the first centre and cam[T-1] after the
// last; len(dst) must be T + r - 1. It is CentreSpan with stride 1 and
// the field [t, t+r-1], and returns dst.
func Centre(dst, cam []float64, r int) []float64 {
	if len(dst) != len(cam)+r-1 || len(cam) == 0 {
		panic(fmt.Sprintf("gradcam: Centre: %d positions with a field of %d do not fill %d samples", len(cam), r, len(dst)))
	}
	return CentreSpan(dst, cam, 1, 0, r-1)
}

// CentreSpan writes a layer map cam of T positions to the len(dst) input
// samples by receptive field: position t reads the input samples
// [t*stride + lo, t*stride + hi], centred at c(t) = t*stride + (lo+hi)/2,
// and sample u takes the position whose centre is nearest, the later of
// two equally near, clamped to the positions:
//
//	dst[u] = cam[min(max(floor((2u - lo - hi + stride) / (2 stride)), 0), T-1)],
//
// exactly, in integers. With stride 1 and lo = 0, hi = r-1 it is Centre.
// It returns dst.
func CentreSpan(dst, cam []float64, stride, lo, hi int) []float64 {
	if len(cam) == 0 || stride < 1 || lo > hi {
		panic(fmt.Sprintf("gradcam: CentreSpan: %d positions of stride %d over [%d, %d]", len(cam), stride, lo, hi))
	}
	// t = floor(num / den) with num = 2u - lo - hi + stride, den =
	// 2 stride, kept as t and the remainder r = num - t den in [0, den)
	// from one sample to the next (num grows by 2 <= den): no division
	// a sample.
	num, den := -lo-hi+stride, 2*stride
	t, r := num/den, num%den
	if r < 0 {
		t, r = t-1, r+den // floor, not truncation
	}
	last := len(cam) - 1
	for u := range dst {
		dst[u] = cam[min(max(t, 0), last)]
		if r += 2; r >= den {
			t, r = t+1, r-den
		}
	}
	return dst
}

// Linear writes cam resampled to len(dst) samples as PyTorch's
// F.interpolate(mode="linear", align_corners=False):
//
//	s = max((u + 0.5) T/N - 0.5, 0),  i = floor(s),  w = s - i,
//	dst[u] = (1 - w) cam[i] + w cam[min(i+1, T-1)],
//
// T = len(cam), N = len(dst); it returns dst. The scale T/N is computed
// in float32, as PyTorch does for float32 maps.
func Linear(dst, cam []float64) []float64 {
	t := len(cam)
	if t == 0 {
		panic("gradcam: Linear: no positions")
	}
	scale := float64(float32(t) / float32(len(dst)))
	for u := range dst {
		s := max((float64(u)+0.5)*scale-0.5, 0)
		i := min(int(s), t-1)
		w := s - float64(i)
		dst[u] = (1-w)*cam[i] + w*cam[min(i+1, t-1)]
	}
	return dst
}

// Nearest writes cam resampled to len(dst) samples as PyTorch's
// F.interpolate(mode="nearest"): dst[u] = cam[min(floor(u T/N), T-1)],
// T = len(cam), N = len(dst) (the scale T/N in float32); it returns dst.
func Nearest(dst, cam []float64) []float64 {
	t := len(cam)
	if t == 0 {
		panic("gradcam: Nearest: no positions")
	}
	scale := float32(t) / float32(len(dst))
	for u := range dst {
		dst[u] = cam[min(int(float32(u)*scale), t-1)]
	}
	return dst
}

// Field returns the receptive field R of the named layer's positions in
// the input, for a layer of stride 1 whose position t reads the input
// samples t .. t+R-1 (graph.Net.LayerSpan): on a network of valid
// convolutions and max pools of stride 1 (the paper's), 1 + the sum of
// (kernel - 1) over them up to and including the layer. It refuses a
// layer behind a global pool, flatten or linear node (their positions
// have no place in time) and one of another field.
func Field(a nn.Arch, layer string) (int, error) {
	net, err := a.GraphNet()
	if err != nil {
		return 0, err
	}
	s, err := net.LayerSpan(layer)
	if err != nil {
		return 0, err
	}
	if s.Stride != 1 || s.Lo != 0 {
		return 0, fmt.Errorf("arch %q layer %q: position t reads the input samples t*%d%+d .. t*%d%+d, not t .. t+R-1 (accepted: a layer of stride 1 after valid convolutions and pools)", a.Name, layer, s.Stride, s.Lo, s.Stride, s.Hi)
	}
	return s.Hi + 1, nil
}
