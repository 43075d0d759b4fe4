package recipe

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

const torchRecipe = `name = "torch"
[model]
torch = "nets/resnet.py:ResNet1D"
args = { width = 8, blocks = 2 }
output = "logits"

[[posterior]]
use = "torch"
label = "Ensemble"
weights = ["a.safetensors", "b.safetensors"]
draws = 2

[[posterior]]
use = "torch"
label = "Other"
module = "pkg.nets:Other"
weights = "c.pt"

[[explainer]]
use = "occlusion"

[[summary]]
use = "mean"
`

// TestTorchModel: [model] torch is a model known by its shape only, with
// the data's shape and classes; the posterior.torch tables that name no
// module take the module, args and output from [model], the others keep
// their own; the canonical form round-trips.
func TestTorchModel(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		cin, len, k int
	}{
		{"pqd", "", 1, 640, 16},
		{"pqd-3phase", "[data]\nsource = \"pqd-3phase\"\ncycles = 5\n", 3, 320, len(data.PQD3{}.Classes())},
	} {
		r, err := Parse(c.name+".toml", []byte(torchRecipe+c.extra), "/recipes")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, err := r.Arch()
		if err != nil {
			t.Fatal(err)
		}
		want := nn.Arch{Name: "ResNet1D", InChannels: c.cin, InLen: c.len, Outputs: c.k}
		if !reflect.DeepEqual(a, want) || !a.ShapeOnly() || a.Classes() != c.k || a.Validate() != nil {
			t.Errorf("%s: arch %+v (classes %d, validate %v), want %+v", c.name, a, a.Classes(), a.Validate(), want)
		}
		got := r.Posteriors[0].Config
		wantCfg := sdk.Config{"file": "nets/resnet.py", "module": "ResNet1D", "args": map[string]any{"width": int64(8), "blocks": int64(2)},
			"output": "logits", "weights": []any{"a.safetensors", "b.safetensors"}}
		if !reflect.DeepEqual(got, wantCfg) {
			t.Errorf("%s: the first posterior's keys\n got %#v\nwant %#v", c.name, got, wantCfg)
		}
		if other := r.Posteriors[1].Config; !reflect.DeepEqual(other, sdk.Config{"module": "pkg.nets:Other", "weights": "c.pt"}) || r.Posteriors[1].From != nil {
			t.Errorf("%s: a table naming its own module took [model]'s keys: %#v (from %v)", c.name, other, r.Posteriors[1].From)
		}
		checkCanonical(t, r, "/recipes")
	}

	// A name inside a file may reach into a class.
	if _, err := Parse("inner.toml", []byte(strings.Replace(torchRecipe, ":ResNet1D", ":Zoo.ResNet1D", 1)), ""); err != nil {
		t.Errorf("file:Outer.Inner: %v", err)
	}
	// A module of sys.path is a module key, with no file.
	text := strings.Replace(torchRecipe, `torch = "nets/resnet.py:ResNet1D"`, `torch = "mypkg.models:build"`, 1)
	r, err := Parse("mod.toml", []byte(text), "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := r.Posteriors[0].Config; cfg["module"] != "mypkg.models:build" || cfg["file"] != nil {
		t.Errorf("module form: %#v", cfg)
	}

	// A plugin's error about an inherited key points at [model].
	r, err = Parse("torch.toml", []byte(torchRecipe), "")
	if err != nil {
		t.Fatal(err)
	}
	perr := errors.New(`key "module": nets/resnet.py has no class or function "ResNet1D"`)
	got := r.PluginError(r.Posteriors[0], perr)
	wantErr(t, got, lineOf(t, torchRecipe, "torch ="), "[[posterior]] #1", "posterior.torch", "no class or function")
	got = r.PluginError(r.Posteriors[0], errors.New(`key "args": ResNet1D(**{}) failed`))
	wantErr(t, got, lineOf(t, torchRecipe, "args ="))
	got = r.PluginError(r.Posteriors[1], errors.New(`key "module": pkg.nets does not import`))
	wantErr(t, got, lineOf(t, torchRecipe, `module = "pkg.nets:Other"`))
}

