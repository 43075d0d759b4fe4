package plugin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/plugins/posterior/ensemble"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/host/plugin/internal/testplugin/echo"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// testBin, gradinputBin and hostileBin are the plugin binaries TestMain
// builds: the test plugin, the example third-party plugin and the plugin
// that misbehaves on purpose (test-only state).
var testBin, gradinputBin, hostileBin string

// TestMain serves a built-in when the test binary is re-executed as
// `<test binary> plugin serve <id>` by a Manager (the go-plugin magic
// cookie is then set), and otherwise builds the testplugin binary once
// and runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv("UAXAI_PLUGIN") != "" && len(os.Args) > 3 && os.Args[1] == "plugin" && os.Args[2] == "serve" {
		if err := Serve(serveRegistry(), os.Args[3:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The hostile cases mostly wait for a deadline: run more of them at
	// once than there are cores, unless -test.parallel says otherwise.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	dir, err := os.MkdirTemp("", "uaxai-plugin-test")
	if err != nil {
		panic(err)
	}
	testBin = filepath.Join(dir, "testplugin")
	gradinputBin = filepath.Join(dir, "uaxai-explainer-gradinput")
	hostileBin = filepath.Join(dir, "hostile")
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./internal/testplugin", "./internal/testplugin/hostile", "../../plugins/explainer/gradinput/cmd/uaxai-explainer-gradinput").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func testRegistry() *Registry {
	r := NewRegistry()
	must(r.Add(func() sdk.Plugin { return echo.New("explainer.builtin-echo") }))
	must(r.Add(func() sdk.Plugin { return echo.Mean{} }))
	must(r.Add(func() sdk.Plugin { return ensemble.New() }))
	must(r.Add(func() sdk.Plugin { return ensemble.NewDeterministic() }))
	return r
}

// TestPartsOutOfProcess: a built-in posterior's sdk.Parted reaches the
// host through the process boundary (the engine makes a fit unit of each
// part): the ensemble answers its members, the deterministic posterior 1,
// and a bad table is an error that names the plugin.
func TestPartsOutOfProcess(t *testing.T) {
	m := newManager(t, Options{Exe: os.Args[0]})
	ctx := context.Background()
	for _, c := range []struct {
		id   string
		cfg  sdk.Config
		want int
	}{{"posterior.ensemble", sdk.Config{"members": int64(3)}, 3}, {"posterior.deterministic", nil, 1}} {
		p, err := m.Posterior(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		pp, ok := p.(sdk.Parted)
		if !ok {
			t.Fatalf("%s: the host's posterior (%T) hides Parts", c.id, p)
		}
		if k, err := pp.Parts(c.cfg); err != nil || k != c.want {
			t.Errorf("%s: Parts = %d, %v; want %d", c.id, k, err, c.want)
		}
	}
	p, _ := m.Posterior(ctx, "posterior.ensemble")
	if _, err := p.(sdk.Parted).Parts(sdk.Config{"members": int64(0)}); err == nil || !strings.Contains(err.Error(), "posterior.ensemble") {
		t.Errorf("bad table: %v", err)
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// install copies the test plugin into dir under name.
func install(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	b, err := os.ReadFile(testBin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func quietLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: io.Discard})
}

func newManager(t *testing.T, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = quietLogger(t)
	}
	m := NewManager(testRegistry(), opts)
	t.Cleanup(m.Close)
	return m
}

// model is a real 8-sample network for the plugins to build.
// explain loads the tiny model into e, explains one batch and releases
// the model, as the engine does for each draw.
func explain(t *testing.T, ctx context.Context, e driver.Explainer, req sdk.ExplainRequest) ([][]float64, error) {
	t.Helper()
	m, err := e.Load(ctx, sdk.Draw{Params: params(t)})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Explain(ctx, req)
}

func params(t *testing.T) nn.Params {
	t.Helper()
	a := nn.Arch{Name: "tiny", InChannels: 1, InLen: 8, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 2, Kernel: 3},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	d := make([]float32, lay.Size)
	for i := range d {
		d[i] = float32(i%5) * 0.1
	}
	return nn.Params{Arch: a, Data: d}
}

func request(cfg sdk.Config) sdk.ExplainRequest {
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i) - 4
	}
	return sdk.ExplainRequest{X: x, Targets: []int{0, 2}, Config: cfg}
}

func checkEcho(t *testing.T, maps [][]float64) {
	t.Helper()
	if len(maps) != 2 || maps[0][3] != -1 || maps[1][7] != 3*11 {
		t.Fatalf("echo maps %v", maps)
	}
}

