package runner

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/plugins/explainer/gradinput"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// torchRecipe runs the paper's network twice: as sdk/nn parameters read
// by posterior.files, and as a PyTorch module (testdata/peers/torch_ref.py's
// WaveNet) with the same weights file, served by posterior.torch; extra
// holds more posteriors.
func torchRecipe(root, out, extra string) string {
	weights := filepath.Join(root, "testdata", "golden", "paper-1dcnn", "model.safetensors")
	return fmt.Sprintf(`name = "torchpost"
seed = 11
out = %q
plugin_dirs = [%q]

[data]
source = "pqd"
train_per_class = 2
val_fraction = 0.5
test_splits = 1
test_per_class = 1

[model]
arch = "paper-1dcnn"

[[posterior]]
use = "files"
label = "Files"
weights = %q

[[posterior]]
use = "torch"
label = "Torch"
file = %q
module = "WaveNet"
weights = %q
%s
[[explainer]]
use = "occlusion"
window = 60
stride = 20

[[explainer]]
use = "gradinput"

[[summary]]
use = "mean"

[output]
maps = true
`, out, filepath.Join(root, "plugins", "posterior", "torch"), weights,
		filepath.Join(root, "testdata", "peers", "torch_ref.py"), weights, extra)
}

// torchManager is the built-in plugins and gradinput, in process.
func torchManager(t *testing.T) *plugin.Manager {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(func() sdk.Plugin { return gradinput.New() }); err != nil {
		t.Fatal(err)
	}
	m := plugin.NewManager(reg, plugin.Options{InProcess: true})
	t.Cleanup(m.Close)
	return m
}

// runMaps runs a recipe and returns, by "<posterior label slug>_<explainer>",
// the tensors "maps" ([records, S, N]) and "predicted" of its map files.
func runMaps(t *testing.T, text string) map[string]map[string][]float32 {
	t.Helper()
	return runMapsWorkers(t, text, 2)
}

// runMapsWorkers is runMaps with the given workers.
func runMapsWorkers(t *testing.T, text string, workers int) map[string]map[string][]float32 {
	t.Helper()
	r, err := recipe.Parse("torchpost.toml", []byte(text), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), r, Options{Plugins: torchManager(t), Workers: workers, Observer: &notes{}})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(o.Dir, "maps", "*.safetensors"))
	out := map[string]map[string][]float32{}
	for _, f := range files {
		st, err := safetensors.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := st.Get("maps")
		if !ok {
			continue // a summary's file
		}
		name := strings.TrimSuffix(filepath.Base(f), ".safetensors")
		name = name[strings.Index(name, "-")+1:]
		p, _ := st.Get("predicted")
		pred := p.Data
		for _, v := range p.Ints {
			pred = append(pred, float32(v))
		}
		if len(m.Data) == 0 || len(pred) == 0 {
			t.Fatalf("%s: maps %v (%s), predicted %v (%s): want float maps and the predictions", f, m.Shape, m.DType, p.Shape, p.DType)
		}
		out[name] = map[string][]float32{"maps": m.Data, "predicted": pred}
	}
	return out
}

// relMax is max |a - b| over max |b|.
func relMax(a, b []float32) float64 {
	d, s := 0.0, 0.0
	for i := range b {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
		s = math.Max(s, math.Abs(float64(b[i])))
	}
	return d / s
}

