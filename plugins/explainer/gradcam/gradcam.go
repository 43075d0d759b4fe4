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
	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// ID is the plugin's ID.
const ID = "explainer.gradcam"

// Version is the plugin's version.
const Version = "1.5.0"

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
	return sdk.Info{ID: ID, Version: Version, Summary: "Grad-CAM of a named layer, signed (layer, align, time_axis)", Needs: sdk.NeedsLayer}
}

type config struct {
	layer, align string
	// timeAxis is the layer output's time axis as PyTorch numbers it
	// for (batch, rows, columns): 1 (rows: tokens), 2 (columns: steps),
	// or 0, from the model.
	timeAxis int
}

func parse(cfg sdk.Config) (config, error) {
	if err := cfg.Only("layer", "align", "time_axis"); err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	axis, err := cfg.Int("time_axis", 0)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if axis != 0 && axis != 1 && axis != 2 {
		return config{}, fmt.Errorf("%s: key %q is %d (accepted: 1, the layer's (batch, tokens, features) rows are time; 2, its (batch, channels, steps) columns are; or 0, from the model's graph)", ID, "time_axis", axis)
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
	return config{layer: layer, align: align, timeAxis: int(axis)}, nil
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
	pos, err := positions(ctx, m, a, c, sh)
	if err != nil {
		return nil, err
	}
	// The map's positions: the columns (steps), or the rows (tokens) of
	// a (tokens x features) layer, whose features are then its channels.
	L, C := sh.T, sh.C
	if pos.rows {
		L, C = sh.C, sh.T
	}
	if c.align == AlignNone && L > a.InLen {
		return nil, fmt.Errorf("%s: key %q: layer %q has %d positions, more than the input's %d samples, so its raw map does not fit the input (accepted: a layer of at most %d positions)", ID, "layer", c.layer, L, a.InLen, a.InLen)
	}
	b := len(req.Targets)
	sz := b * sh.Size()
	if _, ok := checked.Prod(3, b, sh.C, sh.T); !ok {
		return nil, fmt.Errorf("%s: layer %q: %d inputs of %d x %d values each overflow an int; want a smaller batch", ID, c.layer, b, sh.C, sh.T)
	}
	buf := getScratch(3 * sz)
	defer scratch.Put(buf)
	act, grad := (*buf)[:sz:sz], (*buf)[sz:2*sz]
	if err := m.LayerGrad(ctx, act, grad, req.X, req.Targets, c.layer); err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if pos.rows { // features x tokens, as Raw reads channels x steps
		tmp := (*buf)[2*sz : 3*sz]
		ops.Transpose(tmp, act, sh.C, sh.T)
		ops.Transpose(act, grad, sh.C, sh.T) // act's rows are in tmp now
		act, grad = tmp, act
	}
	cam := make([]float64, L)
	maps := make([][]float64, b)
	all := make([]float64, b*n)
	for i := range maps {
		Raw(cam, act[i*sh.Size():(i+1)*sh.Size()], grad[i*sh.Size():(i+1)*sh.Size()], C)
		maps[i] = all[i*n : (i+1)*n : (i+1)*n]
		for ch := range a.InChannels {
			row := maps[i][ch*a.InLen : (ch+1)*a.InLen]
			switch c.align {
			case AlignNone:
				copy(row, cam) // L <= InLen: checked above
			case AlignLinear:
				Linear(row, cam)
			case AlignNearest:
				Nearest(row, cam)
			default:
				CentreSpan(row, cam, pos.stride, pos.lo, pos.hi)
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

// LayerPositioner is a model that knows where its layers' positions lie
// in the input: position l of layer's output stands for the input
// samples [l*stride + lo, l*stride + hi], its receptive field through
// local ops and its patch through ops that keep positions (a
// Transformer's tokens); rows says that the positions are the output's
// rows (tokens x features), not its columns (nn.GraphModel).
type LayerPositioner interface {
	LayerPositions(layer string) (rows bool, stride, lo, hi int, err error)
}

// place is where a layer's positions lie: its rows or columns, position
// l standing for the input samples [l*stride + lo, l*stride + hi] (known
// when err is nil).
type place struct {
	rows           bool
	stride, lo, hi int
	err            error
}

// graphPlace is where the positions of a layer of m lie: from m's
// LayerPositions, or from its Arch's graph (a network served by the
// model service whose graph is known); ok is false for a model known by
// its shape only.
func graphPlace(m nn.Model, a nn.Arch, layer string) (p place, ok bool) {
	switch f, is := m.(LayerPositioner); {
	case is:
		p.rows, p.stride, p.lo, p.hi, p.err = f.LayerPositions(layer)
	case !a.ShapeOnly():
		net, err := a.GraphNet()
		if err != nil {
			return place{err: err}, true
		}
		g, err := net.LayerPositions(layer)
		p = place{rows: g.Rows, stride: g.Stride, lo: g.Lo, hi: g.Hi, err: err}
	default:
		return place{}, false
	}
	if p.err == nil && (p.stride < 1 || p.lo > p.hi) {
		p.err = fmt.Errorf("model %q gives layer %q positions of stride %d over [%d, %d]; want stride >= 1 and lo <= hi", a.Name, layer, p.stride, p.lo, p.hi)
	}
	return p, true
}

// positions decides which axis of layer (shape sh) is time and, for
// align = centre, where its positions lie: from the model's graph, and
// time_axis where it is set (which must agree with a graph that knows);
// for a model known by its shape only, time_axis or else the columns,
// with a warning (sdk.Warn) when the shape could be either way (fewer
// columns than half the input's samples, and rows that could be steps).
func positions(ctx context.Context, m nn.Model, a nn.Arch, c config, sh nn.Shape) (place, error) {
	p, known := graphPlace(m, a, c.layer)
	switch {
	case known && p.err == nil:
		if c.timeAxis != 0 && (c.timeAxis == 1) != p.rows {
			return place{}, fmt.Errorf("%s: key %q is %d, but layer %q of model %q has its positions in its %s by its graph (accepted: time_axis = %d, or no time_axis)", ID, "time_axis", c.timeAxis, c.layer, a.Name, axisName(p.rows), axisOf(p.rows))
		}
		return p, nil
	case c.align == AlignCentre && known:
		return place{}, fmt.Errorf("%s: key %q: %q on layer %q: %w; or align = %q, %q or %q, which need no receptive field", ID, "align", AlignCentre, c.layer, p.err, AlignNone, AlignLinear, AlignNearest)
	case c.align == AlignCentre:
		return place{}, fmt.Errorf("%s: key %q: %q needs receptive fields, of an sdk/nn network, and model %q is known by its shape only (a network served by the model service, e.g. a PyTorch module); accepted: align = %q, the raw map, or %q or %q, resampled to the input", ID, "align", AlignCentre, a.Name, AlignNone, AlignLinear, AlignNearest)
	case c.timeAxis != 0:
		return place{rows: c.timeAxis == 1}, nil
	}
	// Steps of at least half the input's samples are time; fewer could
	// be a deep layer's steps or a Transformer's features.
	if !known && sh.C > 1 && sh.T > 1 && 2*sh.T < a.InLen && sh.C <= a.InLen {
		sdk.Warn(ctx, fmt.Sprintf("%s: layer %q of model %q gives %d x %d values a sample, and the model does not say which axis is time: taken as %d channels x %d steps (time_axis = 2); if its %d rows are tokens (a Transformer's (batch, tokens, features)), set time_axis = 1", ID, c.layer, a.Name, sh.C, sh.T, sh.C, sh.T, sh.C))
	}
	return place{}, nil
}

// axisName and axisOf name a layer's time axis: its rows (tokens,
// time_axis 1) or its columns (steps, time_axis 2).
func axisName(rows bool) string {
	if rows {
		return "rows (tokens)"
	}
	return "columns (steps)"
}

func axisOf(rows bool) int {
	if rows {
		return 1
	}
	return 2
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
