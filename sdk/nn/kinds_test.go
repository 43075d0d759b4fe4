package nn

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// exampleLayer is a valid layer of each kind (on an input of 2 x 12).
func exampleLayer(t *testing.T, k LayerKind) Layer {
	switch k {
	case KindConv1D:
		return Layer{Kind: k, Name: "l", Out: 3, Kernel: 4}
	case KindMaxPool1D:
		return Layer{Kind: k, Kernel: 3}
	case KindDense:
		return Layer{Kind: k, Name: "l", Out: 4}
	case KindBatchNorm1D:
		return Layer{Kind: k, Name: "l"}
	case KindDropout:
		return Layer{Kind: k, P: 0.3}
	case KindReLU, KindGlobalMaxPool, KindFlatten:
		return Layer{Kind: k}
	}
	t.Fatalf("kind %q has no example layer: add one here", k)
	return Layer{}
}

// oneLayer is the network [l, flatten] (flatten makes any output a
// valid logit vector), on 2 x 12 inputs or, for a dense l, 24 x 1.
func oneLayer(l Layer) Arch {
	a := Arch{Name: "one", InChannels: 2, InLen: 12, Layers: []Layer{l, {Kind: KindFlatten}}}
	if l.Kind == KindDense {
		a.InChannels, a.InLen = 24, 1
	}
	return a
}

// TestKindTable: every kind of the table is complete and consistent: it
// has a shape rule, a window and forward and backward code; a local kind
// (window > 0) has the window plan's code and a per-position kind has
// window 1; a kind with parameters needs a name, and its parameters are
// the layout's; an unknown kind's error names every kind.
func TestKindTable(t *testing.T) {
	for _, k := range Kinds() {
		d := kindOf(k)
		l := exampleLayer(t, k)
		if d.out == nil || d.window == nil || d.forward == nil || d.backward == nil {
			t.Errorf("%s: shape rule, window, forward or backward missing", k)
			continue
		}
		w := d.window(l)
		if (w > 0) != (d.localRange != nil) || (w > 0) != (d.plane != nil) {
			t.Errorf("%s: window %d, localRange set %v, plane set %v: a local kind needs both", k, w, d.localRange != nil, d.plane != nil)
		}
		if d.pointwise && w != 1 {
			t.Errorf("%s: pointwise with window %d", k, w)
		}
		a := oneLayer(l)
		if err := a.Validate(); err != nil {
			t.Errorf("%s: example: %v", k, err)
			continue
		}
		unnamed := a
		unnamed.Layers = []Layer{l, a.Layers[1]}
		unnamed.Layers[0].Name = ""
		err := unnamed.Validate()
		if (d.params != nil) != (err != nil && strings.Contains(err.Error(), "name is required")) {
			t.Errorf("%s: has parameters %v, without a name: %v", k, d.params != nil, err)
		}
		lay, err := NewLayout(a)
		if err != nil {
			t.Fatal(err)
		}
		ps := LayerParams(l, Shape{a.InChannels, a.InLen})
		if len(ps) != len(lay.Tensors) {
			t.Errorf("%s: %d parameters, layout has %d tensors", k, len(ps), len(lay.Tensors))
			continue
		}
		for j, p := range ps {
			if ti := lay.Tensors[j]; ti.Name != "l."+p.Suffix || ti.Size != p.Size() || ti.Trainable != p.Trainable {
				t.Errorf("%s: parameter %d is %+v, layout has %+v", k, j, p, ti)
			}
		}
	}
	err := oneLayer(Layer{Kind: "conv2d"}).Validate()
	for _, k := range Kinds() {
		if err == nil || !strings.Contains(err.Error(), string(k)) {
			t.Errorf("unknown kind: error %v does not name %s", err, k)
		}
	}
}

// TestLayerWindowIsReceptiveField: for each local kind, raising one input
// sample (c0, t0) changes the outputs at exactly the steps t0-k+1..t0
// (clipped) of an eval-mode forward pass, k = LayerWindow; a pointwise
// kind changes channel c0 alone. The window plan, the span plan and
// Grad-CAM's field rely on these windows.
func TestLayerWindowIsReceptiveField(t *testing.T) {
	for _, k := range Kinds() {
		l := exampleLayer(t, k)
		w := LayerWindow(l)
		if w == 0 {
			continue
		}
		a := oneLayer(l)
		net, p, _, _ := randomSetup(t, a, 1, 5)
		ws := net.NewWorkspace(1)
		r := rand.New(rand.NewPCG(3, 4))
		x := make([]float32, net.InputLen())
		for i := range x {
			x[i] = float32(1 + r.Float64()) // positive: a ReLU passes changes
		}
		net.Forward(ws, p, x, false, nil)
		base := append([]float32(nil), ws.Act(0)...)
		os := net.OutShape(0)
		const c0 = 1
		for t0 := 0; t0 < a.InLen; t0++ {
			y := append([]float32(nil), x...)
			y[c0*a.InLen+t0] += 10
			net.Forward(ws, p, y, false, nil)
			got := ws.Act(0)
			for u := 0; u < os.T; u++ {
				changed := false
				for c := 0; c < os.C; c++ {
					if got[c*os.T+u] != base[c*os.T+u] {
						changed = true
						if kindOf(k).pointwise && c != c0 {
							t.Errorf("%s: input (%d, %d) raised: output (%d, %d) of another channel changed", k, c0, t0, c, u)
						}
					}
				}
				if want := u <= t0 && t0 <= u+w-1; changed != want {
					t.Errorf("%s (window %d): input (%d, %d) raised: outputs at %d changed %v, want %v", k, w, c0, t0, u, changed, want)
				}
			}
		}
	}
}
