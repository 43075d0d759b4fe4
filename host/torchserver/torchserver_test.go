package torchserver

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// TestTorchServerErrors: a model server that does not start says why, in
// terms of what the user gave: a module that does not import (its
// traceback's last line), a class that needs arguments (the argument,
// and --model-args), a weights file that does not fit (PyTorch's
// mismatch), an interpreter without torch (what to install). Each is a
// server start (about 2 s: torch's import).
func TestTorchServerErrors(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.Dir(t, "archs")
	w := []string{filepath.Join(root, "fcn", "model.safetensors")}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.py", "import torch\nimport no_such_package_x\n\nclass Net(torch.nn.Module):\n    pass\n")
	needs := write("needs.py", "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self, width):\n        super().__init__()\n        self.fc = torch.nn.Linear(640, width)\n\n    def forward(self, x):\n        return torch.softmax(self.fc(x.flatten(1)), 1)\n")
	// A python3 whose torch does not import (a torch.py first on its path).
	block := filepath.Join(dir, "block")
	if err := os.Mkdir(block, 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join("block", "torch.py"), "raise ImportError(\"No module named 'torch'\")\n")
	notorch := write("python3-notorch", "#!/bin/sh\nPYTHONPATH="+block+":$PYTHONPATH exec "+pythontest.Python+" \"$@\"\n")

	ctx := context.Background()
	for _, c := range []struct {
		name   string
		model  Model
		env    string
		want   []string
		weight []string
	}{
		{name: "module does not import", model: Model{Module: bad + ":Net"},
			want: []string{"exited with status 1 before serving", "No module named 'no_such_package_x'", "bad.py"}},
		{name: "class needs arguments", model: Model{Module: needs + ":Net"},
			want: []string{"missing 1 required positional argument: 'width'", "--model-args"}},
		{name: "state_dict does not fit", model: Model{Module: needs + ":Net", Args: map[string]any{"width": int64(16)}},
			want: []string{"model.safetensors", "Error(s) in loading state_dict for Net", "size mismatch for fc.weight", "does not fit the module"}},
		{name: "no torch", model: Model{Module: filepath.Join(root, "archs.py") + ":FCN"}, env: notorch,
			want: []string{notorch + " lacks PyTorch", "apt-get install python3-torch", "$UAXAI_PYTHON"}},
		{name: "no such class", model: Model{Module: filepath.Join(root, "archs.py") + ":Nope"},
			want: []string{"has no torch.nn.Module class 'Nope'", "FCN", "ResNet1D"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(pyinterp.Env, c.env)
			}
			srv, err := Start(ctx, c.model, w, 1, 640)
			if err == nil {
				srv.Close()
				t.Fatal("the server started")
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error does not say %q:\n%v", s, err)
				}
			}
		})
	}
}

// TestTorchServerRefusals: what is refused before any process starts
// (no Python needed): no module, a module without a class, a file that
// does not exist, no weights, an output that is neither probs nor
// logits, arguments that are not JSON values; and no interpreter with
// the kit's modules, naming each one tried and what to install.
func TestTorchServerRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	py := filepath.Join(dir, "net.py")
	if err := os.WriteFile(py, []byte("import torch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := []string{py} // exists; never read in these cases
	for _, c := range []struct {
		m       Model
		weights []string
		want    string
	}{
		{Model{}, w, "no module (accepted: path/file.py:Class)"},
		{Model{Module: py}, w, "want path/file.py:Class"},
		{Model{Module: py + ":"}, w, "want path/file.py:Class"},
		{Model{Module: filepath.Join(dir, "nope.py") + ":Net"}, w, "nope.py"},
		{Model{Module: py + ":Net"}, nil, "no weights file"},
		{Model{Module: py + ":Net"}, []string{filepath.Join(dir, "none.safetensors")}, "none.safetensors"},
		{Model{Module: py + ":Net", Output: "softmax"}, w, "want probs"},
		{Model{Module: py + ":Net", Args: map[string]any{"x": math.NaN()}}, w, "--model-args"},
	} {
		_, err := Start(ctx, c.m, c.weights, 1, 640)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: %v, want an error saying %q", c.m, c.weights, err, c.want)
		}
	}

	// No interpreter: every candidate is missing.
	t.Setenv(pyinterp.Env, filepath.Join(dir, "no-python"))
	defer pyinterp.SetDefaults([]string{filepath.Join(dir, "no-python3")})()
	kit, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctx, Model{Module: py + ":Net", Kit: kit}, w, 1, 640)
	var ne *pyinterp.NoInterpreterError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "no-python3") || !strings.Contains(err.Error(), pyinterp.Apt) || !strings.Contains(err.Error(), "python3-torch") {
		t.Errorf("no interpreter: %v, want a NoInterpreterError naming each candidate, %s and python3-torch", err, pyinterp.Apt)
	}
}

// TestFindPythonKit: the kit is found on PYTHONPATH first, else above
// the working directory (the repository's sdk/python); a PYTHONPATH entry
// without the kit is passed over.
func TestFindPythonKit(t *testing.T) {
	other := t.TempDir()
	alt := filepath.Join(t.TempDir(), "kit")
	if err := os.MkdirAll(filepath.Join(alt, "uaxai_plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alt, pythonKitFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", other+string(filepath.ListSeparator)+alt)
	if got, err := FindPythonKit(); err != nil || got != alt {
		t.Errorf("with %s on PYTHONPATH: %q, %v", alt, got, err)
	}
	t.Setenv("PYTHONPATH", other)
	want, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := FindPythonKit(); err != nil || got != want {
		t.Errorf("from %s: %q, %v; want %s", strconv.Quote("host/torchserver"), got, err, want)
	}
}
