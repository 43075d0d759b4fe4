package nn

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

type goldenSet struct {
	dir    string
	params Params
	x      []float32
	labels []int
}

func loadGolden(t testing.TB) goldenSet {
	g := goldenSet{dir: golden.Dir(t, "paper-1dcnn")}
	p, err := LoadParams(filepath.Join(g.dir, "model.safetensors"), PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	g.params = p
	g.x, g.labels = golden.Inputs(t, g.dir)
	return g
}

// within checks |got - want| <= tol * max(1, |want|) element-wise.
func within(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range got {
		d := math.Abs(float64(got[i])-float64(want[i])) / math.Max(1, math.Abs(float64(want[i])))
		if d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if worst > tol || math.IsNaN(worst) {
		t.Errorf("%s: max scaled error %.3g at %d (got %g, want %g), tolerance %g", what, worst, at, got[at], want[at], tol)
	} else {
		t.Logf("%s: max scaled error %.3g", what, worst)
	}
}

// withinTensor checks |got - want| <= tol * max|want| over a tensor,
// skipping entries where skip is nonzero.
func withinTensor(t *testing.T, what string, got, want, skip []float32, tol float64) {
	t.Helper()
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	scale = math.Max(scale, 1e-12)
	worst, at := 0.0, -1
	for i := range got {
		if skip != nil && skip[i] != 0 {
			continue
		}
		d := math.Abs(float64(got[i])-float64(want[i])) / scale
		if d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if worst > tol || math.IsNaN(worst) {
		t.Errorf("%s: max error %.3g of the tensor's largest |value| %.3g at %d (got %g, want %g), tolerance %g", what, worst, scale, at, got[at], want[at], tol)
	}
}

func TestGoldenLogitsAndProbs(t *testing.T) {
	g := loadGolden(t)
	m, err := NewModel(g.params)
	if err != nil {
		t.Fatal(err)
	}
	probs := make([]float32, 16*16)
	if err := m.Probs(context.Background(), probs, g.x); err != nil {
		t.Fatal(err)
	}
	within(t, "folded probs", probs, golden.Flat(golden.CSV32(t, filepath.Join(g.dir, "probs.csv"))), 1e-5)
	if err := m.PlainProbs(context.Background(), probs, g.x); err != nil {
		t.Fatal(err)
	}
	within(t, "unfolded probs", probs, golden.Flat(golden.CSV32(t, filepath.Join(g.dir, "probs.csv"))), 1e-5)

	// The unfolded network in eval mode computes the same logits.
	within(t, "unfolded logits", evalLogits(t, PaperArch(), g.params.Data, g.x), golden.Flat(golden.CSV32(t, filepath.Join(g.dir, "logits.csv"))), 1e-5)
}

// evalLogits are the eval-mode logits of the batch x under (a, p), by a
// Pass.
func evalLogits(t testing.TB, a Arch, p, x []float32) []float32 {
	t.Helper()
	pass, err := NewPass(a, len(x)/(a.InChannels*a.InLen), 1)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), pass.Forward(p, x, false, nil)...)
}

func TestGoldenInputGrad(t *testing.T) {
	g := loadGolden(t)
	m, err := NewModel(g.params)
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, len(g.x))
	if err := m.InputGrad(context.Background(), grad, nil, g.x, g.labels); err != nil {
		t.Fatal(err)
	}
	within(t, "input grad", grad, golden.Flat(golden.CSV32(t, filepath.Join(g.dir, "input_grad.csv"))), 1e-5)
}

