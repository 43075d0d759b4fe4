package graph

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// archSpec reads the recipes/archs file of a golden network; the
// three-phase ResNet1D is resnet1d.toml with in_channels = 3.
func archSpec(t *testing.T, a golden.TorchArch) Spec {
	t.Helper()
	file := a.Name
	if a.Name == "resnet1d-3ph" {
		file = "resnet1d"
	}
	spec, err := ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", file+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	spec.InChannels = a.Cin
	return spec
}

// goldenNet is a golden network compiled from its TOML with PyTorch's
// parameters, and its waveforms.
func goldenNet(t *testing.T, a golden.TorchArch) (*Net, []float32) {
	t.Helper()
	net, err := Compile(archSpec(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if err := net.LoadSafetensors(golden.File(t, "archs", a.Name+"/model.safetensors")); err != nil {
		t.Fatal(err)
	}
	return net, golden.Flat(golden.CSV32(t, golden.File(t, "archs", a.Name+"/waveforms.csv")))
}

// rowClose reports whether got is within tol x max |want| of want.
func rowClose(got []float64, want []float32, tol float64) bool {
	top := 0.0
	for _, v := range want {
		top = max(top, math.Abs(float64(v)))
	}
	for j, v := range want {
		if !(math.Abs(got[j]-float64(v)) <= tol*top) {
			return false
		}
	}
	return true
}

// TestGoldenArchs: each TOML architecture with PyTorch's state_dict gives
// PyTorch's probabilities, Captum's saliency (d p_target / d x) and
// Captum's raw Grad-CAM on the README's layer.
func TestGoldenArchs(t *testing.T) {
	for _, a := range golden.TorchArchs {
		if a.Name == "lstm" {
			continue // not a graph of the op table's ops
		}
		t.Run(a.Name, func(t *testing.T) {
			net, x := goldenNet(t, a)
			var targets []int
			for _, r := range golden.CSV32(t, golden.File(t, "archs", a.Name+"/targets.csv")) {
				targets = append(targets, int(r[0]))
			}
			B, K := len(targets), net.Classes()
			probs := make([]float32, B*K)
			if err := net.Forward(probs, x); err != nil {
				t.Fatal(err)
			}
			want := golden.CSV32(t, golden.File(t, "archs", a.Name+"/probs.csv"))
			for b := range B {
				for k := range K {
					if d := math.Abs(float64(probs[b*K+k] - want[b][k])); !(d <= 1e-5) {
						t.Errorf("sample %d class %d: p = %.9g, PyTorch %.9g", b, k, probs[b*K+k], want[b][k])
					}
				}
			}
			logits := make([]float32, B*K)
			if err := net.ForwardLogits(logits, x); err != nil {
				t.Fatal(err)
			}
			wantL := golden.CSV32(t, golden.File(t, "archs", a.Name+"/logits.csv"))
			for b := range B {
				for k := range K {
					if d := math.Abs(float64(logits[b*K+k] - wantL[b][k])); !(d <= 1e-5*max(1, math.Abs(float64(wantL[b][k])))) {
						t.Errorf("sample %d class %d: logit %.9g, PyTorch %.9g", b, k, logits[b*K+k], wantL[b][k])
					}
				}
			}

			layer, err := net.Layer(a.Layer)
			if err != nil {
				t.Fatal(err)
			}
			L := layer.Shape.T
			if wantL := len(golden.CSV32(t, golden.File(t, "archs", a.Name+"/gradcam_raw.csv"))[0]); L != wantL {
				t.Fatalf("layer %s (node %s) has %d steps, Grad-CAM golden %d", a.Layer, layer.Name, L, wantL)
			}
			req := GradRequest{
				Targets: targets, Probs: make([]float32, B*K), Input: make([]float32, len(x)),
				Layer: &layer, Act: make([]float32, B*layer.Shape.Size()), LayerGrad: make([]float32, B*layer.Shape.Size()),
			}
			if err := net.Grad(x, req); err != nil {
				t.Fatal(err)
			}
			for j := range probs {
				if req.Probs[j] != probs[j] {
					t.Fatalf("Grad's probabilities differ from Forward's (planned buffers) at %d: %g vs %g", j, req.Probs[j], probs[j])
				}
			}
			per := len(x) / B
			grads := make([][]float64, B)
			cams := make([][]float64, B)
			C := layer.Shape.C
			for b := range B {
				for _, v := range req.Input[b*per : (b+1)*per] {
					grads[b] = append(grads[b], float64(v))
				}
				// cam[t] = sum_c w_c A[c,t], w_c = mean_t dA[c,t]
				cams[b] = make([]float64, L)
				for c := range C {
					off := (b*C + c) * L
					var w float64
					for _, g := range req.LayerGrad[off : off+L] {
						w += float64(g)
					}
					w /= float64(L)
					for s := range L {
						cams[b][s] += w * float64(req.Act[off+s])
					}
				}
			}
			wantGrad := golden.CSV32(t, golden.File(t, "archs", a.Name+"/input_grad.csv"))
			// A ReLU whose input is within float32 rounding of 0 may
			// be on here and off in PyTorch: InceptionTime's
			// inc3.bn channel 28 step 542 of sample 3 is +4.3e-7 here
			// and -5.7e-7 in PyTorch, which changes d p / d x near step
			// 540 by 0.7% of the map's largest value. Such a row must
			// agree once the ReLUs with 0 < x < 1e-5 are taken as off,
			// and must have such a ReLU.
			for b := range B {
				if rowClose(grads[b], wantGrad[b], 1e-4) {
					continue
				}
				kinks := 0
				net.backwardHook = func(i int, c *Call) {
					if net.nodes[i].op.Kind != "relu" || c.DX[0] == nil {
						return
					}
					xb := c.X[0][b*len(c.X[0])/B : (b+1)*len(c.X[0])/B]
					db := c.DX[0][b*len(c.X[0])/B : (b+1)*len(c.X[0])/B]
					for j, v := range xb {
						if v > 0 && v < 1e-5 {
							db[j], kinks = 0, kinks+1
						}
					}
				}
				if err := net.Grad(x, GradRequest{Targets: targets, Input: req.Input}); err != nil {
					t.Fatal(err)
				}
				net.backwardHook = nil
				if kinks == 0 {
					t.Errorf("sample %d: input gradient differs from PyTorch's and no ReLU is at a kink", b)
				}
				t.Logf("sample %d: %d ReLU inputs in (0, 1e-5) taken as off, as PyTorch's rounding has them", b, kinks)
				grads[b] = grads[b][:0]
				for _, v := range req.Input[b*per : (b+1)*per] {
					grads[b] = append(grads[b], float64(v))
				}
			}
			golden.RowsClose(t, "input_grad", grads, wantGrad, 1e-4)
			golden.RowsClose(t, "gradcam_raw", cams, golden.CSV32(t, golden.File(t, "archs", a.Name+"/gradcam_raw.csv")), 1e-4)
		})
	}
}
