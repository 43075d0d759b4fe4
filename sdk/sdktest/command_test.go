package sdktest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
)

// TestPluginUnderTest is the conformance kit's command line for a plugin
// executable in any language:
//
//	UAXAI_PLUGIN_UNDER_TEST=path/to/uaxai-explainer-NAME \
//	UAXAI_PLUGIN_CONFIG='{"window": 60}' \
//	go test ./sdk/sdktest -run TestPluginUnderTest -v
//
// It runs ExplainerCommand on DefaultCase (seed 1) with that config, and
// is skipped when the variable is unset.
func TestPluginUnderTest(t *testing.T) {
	path := os.Getenv("UAXAI_PLUGIN_UNDER_TEST")
	if path == "" {
		t.Skip("set UAXAI_PLUGIN_UNDER_TEST to a plugin executable (and UAXAI_PLUGIN_CONFIG to its recipe table as JSON) to check it")
	}
	var cfg sdk.Config
	if s := os.Getenv("UAXAI_PLUGIN_CONFIG"); s != "" {
		if err := json.Unmarshal([]byte(s), &cfg); err != nil {
			t.Fatalf("UAXAI_PLUGIN_CONFIG: %v (accepted: a JSON object, the plugin's recipe table)", err)
		}
		for k, v := range cfg { // JSON numbers that are integers are TOML integers
			if f, ok := v.(float64); ok && f == float64(int64(f)) && !strings.ContainsAny(strconv.FormatFloat(f, 'g', -1, 64), ".e") {
				cfg[k] = int64(f)
			}
		}
	}
	c, err := DefaultCase(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ExplainerCommand(t, []string{path}, c)
}

// examples is the repository's plugins/explainer directory.
func examples(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "plugins", "explainer"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPythonExamplesConform: the kit's example plugins pass the checks
// as executables, on the paper's network: python-echo (no model),
// python-occlusion (the model service, deterministic) and
// python-kernelshap (the model service, stochastic).
func TestPythonExamplesConform(t *testing.T) {
	pythontest.Need(t)
	dir := examples(t)
	for _, c := range []struct {
		name string
		cfg  sdk.Config
	}{
		{"python-echo", sdk.Config{"scale": 0.5}},
		{"python-occlusion", sdk.Config{"window": int64(60), "stride": int64(20), "baseline": "mean"}},
		{"python-kernelshap", sdk.Config{"samples": int64(80), "feature": int64(32)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs, err := DefaultCase(2, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, c.name, run(t, func(tb testing.TB) {
				ExplainerCommand(tb, []string{filepath.Join(dir, c.name, "uaxai-explainer-"+c.name)}, cs)
			}))
		})
	}
}

// TestPythonInterpreterChosen: with a python3 without numpy first on
// PATH (the #! line "/usr/bin/env python3" runs it, and the plugin
// stops), the kit runs a Python example under /usr/bin/python3 and it
// passes; with no interpreter that has the modules, the kit fails with
// an error that lists every interpreter it tried.
func TestPythonInterpreterChosen(t *testing.T) {
	shim := pythontest.BareShim(t)
	t.Setenv(pyinterp.Env, "")
	echo := filepath.Join(examples(t), "python-echo", "uaxai-explainer-python-echo")
	if out, err := exec.Command(echo).CombinedOutput(); err == nil || !strings.Contains(string(out), "lacks") {
		t.Fatalf("run by its #! line under the shim, python-echo: %v\n%s", err, out)
	}
	cs, err := DefaultCase(6, sdk.Config{"scale": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "python-echo under the shim", run(t, func(tb testing.TB) {
		ExplainerCommand(tb, []string{echo}, cs)
	}))

	// A second interpreter without the modules in place of /usr/bin/python3.
	bare := filepath.Join(t.TempDir(), "bare-python")
	if err := os.WriteFile(bare, []byte(pythontest.ShimScript), 0o755); err != nil {
		t.Fatal(err)
	}
	defer pyinterp.SetDefaults([]string{"python3", bare})()
	fails := run(t, func(tb testing.TB) { ExplainerCommand(tb, []string{echo}, cs) })
	expect(t, "no interpreter", fails,
		"starting "+echo+": it is a Python plugin, and no Python interpreter tried has numpy, grpcio and protobuf:",
		"\n\tthe #! line's python3 ("+shim+"): lacks numpy",
		"\n\tDebian's "+bare+": lacks numpy",
		"apt-get install python3-numpy python3-grpcio python3-protobuf",
		"$UAXAI_PYTHON")
	if len(fails) != 1 {
		t.Errorf("%d failures, want the one error: %q", len(fails), fails)
	}
}

// TestCommandFindsBrokenPlugins: a Python plugin that breaks a rule is
// reported, each by its rule.
func TestCommandFindsBrokenPlugins(t *testing.T) {
	pythontest.Need(t)
	kit, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	plugin := func(name, info, explain string) string {
		src := `#!/usr/bin/env python3
import sys
sys.path.insert(0, ` + strconv.Quote(kit) + `)
import numpy as np
from uaxai_plugin import Info, serve, NEEDS_PROBS
calls = [0]
class P:
    def info(self):
        return Info(id="explainer.` + name + `", version="1.0.0", needs=NEEDS_PROBS, ` + info + `)
    def check(self, config):
        for k in (config or {}):
            if k != "scale":
                raise ValueError("unknown key %r" % k)
    def explain(self, model, x, targets, seeds, config):
` + explain + `
serve(P())
`
		path := filepath.Join(t.TempDir(), "uaxai-explainer-"+name)
		if err := os.WriteFile(path, []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cs, err := DefaultCase(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, info, explain string
		want                []string
	}{
		{"counter", "wants_model=True", "        calls[0] += 1\n        return [model.probs(x)[b, targets[b]] + np.zeros(x.shape[1]) + calls[0] for b in range(len(targets))]",
			[]string{"not deterministic: the same request gave different maps"}},
		{"batchnorm", "wants_model=True", "        p = model.probs(x)[np.arange(len(targets)), targets]\n        return [np.full(x.shape[1], p[b] / p.max()) for b in range(len(targets))]",
			[]string{"maps depend on the batch"}},
		{"seedless", "stochastic=True", "        return [np.abs(x[b]).astype(np.float64) for b in range(len(targets))]",
			[]string{"declares itself stochastic but its maps did not change"}},
		{"seedy", "", "        return [np.full(x.shape[1], float(seeds[b] % 97)) for b in range(len(targets))]",
			[]string{"declares itself deterministic (Stochastic false) but its maps changed with the seeds"}},
		{"short", "", "        return [np.zeros(x.shape[1] - 1) for b in range(len(targets))]",
			[]string{"Explain: explainer.short: Explain: input 0: map has 639 values, want 640"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expect(t, c.name, run(t, func(tb testing.TB) { ExplainerCommand(tb, []string{plugin(c.name, c.info, c.explain)}, cs) }), c.want...)
		})
	}
	// A command that is no plugin.
	expect(t, "not a plugin", run(t, func(tb testing.TB) { ExplainerCommand(tb, []string{"/bin/true"}, cs) }), "starting the plugin")
}

// TestGoBinaryConforms: the Go example plugin's binary passes as well
// (its parameters are sent: it does not want the model service).
func TestGoBinaryConforms(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "uaxai-explainer-gradinput")
	if out, err := exec.Command("go", "build", "-o", bin, "../../plugins/explainer/gradinput/cmd/uaxai-explainer-gradinput").CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	cs, err := DefaultCase(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "gradinput", run(t, func(tb testing.TB) { ExplainerCommand(tb, []string{bin}, cs) }))
}

// TestReadmePythonPlugin: the README's complete Python plugin is under
// 30 lines and passes the conformance kit as printed.
func TestReadmePythonPlugin(t *testing.T) {
	pythontest.Need(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "This is a\ncomplete plugin")
	if !ok {
		t.Fatal("README.md: no \"This is a complete plugin\" paragraph")
	}
	_, rest, ok = strings.Cut(rest, "```python\n")
	src, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("README.md: the complete plugin has no ```python block")
	}
	if n := strings.Count(src, "\n"); n >= 30 {
		t.Errorf("the README's complete plugin has %d lines; the guide promises under 30", n)
	}
	kit, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, "/path/to/uaxai/sdk/python") {
		t.Fatal("the README's plugin no longer puts /path/to/uaxai/sdk/python on sys.path")
	}
	path := filepath.Join(t.TempDir(), "uaxai-explainer-my_saliency")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(src, "/path/to/uaxai/sdk/python", kit)), 0o755); err != nil {
		t.Fatal(err)
	}
	cs, err := DefaultCase(5, nil)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "README plugin", run(t, func(tb testing.TB) { ExplainerCommand(tb, []string{path}, cs) }))
}
