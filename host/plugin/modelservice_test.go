package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/plugins/explainer/gradinput"
	"github.com/uaxai/uaxai/sdk"
)

// wantsModel is explainer.gradinput asking for the model service, under
// the ID explainer.gradinput-svc.
type wantsModel struct{ *gradinput.Explainer }

func (w wantsModel) Info() sdk.Info {
	i := w.Explainer.Info()
	i.ID, i.WantsModel = "explainer.gradinput-svc", true
	return i
}

// serveRegistry is what the test binary serves as built-ins:
// testRegistry's and explainer.gradinput-svc.
func serveRegistry() *Registry {
	r := testRegistry()
	must(r.Add(func() sdk.Plugin { return wantsModel{gradinput.New()} }))
	return r
}

// TestModelServiceOutOfProcess: a plugin process that wants the model
// service gets its draws computed by the host: the maps are x * the host
// network's input gradient, the draw is served from Load to Close, and
// closing the Manager removes the service's socket directory.
func TestModelServiceOutOfProcess(t *testing.T) {
	m := NewManager(serveRegistry(), Options{Logger: quietLogger(t)})
	t.Cleanup(m.Close)
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.gradinput-svc")
	if err != nil {
		t.Fatal(err)
	}
	if pidOf(t, e) <= 0 {
		t.Fatal("the plugin does not run in a process of its own")
	}
	if !e.Info().WantsModel {
		t.Fatalf("Info %+v does not want the model", e.Info())
	}
	lm, err := e.Load(ctx, sdk.Draw{Params: params(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n := m.models.Len(); n != 1 {
		t.Fatalf("%d draws served after Load, want 1", n)
	}
	req := request(nil)
	maps, err := lm.Explain(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	checkGradInput(t, req, maps)
	// A bad request reaches the service from the plugin and comes back as
	// the call's error, naming the plugin.
	bad := request(nil)
	bad.Targets = []int{0, 5}
	if _, err := lm.Explain(ctx, bad); err == nil || !strings.Contains(err.Error(), "explainer.gradinput-svc") {
		t.Errorf("target out of range: %v", err)
	}
	if err := lm.Close(); err != nil {
		t.Fatal(err)
	}
	if n := m.models.Len(); n != 0 {
		t.Errorf("%d draws served after Close, want 0", n)
	}
	// The socket's directory lives until the Manager closes.
	lm2, err := e.Load(ctx, sdk.Draw{Params: params(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lm2.Close()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "uaxai-models-*"))
	var mine string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "model.sock")); err == nil {
			mine = d
		}
	}
	if mine == "" {
		t.Fatalf("no model service socket under %s", os.TempDir())
	}
	m.Close()
	if _, err := os.Stat(mine); err == nil {
		// Another test's service may hold another directory; ours must be
		// gone.
		if _, err := os.Stat(filepath.Join(mine, "model.sock")); err == nil {
			t.Errorf("the model service's socket %s is still there after Close", mine)
		}
	}
}

// TestAddDirs: a recipe's plugin_dirs are searched first.
func TestAddDirs(t *testing.T) {
	m := newManager(t, Options{Dirs: []string{t.TempDir()}})
	ctx := context.Background()
	if _, err := m.Explainer(ctx, "explainer.gradinput"); err == nil || !strings.Contains(err.Error(), "unknown plugin") {
		t.Fatalf("before AddDirs: %v", err)
	}
	m2 := newManager(t, Options{Dirs: []string{t.TempDir()}})
	m2.AddDirs(filepath.Dir(gradinputBin), filepath.Dir(gradinputBin))
	if got := m2.dirs(); len(got) != 2 || got[0] != filepath.Dir(gradinputBin) {
		t.Fatalf("dirs %v: want the added one first, once", got)
	}
	if _, err := m2.Explainer(ctx, "explainer.gradinput"); err != nil {
		t.Fatalf("after AddDirs: %v", err)
	}
}