// TestTorchPosteriorSameNetworkTwoRoutes is a metamorphic test: one
// network, the paper's, given once as parameters (posterior.files, computed
// by sdk/nn in the host) and once as a PyTorch module with the same weights
// file (posterior.torch, computed by torch in the plugin's process and
// served): the occlusion and gradient x input maps agree within 1e-4 of
// each map's largest value, and the predictions are the same classes.
func TestTorchPosteriorSameNetworkTwoRoutes(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.RepoRoot(t)
	got := runMaps(t, torchRecipe(root, filepath.Join(t.TempDir(), "runs"), ""))
	var names []string
	for k := range got {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, ex := range []string{"occlusion", "gradinput"} {
		f, okf := got["files_explainer-"+ex]
		p, okp := got["torch_explainer-"+ex]
		if !okf || !okp {
			t.Fatalf("%s: map files missing (have %v)", ex, names)
		}
		if len(f["maps"]) != len(p["maps"]) || len(f["maps"]) == 0 {
			t.Fatalf("%s: %d map values through files, %d through torch", ex, len(f["maps"]), len(p["maps"]))
		}
		const n = 640
		worst := 0.0
		for i := 0; i < len(f["maps"]); i += n {
			e := relMax(p["maps"][i:i+n], f["maps"][i:i+n])
			if !(e <= 1e-4) {
				t.Errorf("%s map %d: torch differs from sdk/nn by %.3g of the map's largest value (want <= 1e-4)", ex, i/n, e)
			}
			worst = math.Max(worst, e)
		}
		t.Logf("%s: %d maps, worst difference %.3g of the map's largest value", ex, len(f["maps"])/n, worst)
		for i := range f["predicted"] {
			if f["predicted"][i] != p["predicted"][i] {
				t.Errorf("%s record %d: predicted %v through files, %v through torch", ex, i, f["predicted"][i], p["predicted"][i])
			}
		}
	}
}

// goldenSplit writes a golden network's 8 inputs as a dataset directory
// (waveforms.npy, labels.npy = the explained classes, masks.npy all
// set, so that every record is explained) and returns it with the rows.
func goldenSplit(t *testing.T, dir, name string, cin int) (wf, tg [][]float32) {
	t.Helper()
	wf = golden.CSV32(t, golden.File(t, "archs", name+"/waveforms.csv"))
	tg = golden.CSV32(t, golden.File(t, "archs", name+"/targets.csv"))
	s := data.Split{Name: "test", Channels: cin}
	for i, row := range wf {
		x := make([]float64, len(row))
		mask := make([]bool, len(row))
		for j, v := range row {
			x[j], mask[j] = float64(v), true
		}
		s.Records = append(s.Records, data.Record{Label: int(tg[i][0]), X: x, Mask: mask, SNRdB: math.NaN()})
	}
	if err := data.WriteNPYDir(dir, s, 0.001); err != nil {
		t.Fatal(err)
	}
	return wf, tg
}

// goldenTorchHead is the top of a recipe over a golden network's inputs
// (a files source of the test directory, nothing trained) with module
// file.py:Class on cin channels of 640 samples and 16 classes.
func goldenTorchHead(out, test, module string, cin int) string {
	return fmt.Sprintf(`name = "golden-torch"
seed = 3
out = %q

[data]
source = "files"
test = [%q]

[model]
torch = %q
args = { cin = %d }
in_channels = %d
in_len = 640
classes = 16
`, out, test, module, cin, cin)
}

// TestTorchRecipeGoldenArchs runs each network of testdata/golden/archs
// as a recipe's [model] torch (archs.py:<class>, args cin), its draw
// served by posterior.torch (which takes the module from [model]), on
// its 8 golden inputs as source = "files" with no training set: the
// run's occlusion maps (window 60, stride 20, baseline 0, one channel at
// a time) and raw Grad-CAM maps (the README's layer, align = "none")
// equal Captum's files within 1e-4 of each map's largest |value|, and
// the predicted classes are the golden targets. With -short only the
// three-channel network and the LSTM run.
func TestTorchRecipeGoldenArchs(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.RepoRoot(t)
	for _, a := range golden.TorchArchs {
		t.Run(a.Name, func(t *testing.T) {
			if testing.Short() && a.Name != "resnet1d-3ph" && a.Name != "lstm" {
				t.Skip("-short: the three-channel network and the LSTM only")
			}
			tmp := t.TempDir()
			test := filepath.Join(tmp, "test")
			wf, tg := goldenSplit(t, test, a.Name, a.Cin)
			arch := filepath.Join(root, "testdata", "golden", "archs")
			text := goldenTorchHead(filepath.Join(tmp, "runs"), test, filepath.Join(arch, "archs.py")+":"+a.Class, a.Cin) + fmt.Sprintf(`
[[posterior]]
use = "torch"
label = "Torch"
weights = %q

[[explainer]]
use = "occlusion"
window = 60
stride = 20
baseline = 0.0

[[explainer]]
use = "gradcam"
layer = %q
align = "none"

[[summary]]
use = "mean"

[output]
maps = true
`, filepath.Join(arch, a.Name, "model.safetensors"), a.Layer)
			got := runMaps(t, text)
			occ, cam := got["torch_explainer-occlusion"], got["torch_explainer-gradcam"]
			if occ == nil || cam == nil {
				t.Fatalf("map files: %v", slices.Collect(maps.Keys(got)))
			}
			n := a.Cin * 640
			if len(occ["maps"]) != len(wf)*n || len(cam["maps"]) != len(wf)*n {
				t.Fatalf("%d and %d map values, want %d records x 1 draw x %d", len(occ["maps"]), len(cam["maps"]), len(wf), n)
			}
			rows := func(v []float32, keep int) [][]float64 {
				var out [][]float64
				for i := 0; i < len(v); i += n {
					r := make([]float64, keep)
					for j := range r {
						r[j] = float64(v[i+j])
					}
					out = append(out, r)
				}
				return out
			}
			golden.RowsClose(t, "occlusion", rows(occ["maps"], n), golden.CSV32(t, golden.File(t, "archs", a.Name+"/occlusion.csv")), 1e-4)
			want := golden.CSV32(t, golden.File(t, "archs", a.Name+"/gradcam_raw.csv"))
			golden.RowsClose(t, "gradcam", rows(cam["maps"], len(want[0])), want, 1e-4)
			for i := range tg {
				if p := occ["predicted"][i]; int(p) != int(tg[i][0]) {
					t.Errorf("record %d: predicted %v, the golden target is %v", i, p, tg[i][0])
				}
			}
		})
	}
}

// TestTorchModelNeedsServedDraws: with [model] torch, a posterior that
// builds sdk/nn networks (here the deep ensemble) is refused at its use
// line, naming posterior.torch, and `uaxai train` refuses the recipe;
// posterior.torch is found without plugin_dirs (the repository's
// plugins/posterior/torch). Neither needs PyTorch.
func TestTorchModelNeedsServedDraws(t *testing.T) {
	text := `name = "t"
[model]
torch = "nets.py:Net"

[[posterior]]
use = "torch"
weights = "w.safetensors"

[[posterior]]
use = "ensemble"
members = 2

[[explainer]]
use = "occlusion"

[[summary]]
use = "mean"
`
	r, err := recipe.Parse("t.toml", []byte(text), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if d := shippedTorchPosterior(r); filepath.Base(d) != "torch" || filepath.Base(filepath.Dir(d)) != "posterior" {
		t.Errorf("posterior.torch's directory: %q", d)
	}
	// CheckStatic starts built-ins only: no Python is started.
	_, err = CheckStatic(context.Background(), r, torchManager(t))
	line := strings.Count(text[:strings.Index(text, `use = "ensemble"`)], "\n") + 1
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d:", line)) || !strings.Contains(err.Error(), "[[posterior]] #2 use (posterior.ensemble)") ||
		!strings.Contains(err.Error(), `accepted: use = "torch"`) {
		t.Errorf("ensemble with [model] torch: %v (want line %d, the posterior and what is accepted)", err, line)
	}
	if _, _, err := RecipeTraining(context.Background(), r); err == nil || !strings.Contains(err.Error(), "train the module in PyTorch") {
		t.Errorf("train with [model] torch: %v", err)
	}
}

// perturbed writes a copy of a golden network's weights with fc2.bias
// changed (a second member), without the integer num_batches_tracked
// counters (which torch does not need).
func perturbed(t *testing.T, src, dst string) {
	t.Helper()
	f, err := safetensors.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out []safetensors.Tensor
	for _, tt := range f.Tensors {
		if !tt.IsFloat() {
			continue
		}
		if tt.Name == "fc2.bias" {
			tt.Data = slices.Clone(tt.Data)
			for i := range tt.Data {
				tt.Data[i] += float32(i%5) * 0.5
			}
		}
		out = append(out, tt)
	}
	if err := safetensors.WriteFile(dst, out, nil); err != nil {
		t.Fatal(err)
	}
}

// TestTorchEnsembleAndMCDropout runs the golden StridedNet (dropout p =
// 0.2) through posterior.torch as a deep ensemble and as MC dropout, and
// checks what a draw is:
//   - ensemble draw s is the network of weights file s: the ensemble's
//     draws 0 and 1 give the maps of one-member posteriors of file 0 and
//     file 1, bit for bit;
//   - MC dropout draws are different networks (their maps differ), the
//     same in a second run with the same seed and any number of workers,
//     bit for bit; each draw is a thinned network, so its maps differ
//     from the network without dropout.
func TestTorchEnsembleAndMCDropout(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.RepoRoot(t)
	tmp := t.TempDir()
	test := filepath.Join(tmp, "test")
	wf, _ := goldenSplit(t, test, "stridednet", 1)
	w0 := filepath.Join(root, "testdata", "golden", "archs", "stridednet", "model.safetensors")
	w1 := filepath.Join(tmp, "member1.safetensors")
	perturbed(t, w0, w1)
	text := goldenTorchHead(filepath.Join(tmp, "runs"), test, filepath.Join(root, "testdata", "golden", "archs", "archs.py")+":StridedNet", 1) + fmt.Sprintf(`
[[posterior]]
use = "torch"
label = "A"
weights = %q

[[posterior]]
use = "torch"
label = "B"
weights = %q

[[posterior]]
use = "torch"
label = "E"
draws = 2
weights = [%q, %q]

[[posterior]]
use = "torch"
label = "M"
draws = 3
weights = %q
mc_dropout = true

[[explainer]]
use = "occlusion"
window = 60
stride = 20
baseline = 0.0

[[explainer]]
use = "gradinput"

[[summary]]
use = "mean"

[output]
maps = true
`, w0, w1, w0, w1, w0)
	got := runMaps(t, text)
	const n = 640
	// draw returns draw s of record r of a maps tensor [records, S, n].
	draw := func(m []float32, S, r, s int) []float32 { return m[(r*S+s)*n : (r*S+s+1)*n] }
	for _, ex := range []string{"occlusion", "gradinput"} {
		a, b, e, m := got["a_explainer-"+ex]["maps"], got["b_explainer-"+ex]["maps"], got["e_explainer-"+ex]["maps"], got["m_explainer-"+ex]["maps"]
		if len(a) != len(wf)*n || len(e) != 2*len(wf)*n || len(m) != 3*len(wf)*n {
			t.Fatalf("%s: %d, %d and %d map values (have %v)", ex, len(a), len(e), len(m), slices.Collect(maps.Keys(got)))
		}
		differ := 0
		for r := range wf {
			if !slices.Equal(draw(e, 2, r, 0), draw(a, 1, r, 0)) || !slices.Equal(draw(e, 2, r, 1), draw(b, 1, r, 0)) {
				t.Errorf("%s record %d: the ensemble's draws are not the maps of its members' networks", ex, r)
			}
			if slices.Equal(draw(a, 1, r, 0), draw(b, 1, r, 0)) {
				t.Errorf("%s record %d: the two members give the same map; the test cannot tell them apart", ex, r)
			}
			for s := range 3 {
				if slices.Equal(draw(m, 3, r, s), draw(a, 1, r, 0)) {
					t.Errorf("%s record %d: MC dropout draw %d is the network without dropout", ex, r, s)
				}
				if slices.Equal(draw(m, 3, r, s), draw(m, 3, r, (s+1)%3)) {
					differ++
				}
			}
		}
		if differ > 0 {
			t.Errorf("%s: %d pairs of MC dropout draws give identical maps", ex, differ)
		}
	}
	// The same recipe again, with one worker: the MC dropout maps are the
	// same bytes.
	again := runMapsWorkers(t, text, 1)
	for _, ex := range []string{"occlusion", "gradinput"} {
		if !slices.Equal(got["m_explainer-"+ex]["maps"], again["m_explainer-"+ex]["maps"]) {
			t.Errorf("%s: MC dropout maps differ between a run with 2 workers and one with 1", ex)
		}
	}
}