// checkGradInput checks maps against explainer.gradinput's closed form on
// params(t): x * d p_target / d x, bit for bit.
func checkGradInput(t *testing.T, req sdk.ExplainRequest, maps [][]float64) {
	t.Helper()
	mod, err := nn.NewModel(params(t))
	if err != nil {
		t.Fatal(err)
	}
	n := mod.InputLen()
	grad := make([]float32, len(req.X))
	if err := mod.InputGrad(context.Background(), grad, nil, req.X, req.Targets); err != nil {
		t.Fatal(err)
	}
	if len(maps) != len(req.Targets) {
		t.Fatalf("%d maps for %d inputs", len(maps), len(req.Targets))
	}
	for b := range maps {
		for i, v := range maps[b] {
			if want := float64(req.X[b*n+i]) * float64(grad[b*n+i]); v != want {
				t.Fatalf("input %d index %d: %v, want x * grad = %v", b, i, v, want)
			}
		}
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func pidOf(t *testing.T, e driver.Explainer) int {
	t.Helper()
	r, ok := e.(remoteExplainer)
	if !ok {
		t.Fatalf("%T is not a remote explainer", e)
	}
	return r.p.pid
}

func TestBinaryPlugin(t *testing.T) {
	dir := t.TempDir()
	path := install(t, dir, "uaxai-explainer-echo", 0o755)
	m := newManager(t, Options{Dirs: []string{filepath.Join(dir, "missing"), dir}})
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	if e.Info().ID != "explainer.echo" || e.Info().Version != "0.0.1" {
		t.Errorf("Info %+v", e.Info())
	}
	maps, err := explain(t, ctx, e, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)
	pid := pidOf(t, e)
	if !alive(pid) {
		t.Fatalf("plugin pid %d not running", pid)
	}
	e2, err := m.Explainer(ctx, "explainer.echo")
	if err != nil || pidOf(t, e2) != pid {
		t.Errorf("second request started another process (%v)", err)
	}
	_, err = explain(t, ctx, e, request(sdk.Config{"fail": "window too long"}))
	if err == nil || err.Error() != "explainer.echo: Explain: window too long" {
		t.Errorf("plugin error %q, want it to name the plugin", err)
	}
	if err := e.Check(sdk.Config{"windw": 3}); err == nil || !strings.Contains(err.Error(), `explainer.echo: Check: unknown key "windw"`) {
		t.Errorf("Check: %v", err)
	}

	// Crash: the error names the plugin, its binary and its pid, and shows
	// what it wrote to stderr; the next request restarts it.
	_, err = explain(t, ctx, e, request(sdk.Config{"crash": true}))
	want := fmt.Sprintf("explainer.echo (%s, pid %d) exited unexpectedly during Explain", path, pid)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "echo: crashing on request") {
		t.Fatalf("crash error %q, want %q and the plugin's last stderr line", err, want)
	}
	if _, err := explain(t, ctx, e, request(nil)); err == nil || !strings.Contains(err.Error(), "exited unexpectedly") {
		t.Errorf("a call on the dead plugin: %v", err)
	}
	e3, err := m.Explainer(ctx, "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	if pidOf(t, e3) == pid {
		t.Errorf("the crashed plugin was not restarted")
	}
	maps, err = explain(t, ctx, e3, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)

	// Close kills it.
	pid3 := pidOf(t, e3)
	m.Close()
	if alive(pid3) {
		t.Errorf("pid %d still running after Close", pid3)
	}
	if _, err := m.Explainer(ctx, "explainer.echo"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("request after Close: %v", err)
	}
}

func TestCancellation(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "uaxai-explainer-echo", 0o755)
	m := newManager(t, Options{Dirs: []string{dir}})
	e, err := m.Explainer(context.Background(), "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	// The deadline is the call's alone: the model is loaded before it
	// starts, so that the call that blocks until cancelled meets it for
	// sure, however long the load takes.
	mod, err := e.Load(context.Background(), sdk.Draw{Params: params(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = mod.Explain(ctx, request(sdk.Config{"block": true}))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "explainer.echo") {
		t.Fatalf("blocked call: %v, want DeadlineExceeded naming the plugin", err)
	}
	// The plugin saw its context end (up to a minute: the cancellation
	// reaches it asynchronously).
	var maps [][]float64
	for i := 0; i < 3000; i++ {
		if maps, err = explain(t, context.Background(), e, request(sdk.Config{"cancelled": true})); err != nil {
			t.Fatal(err)
		}
		if maps[0][0] == 1 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the plugin counted %v cancelled calls, want 1", maps[0][0])
}

func TestBuiltinOutOfProcess(t *testing.T) {
	// The test binary serves built-ins (see TestMain).
	m := newManager(t, Options{Exe: os.Args[0]})
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.builtin-echo")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := explain(t, ctx, e, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)
	s, err := m.Summary(ctx, "summary.mean")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Summarise(ctx, [][][]float64{{{1, 2}, {3, 6}}}, nil)
	if err != nil || !reflect.DeepEqual(res[0].Map, []float64{2, 4}) {
		t.Errorf("mean summary: %v, %v", res, err)
	}
	pid := pidOf(t, e)
	_, err = explain(t, ctx, e, request(sdk.Config{"crash": true}))
	want := fmt.Sprintf("explainer.builtin-echo (built-in, pid %d) exited unexpectedly during Explain", pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("crash error %q, want %q", err, want)
	}
}

func TestInProcess(t *testing.T) {
	m := newManager(t, Options{InProcess: true})
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.builtin-echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, remote := e.(remoteExplainer); remote {
		t.Fatal("in-process built-in runs remotely")
	}
	maps, err := explain(t, ctx, e, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)
	_, err = explain(t, ctx, e, request(sdk.Config{"fail": "nope"}))
	if err == nil || err.Error() != "explainer.builtin-echo: Explain: nope" {
		t.Errorf("in-process error %q, want the same form as a remote one", err)
	}
}

func TestUnknownAndMismatched(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "uaxai-explainer-echo", 0o755)
	path := install(t, dir, "uaxai-explainer-other", 0o755)
	m := newManager(t, Options{Dirs: []string{dir}, InProcess: true})
	ctx := context.Background()

	_, err := m.Explainer(ctx, "explainer.nope")
	if err == nil || !strings.Contains(err.Error(), `unknown plugin "explainer.nope" (known: explainer.builtin-echo, explainer.echo, explainer.other, posterior.deterministic, posterior.ensemble, summary.mean;`) ||
		!strings.Contains(err.Error(), "uaxai-explainer-nope") || !strings.Contains(err.Error(), dir) {
		t.Errorf("unknown plugin: %v", err)
	}
	if _, err := m.Summary(ctx, "explainer.echo"); err == nil || !strings.Contains(err.Error(), `plugin "explainer.echo" is of kind explainer, not summary`) {
		t.Errorf("wrong kind: %v", err)
	}
	if _, err := m.Explainer(ctx, "occlusion"); err == nil || !strings.Contains(err.Error(), "not of the form kind.name") || !strings.Contains(err.Error(), "explainer.echo") {
		t.Errorf("bad ID: %v", err)
	}
	broken := filepath.Join(dir, "uaxai-explainer-broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'broken: cannot start' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = m.Explainer(ctx, "explainer.broken")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`starting plugin "explainer.broken" (%s)`, broken)) || !strings.Contains(err.Error(), "broken: cannot start") {
		t.Errorf("binary that fails to start: %v", err)
	}
	_, err = m.Explainer(ctx, "explainer.other")
	want := fmt.Sprintf(`plugin binary %s serves "explainer.echo", but its file name says "explainer.other"; rename it uaxai-explainer-echo`, path)
	if err == nil || err.Error() != want {
		t.Errorf("mismatched name: %v\nwant %s", err, want)
	}
}

func TestList(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	p1 := install(t, d1, "uaxai-explainer-echo", 0o755)
	p2 := install(t, d2, "uaxai-explainer-echo", 0o755)
	noexec := install(t, d1, "uaxai-explainer-noexec", 0o644)
	install(t, d1, "uaxai-tool", 0o755)
	if err := os.Mkdir(filepath.Join(d2, "uaxai-summary-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, d1, "uaxai-explainer-builtin-echo", 0o755) // shadowed by the built-in (and serves another ID)
	m := newManager(t, Options{Dirs: []string{d1, d2}})
	got, err := m.List(context.Background())
	want := []Entry{
		{ID: "explainer.builtin-echo", Kind: sdk.KindExplainer, Version: "0.0.1", Source: "built-in", Language: "go"},
		{ID: "explainer.builtin-echo", Kind: sdk.KindExplainer, Source: filepath.Join(d1, "uaxai-explainer-builtin-echo"), Language: "binary", Shadowed: true, Problem: "failed to start (see the error)"},
		{ID: "explainer.echo", Kind: sdk.KindExplainer, Version: "0.0.1", Source: p1, Language: "binary"},
		{ID: "explainer.echo", Kind: sdk.KindExplainer, Version: "0.0.1", Source: p2, Language: "binary", Shadowed: true},
		{ID: "explainer.noexec", Kind: sdk.KindExplainer, Source: noexec, Problem: "not an executable file (mode 0644)"},
		{ID: "posterior.deterministic", Kind: sdk.KindPosterior, Version: ensemble.NewDeterministic().Info().Version, Source: "built-in", Language: "go"},
		{ID: "posterior.ensemble", Kind: sdk.KindPosterior, Version: ensemble.New().Info().Version, Source: "built-in", Language: "go"},
		{ID: "summary.dir", Kind: sdk.KindSummary, Source: filepath.Join(d2, "uaxai-summary-dir"), Problem: "a directory without plugin.toml, not an executable file"},
		{ID: "summary.mean", Kind: sdk.KindSummary, Version: "1.0.0", Source: "built-in", Language: "go"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n got %+v\nwant %+v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), `uaxai-explainer-builtin-echo serves "explainer.echo"`) {
		t.Errorf("List error %v, want the misnamed binary reported", err)
	}
	// The binary in use stays running; the probed ones do not.
	m.mu.Lock()
	n := len(m.procs)
	m.mu.Unlock()
	if n != 1 {
		t.Errorf("%d plugin processes after List, want 1", n)
	}
}

func TestKillOnSignal(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "uaxai-explainer-echo", 0o755)
	m := newManager(t, Options{Dirs: []string{dir}})
	ctx, stop := m.KillOnSignal(context.Background())
	defer stop()
	e, err := m.Explainer(ctx, "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("SIGTERM did not cancel the context")
	}
	for i := 0; i < 2400 && alive(pid); i++ { // up to a minute: a loaded machine reaps slowly
		time.Sleep(25 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("plugin pid %d survived SIGTERM of the host", pid)
	}
	if _, err := explain(t, context.Background(), e, request(nil)); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("call after the signal: %v", err)
	}
}

// named is a plugin whose Info the test chooses.
type named struct {
	echo.Mean
	info sdk.Info
}

func (n named) Info() sdk.Info { return n.info }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	mk := func(id, version string) func() sdk.Plugin {
		return func() sdk.Plugin { return named{info: sdk.Info{ID: id, Version: version, Output: sdk.OutputMap}} }
	}
	for _, c := range []struct {
		id   string
		make func() sdk.Plugin
		want string
	}{
		{"summary.mean", mk("summary.mean", "1"), ""},
		{"summary.mean", mk("summary.mean", "1"), "already registered"},
		{"mean", mk("mean", "1"), "not of the form kind.name"},
		{"explainer.mean", mk("explainer.mean", "1"), "is a plugin of kind summary but its ID \"explainer.mean\" is namespaced explainer"},
		{"summary.x", mk("summary.x", ""), "Version is empty"},
		{"summary.y", nil, "nil constructor"},
		{"explainer.a", func() sdk.Plugin { return echo.New("explainer.a") }, ""},
	} {
		err := r.Add(c.make)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Add(%q): %v, want %q", c.id, err, c.want)
		}
	}
	if got := r.IDs(); !reflect.DeepEqual(got, []string{"explainer.a", "summary.mean"}) {
		t.Errorf("IDs %v", got)
	}
	if _, err := r.Lookup("summary.nope"); err == nil || !strings.Contains(err.Error(), "built-ins: explainer.a, summary.mean") {
		t.Errorf("Lookup: %v", err)
	}
	if err := ServeBuiltin(r, "summary.nope"); err == nil {
		t.Errorf("ServeBuiltin of an unknown ID succeeded")
	}
}

func TestDefaultDirs(t *testing.T) {
	t.Setenv(PathEnv, "/a/b:/c::/a/b")
	exe, _ := os.Executable()
	got := DefaultDirs("/flag", "/c")
	want := []string{"/flag", "/c", "/a/b", filepath.Dir(exe)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultDirs %v, want %v", got, want)
	}
}

// TestThirdPartyBinary runs the example plugin's real binary.
func TestThirdPartyBinary(t *testing.T) {
	dir := filepath.Dir(gradinputBin)
	m := newManager(t, Options{Dirs: []string{dir}})
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.gradinput")
	if err != nil {
		t.Fatal(err)
	}
	if e.Info().Needs != sdk.NeedsInputGrad || e.Info().Stochastic {
		t.Errorf("Info %+v", e.Info())
	}
	req := request(nil)
	maps, err := explain(t, ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	checkGradInput(t, req, maps)
	list, err := m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, en := range list {
		found = found || en == Entry{ID: "explainer.gradinput", Kind: sdk.KindExplainer, Version: "1.0.0", Source: gradinputBin, Language: LangBinary}
	}
	if !found {
		t.Errorf("List %+v lacks the gradinput binary", list)
	}
}
