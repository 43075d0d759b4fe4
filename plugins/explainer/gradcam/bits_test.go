package gradcam

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// rawPlain is Raw as its comment states it, one channel after another:
// the reference of the channel-blocked, zero-skipping Raw.
func rawPlain(dst []float64, act, grad []float32, c int) []float64 {
	t := len(dst)
	clear(dst)
	for ch := range c {
		var alpha float64
		for _, g := range grad[ch*t : (ch+1)*t] {
			alpha += float64(g)
		}
		alpha /= float64(t)
		for i, v := range act[ch*t : (ch+1)*t] {
			dst[i] += alpha * float64(v)
		}
	}
	return dst
}

// sameBits is the first index where a and b differ in their bits, a NaN
// equal to any NaN (which operand's payload an addition of two NaNs keeps
// is the compiler's choice of operand order), or -1.
func sameBits(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return i
		}
	}
	return -1
}

// TestRawBits: Raw gives the bits of the plain channel-by-channel sums
// for every channel count (blocks of four and the rest), on gradients
// that are mostly zeros (±0, as the sparse pass through a global max pool
// leaves them), dense, or hold an infinity or a NaN, and activations that
// hold ±0, an infinity or a NaN in a channel whose gradient is zero.
func TestRawBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -3}
	for trial := range 400 {
		c, T := 1+rng.IntN(11), 1+rng.IntN(40)
		act, grad := make([]float32, c*T), make([]float32, c*T)
		for i := range act {
			act[i] = float32(rng.NormFloat64())
			if rng.IntN(20) == 0 {
				act[i] = special[rng.IntN(len(special))]
			}
		}
		for ch := range c {
			switch rng.IntN(4) {
			case 0: // all zero, some negative zeros
				for i := range T {
					if rng.IntN(2) == 0 {
						grad[ch*T+i] = float32(math.Copysign(0, -1))
					}
				}
			case 1: // one step, as through a global max pool
				grad[ch*T+rng.IntN(T)] = float32(rng.NormFloat64())
			case 2:
				for i := range T {
					grad[ch*T+i] = float32(rng.NormFloat64())
				}
			default:
				for i := range T {
					if rng.IntN(3) == 0 {
						grad[ch*T+i] = special[rng.IntN(len(special))]
					}
				}
			}
		}
		want := rawPlain(make([]float64, T), act, grad, c)
		got := Raw(make([]float64, T), act, grad, c)
		if i := sameBits(got, want); i >= 0 {
			t.Fatalf("trial %d, %d channels x %d: position %d is %v, the plain sums give %v", trial, c, T, i, got[i], want[i])
		}
	}
}

// TestExplainBitsDense: on the paper network, the plugin's maps (the
// layer's gradient by the sparse pass through the global max pool, Raw
// blocked by channels) have the bits of the plain way: the gradient of
// the dense backward pass (Grad asked for the input's gradient too, which
// runs every node's Backward), rawPlain and CentreSpan on conv4's
// receptive field, for the waves' classes and for other targets.
func TestExplainBitsDense(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	net, err := p.Arch.GraphNet()
	if err != nil {
		t.Fatal(err)
	}
	copy(net.Theta, p.Data)
	l, err := net.Layer(DefaultLayer)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := net.LayerSpan(DefaultLayer)
	if err != nil {
		t.Fatal(err)
	}
	n := p.Arch.InChannels * p.Arch.InLen
	B := min(len(y), 12)
	x = x[:B*n]
	rng := rand.New(rand.NewPCG(3, 4))
	other := make([]int, B)
	for i := range other {
		other[i] = rng.IntN(m.Classes())
	}
	for _, targets := range [][]int{y[:B], other} {
		maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: targets})
		if err != nil {
			t.Fatal(err)
		}
		sz := l.Shape.Size()
		act, grad := make([]float32, B*sz), make([]float32, B*sz)
		if err := net.Grad(x, graph.GradRequest{Targets: targets, Layer: &l, Act: act, LayerGrad: grad, Input: make([]float32, len(x))}); err != nil {
			t.Fatal(err)
		}
		cam := make([]float64, l.Shape.T)
		for b := range B {
			rawPlain(cam, act[b*sz:(b+1)*sz], grad[b*sz:(b+1)*sz], l.Shape.C)
			want := CentreSpan(make([]float64, n), cam, sp.Stride, sp.Lo, sp.Hi)
			if i := sameBits(maps[b], want); i >= 0 {
				t.Fatalf("wave %d target %d: sample %d is %v, the dense pass gives %v", b, targets[b], i, maps[b][i], want[i])
			}
		}
	}
}

// TestExplainReusesBuffers: Explain takes its activations and gradients
// (B x C x T each) from a pool, so that over repeated calls on one batch
// the bytes allocated a call (the maps and small things) stay under 3/4
// of those two buffers; a call that allocated them anew, as each did
// before, would be above. (Under the race detector a pool drops a
// quarter of what it is given, at random: with 40 calls, far fewer
// than the two thirds that would pass the bound.)
func TestExplainReusesBuffers(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sh, err := m.LayerShape(ctx, DefaultLayer)
	if err != nil {
		t.Fatal(err)
	}
	B := min(len(y), 8)
	req := sdk.ExplainRequest{X: x[:B*m.InputLen()], Targets: y[:B]}
	e := New()
	if _, err := e.Explain(ctx, m, req); err != nil {
		t.Fatal(err)
	}
	const calls = 40
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		if _, err := e.Explain(ctx, m, req); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	bufs := uint64(2 * B * sh.Size() * 4)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per >= bufs*3/4 {
		t.Errorf("%d bytes allocated a call; want under 3/4 of the %d bytes of the activations and gradients", per, bufs)
	}
}