func readTensors(t testing.TB, path string) *safetensors.File {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func lossRow(t testing.TB, dir, mode string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "loss.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, mode+",") {
			v, err := strconv.ParseFloat(strings.TrimPrefix(line, mode+","), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("loss.csv has no row %q", mode)
	return 0
}

// paramGrads runs one forward/backward of the mean cross-entropy and returns
// the loss and the gradient. Train mode updates the running statistics in p.
func paramGrads(net Pass, p, x []float32, y []int, train bool) (float64, []float32) {
	z := net.Forward(p, x, train, nil)
	dz := make([]float32, len(y)*net.Classes())
	loss := CrossEntropy(dz, z, y, net.Classes())
	g := make([]float32, net.Layout().Size)
	net.Backward(p, dz, g)
	return loss, g
}

// paperPass is a Pass of the paper's network for batches of 16.
func paperPass(t testing.TB) Pass {
	t.Helper()
	net, err := NewPass(PaperArch(), 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

func TestGoldenParamGrads(t *testing.T) {
	g := loadGolden(t)
	net := paperPass(t)
	lay := net.Layout()
	for _, tc := range []struct {
		mode, file, zero string
		train            bool
		tol              float64
	}{
		// Train mode: float32 torch itself is 4.9e-5 of a tensor's largest
		// value away from float64 (README, caveats); eval mode 8.5e-7.
		{"train", "param_grads.safetensors", "param_grads_zero_mask.safetensors", true, 5e-4},
		{"eval", "param_grads_eval.safetensors", "", false, 1e-5},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p := append([]float32(nil), g.params.Data...)
			loss, grad := paramGrads(net, p, g.x, g.labels, tc.train)
			if want := lossRow(t, g.dir, tc.mode); math.Abs(loss-want) > 1e-5*math.Max(1, want) {
				t.Errorf("loss %v, want %v", loss, want)
			}
			ref := readTensors(t, filepath.Join(g.dir, tc.file))
			var zero *safetensors.File
			if tc.zero != "" {
				zero = readTensors(t, filepath.Join(g.dir, tc.zero))
			}
			n := 0
			for _, info := range lay.Tensors {
				if !info.Trainable {
					continue
				}
				want, ok := ref.Get(info.Name)
				if !ok {
					t.Fatalf("%s lacks %s", tc.file, info.Name)
				}
				var skip []float32
				if zero != nil {
					z, _ := zero.Get(info.Name)
					skip = z.Data
				}
				withinTensor(t, tc.mode+" "+info.Name, grad[info.Offset:info.Offset+info.Size], want.Data, skip, tc.tol)
				n++
			}
			if n != 18 {
				t.Errorf("compared %d tensors, want 18", n)
			}
		})
	}
}

func TestGoldenBNRunningStats(t *testing.T) {
	g := loadGolden(t)
	net := paperPass(t)
	p := append([]float32(nil), g.params.Data...)
	paramGrads(net, p, g.x, g.labels, true)
	ref := readTensors(t, filepath.Join(g.dir, "bn_running_after_step.safetensors"))
	if len(ref.Tensors) != 6 {
		t.Fatalf("want 6 tensors, got %d", len(ref.Tensors))
	}
	for _, want := range ref.Tensors {
		within(t, want.Name, net.Layout().View(p, want.Name), want.Data, 1e-5)
	}
}

// TestGoldenAdam checks the optimizer on torch's own gradients (steps 1 and
// 2), and one full float32 train step of ours outside the zero masks.
func TestGoldenAdam(t *testing.T) {
	g := loadGolden(t)
	net := paperPass(t)
	lay := net.Layout()
	vec := func(f *safetensors.File) []float32 {
		v := make([]float32, lay.Size)
		for _, info := range lay.Tensors {
			if tn, ok := f.Get(info.Name); ok {
				copy(v[info.Offset:], tn.Data)
			}
		}
		return v
	}
	cfg := PaperTrainConfig()
	g1 := vec(readTensors(t, filepath.Join(g.dir, "param_grads.safetensors")))
	g2 := vec(readTensors(t, filepath.Join(g.dir, "param_grads_step2.safetensors")))
	step1 := readTensors(t, filepath.Join(g.dir, "adam_step.safetensors"))
	step2 := readTensors(t, filepath.Join(g.dir, "adam_step2.safetensors"))

	p := append([]float32(nil), g.params.Data...)
	opt := NewAdam(lay, cfg)
	opt.Step(p, g1)
	for _, want := range step1.Tensors {
		within(t, "step 1 "+want.Name, lay.View(p, want.Name), want.Data, 1e-6)
	}
	// Step 2 starts from torch's step-1 parameters, with the moments of step 1.
	for _, want := range step1.Tensors {
		copy(lay.View(p, want.Name), want.Data)
	}
	opt.Step(p, g2)
	for _, want := range step2.Tensors {
		within(t, "step 2 "+want.Name, lay.View(p, want.Name), want.Data, 1e-6)
	}

	// Our own train-mode gradients and step, outside the exact-zero entries.
	q := append([]float32(nil), g.params.Data...)
	_, own := paramGrads(net, q, g.x, g.labels, true)
	NewAdam(lay, cfg).Step(q, own)
	zero := readTensors(t, filepath.Join(g.dir, "param_grads_zero_mask.safetensors"))
	for _, want := range step1.Tensors {
		z, _ := zero.Get(want.Name)
		got := lay.View(q, want.Name)
		for i := range got {
			if z.Data[i] != 0 {
				continue
			}
			if d := math.Abs(float64(got[i] - want.Data[i])); d > 1e-5 {
				t.Errorf("own step %s[%d] = %g, want %g", want.Name, i, got[i], want.Data[i])
				break
			}
		}
	}
}

func TestGoldenMCDropoutFold(t *testing.T) {
	g := loadGolden(t)
	dir := filepath.Join(g.dir, "mcdropout_fold")
	maskRow := golden.CSV32(t, filepath.Join(dir, "mask.csv"))[0]
	mask := make([]bool, len(maskRow))
	for i, v := range maskRow {
		mask[i] = v != 0
	}
	da := PaperArchDropout(0.2)
	// The dropout architecture has the same tensors as the paper's.
	p, err := ParamsFromFile(da, readTensors(t, filepath.Join(g.dir, "model.safetensors")), "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	fa, fp, err := FoldDropout(da, p.Data, [][]bool{mask})
	if err != nil {
		t.Fatal(err)
	}
	lay, _ := NewLayout(fa)
	ref := readTensors(t, filepath.Join(dir, "fc2_folded.safetensors"))
	for _, want := range ref.Tensors {
		within(t, want.Name, lay.View(fp, want.Name), want.Data, 1e-6)
	}
	m, err := NewModel(Params{Arch: fa, Data: fp})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "mc-dropout logits", evalLogits(t, fa, fp, g.x), golden.Flat(golden.CSV32(t, filepath.Join(dir, "logits.csv"))), 1e-5)
	probs := make([]float32, 256)
	if err := m.Probs(context.Background(), probs, g.x); err != nil {
		t.Fatal(err)
	}
	within(t, "mc-dropout probs", probs, golden.Flat(golden.CSV32(t, filepath.Join(dir, "probs.csv"))), 1e-5)

	// A train-mode forward of the dropout net with that mask on fc2's input
	// is the folded network (eval-mode batchnorm elsewhere is what the
	// folded model computes; here we check the eval-mode dropout identity).
	within(t, "eval-mode dropout is the identity", evalLogits(t, da, p.Data, g.x), golden.Flat(golden.CSV32(t, filepath.Join(g.dir, "logits.csv"))), 1e-5)
}