// TestTorchModelFiles: with source = "files" the shape is given by keys,
// and no training set is needed (nothing is trained); without torch it
// still is.
func TestTorchModelFiles(t *testing.T) {
	dir := t.TempDir()
	te := filepath.Join(dir, "te")
	os.MkdirAll(te, 0o755)
	for _, f := range []string{"waveforms.npy", "labels.npy"} {
		os.WriteFile(filepath.Join(te, f), nil, 0o644)
	}
	files := "[data]\nsource = \"files\"\ntest = [\"te\"]\n"
	text := torchRecipe + files
	text = strings.Replace(text, `output = "logits"`, "output = \"logits\"\nin_channels = 2\nin_len = 100\nclasses = 5", 1)
	r, err := Parse("files.toml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := r.Arch(); !reflect.DeepEqual(a, nn.Arch{Name: "ResNet1D", InChannels: 2, InLen: 100, Outputs: 5}) || r.Data.Train != "" {
		t.Errorf("arch %+v, train %q", a, r.Data.Train)
	}
	checkCanonical(t, r, dir)
	// Without the shape keys: the first missing one is named.
	bare := torchRecipe + files
	_, err = Parse("files.toml", []byte(bare), dir)
	wantErr(t, err, lineOf(t, bare, "torch ="), `key "in_channels" is needed with source "files"`)
	// Without torch, train is required.
	plain := minimal + files
	_, err = Parse("files.toml", []byte(plain), dir)
	wantErr(t, err, lineOf(t, plain, "[data]"), `needs key "train"`)
	// val keys without a training set.
	bad := strings.Replace(text, "test = [", "val_fraction = 0.2\ntest = [", 1)
	_, err = Parse("files.toml", []byte(bad), dir)
	wantErr(t, err, lineOf(t, bad, "val_fraction"), `applies only with key "train"`)
}

// TestTorchModelErrors: each bad [model] torch table is reported at its
// key, with what is accepted.
func TestTorchModelErrors(t *testing.T) {
	for _, c := range []struct{ old, new, marker, want string }{
		{`torch = "nets/resnet.py:ResNet1D"`, `torch = "nets/resnet.py"`, "torch =", `accepted: "file.py:Name"`},
		{`torch = "nets/resnet.py:ResNet1D"`, `torch = "nets/resnet.py:1x"`, "torch =", `accepted: "file.py:Name"`},
		{`torch = "nets/resnet.py:ResNet1D"`, `torch = "my-pkg:Net"`, "torch =", "package.module:Name"},
		{`torch = "nets/resnet.py:ResNet1D"`, `torch = "pkg.nets:A.B"`, "torch =", "Name one Python name"},
		{`torch = "nets/resnet.py:ResNet1D"`, `torch = "nets/resnet.py:A..B"`, "torch =", `accepted: "file.py:Name"`},
		{`torch = "nets/resnet.py:ResNet1D"`, `torch = 3`, "torch =", "want a string"},
		{`output = "logits"`, `output = "softmax"`, "output =", `accepted: "probs"`},
		{`args = { width = 8, blocks = 2 }`, `args = [8, 2]`, "args =", "want a table of keyword arguments"},
		{`output = "logits"`, "output = \"logits\"\narch = \"paper-1dcnn\"", "arch =", "accepted: one of them"},
		{`output = "logits"`, "output = \"logits\"\n[[model.layers]]\nkind = \"dense\"\nname = \"fc\"\nout = 16", "[[model.layers]]", "accepted: one of them"},
		{`output = "logits"`, "output = \"logits\"\nin_len = 320", "in_len =", `source "pqd" gives 640`},
		{`output = "logits"`, "output = \"logits\"\nclasses = 4", "classes =", "accepted: 16, or no key"},
	} {
		text := strings.Replace(torchRecipe, c.old, c.new, 1)
		_, err := Parse("bad.toml", []byte(text), "")
		wantErr(t, err, lineOf(t, text, c.marker), c.want)
	}
	// args and output belong to torch.
	for _, kv := range []string{"args = { a = 1 }", `output = "logits"`} {
		text := strings.Replace(minimal, "[[posterior]]", "[model]\n"+kv+"\n[[posterior]]", 1)
		_, err := Parse("bad.toml", []byte(text), "")
		wantErr(t, err, lineOf(t, text, kv), "applies only to a PyTorch module")
	}
}
