package runner

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
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
	r, err := recipe.Parse("torchpost.toml", []byte(text), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), r, Options{Plugins: torchManager(t), Workers: 2, Observer: &notes{}})
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
