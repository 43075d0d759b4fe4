package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/testdep"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestMeasure: Measure runs a case once to warm up and then at least reps
// times, and reports the median and the minimum a map.
func TestMeasure(t *testing.T) {
	runs := 0
	c := Case{Name: "sleep", Maps: 2, Run: func(context.Context) error {
		runs++
		time.Sleep(time.Duration(runs) * time.Millisecond)
		return nil
	}}
	r, err := Measure(context.Background(), c, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 4 || r.Reps != 3 {
		t.Fatalf("%d runs, %d reps; want 4 and 3", runs, r.Reps)
	}
	// runs 2, 3, 4 sleep 2, 3, 4 ms: 1, 1.5, 2 ms a map
	if r.Min < 1 || r.Median < 1.5 || r.Median < r.Min || r.Median > 100 {
		t.Errorf("median %v, min %v ms a map; want 1.5..100 and >= 1", r.Median, r.Min)
	}
	boom := errors.New("boom")
	if _, err := Measure(context.Background(), Case{Name: "fails", Maps: 1, Run: func(context.Context) error { return boom }}, 1, 0); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
}

// fakePython writes an executable that answers the probe and prints
// what torch_ref.py bench prints without Captum: its environment line
// (with the GLIBC_TUNABLES and OPENBLAS_NUM_THREADS it was started with),
// then bench.
func fakePython(t *testing.T, bench string) string {
	t.Helper()
	dir := t.TempDir()
	py := filepath.Join(dir, "python")
	script := "#!/bin/sh\nif [ \"$1\" = -c ]; then echo 1.13.0; exit 0; fi\n" +
		"echo '# captum not importable: captum ops skipped' >&2\n" +
		`echo "{\"op\": \"environment\", \"torch\": \"1.13.0\", \"threads\": $OPENBLAS_NUM_THREADS, \"blas\": \"openblas (pthread)\", ` +
		`\"blas_path\": \"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so\", \"blas_build\": \"generic\", \"mkldnn\": true, \"glibc_tunables\": \"$GLIBC_TUNABLES\"}"` +
		"\ncat <<'EOF'\n" + bench + "\nEOF\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return py
}

// TestReference: the harness's JSON lines become measurements keyed by op
// and variant, its stderr notes are kept, and the table's cells take the
// best variant; the MC-dropout row is 20 times the occlusion's; a missing
// interpreter or torch is ErrNoTorch.
func TestReference(t *testing.T) {
	py := fakePython(t, `{"op": "occlusion_torch", "n": 2, "median_item_ms": 30.5, "batch": 582}
{"op": "occlusion_torch", "n": 2, "median_item_ms": 20.25, "median_item_cpu_ms": 38.5, "batch": 64}
not json
{"op": "gradcam", "n": 2, "median_item_ms": 0.8, "median_item_cpu_ms": 1.5}
{"op": "lime", "n": 2, "median_item_ms": 17, "median_item_cpu_ms": 30, "ppe": 128, "interpretable_model": "linreg"}`)
	script := filepath.Join(t.TempDir(), "torch_ref.py")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=4")
	t.Setenv("OPENBLAS_NUM_THREADS", "7")
	ref, err := RunReference(context.Background(), ReferenceOptions{Python: py, Script: script, Threads: 3, N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Torch != "1.13.0" || ref.Measured["occlusion_torch batch 64"] != 20.25 || ref.Measured["lime ppe 128"] != 17 || len(ref.Measured) != 4 ||
		ref.CPU["occlusion_torch batch 64"] != 38.5 || len(ref.CPU) != 3 {
		t.Fatalf("reference %+v", ref)
	}
	if len(ref.Notes) != 1 || !strings.Contains(ref.Notes[0], "captum not importable") {
		t.Errorf("notes %q", ref.Notes)
	}
	// the harness ran with the malloc tuning after the caller's own
	// tunables, and with --threads' count, and its environment line is read
	want := RefEnv{Threads: 3, BLAS: "openblas (pthread)", BLASPath: "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so",
		BLASBuild: "generic", MKLDNN: true, GlibcTunables: "glibc.malloc.arena_max=4:" + MallocTunables, Reported: true}
	if ref.Env != want {
		t.Errorf("environment %+v, want %+v", ref.Env, want)
	}
	if got := ref.EnvLine(); got != "BLAS loaded: openblas (pthread) (/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so); "+
		"oneDNN (mkldnn): available (runs torch's batched convolutions); torch threads 3; GLIBC_TUNABLES=glibc.malloc.arena_max=4:"+MallocTunables {
		t.Errorf("EnvLine %q", got)
	}
	if got := (&Reference{}).EnvLine(); !strings.Contains(got, "did not report") {
		t.Errorf("EnvLine without the line: %q", got)
	}
	for key, want := range map[string]string{
		"occlusion":    "torch 20.25 (batch 64, CPU 38.50); torch 30.50 (batch 582)",
		"occlusion_mc": "405.0 (20 x torch, batch 64, CPU 770.00)",
		"gradcam":      "Captum 0.800 (CPU 1.50)",
		"lime":         "Captum 17.00 (ppe 128, CPU 30.00)",
	} {
		if got := refCell(ref, key); got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
	noCaptum := &Reference{Measured: map[string]float64{"occlusion_torch batch 64": 20}}
	if got := refCell(noCaptum, "gradcam"); got != "not measured (needs Captum)" {
		t.Errorf("gradcam without Captum: %q", got)
	}
	if got := refCell(noCaptum, "occlusion"); got != "torch 20.00 (batch 64)" {
		t.Errorf("occlusion without CPU times: %q", got)
	}
	if got := refCell(nil, "lime"); got != "not measured" {
		t.Errorf("no reference: %q", got)
	}
	if _, err := RunReference(context.Background(), ReferenceOptions{Python: filepath.Join(t.TempDir(), "none"), Script: script, Threads: 2, N: 1}); !errors.Is(err, ErrNoTorch) {
		t.Errorf("missing interpreter: %v, want ErrNoTorch", err)
	}
	if _, err := RunReference(context.Background(), ReferenceOptions{Python: py, Script: filepath.Join(t.TempDir(), "none.py"), Threads: 2, N: 1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing script: %v, want not exist", err)
	}
}

// TestRunTable: Run measures every case and prints the table, saying the
// reference was not measured when python cannot import torch.
func TestRunTable(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small network")
	}
	var out, log bytes.Buffer
	err := Run(context.Background(), Options{Seed: 1, Reps: 1, Reference: true,
		Ref: ReferenceOptions{Python: filepath.Join(t.TempDir(), "none"), Script: "testdata/none.py", Threads: 2, N: 1}}, &out, &log)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"occlusion, w60 s1", "20 MC-dropout draws", "Grad-CAM", "LIME, 128 samples", "reference not measured", "Captum LayerGradCam 0.72"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "n/a") {
		t.Errorf("a CPU time or the load is missing:\n%s", s)
	}
}

// TestForwardFLOPs: the paper's network, counted by hand: 2 x (638*8*1*3
// + 636*8*8*3 + 632*16*8*3 + 630*16*16*3 + 16*64 + 64*16) = 1,732,000.
func TestForwardFLOPs(t *testing.T) {
	if got := forwardFLOPs(nn.PaperArch()); got != 1732000 {
		t.Errorf("forwardFLOPs = %v, want 1732000", got)
	}
}

// TestCases: the four cases on the setup: their maps and FLOPs, draws that
// share the trunk and differ in fc2, and a case that reports its
// explainer's error (a cancelled context) from any draw.
func TestCases(t *testing.T) {
	s := sharedSetup(t)
	if len(s.Draws) != Draws || len(s.X) != Batch*640 || len(s.Targets) != Batch || len(s.Seeds) != Batch {
		t.Fatalf("setup: %d draws, %d values, %d targets, %d seeds", len(s.Draws), len(s.X), len(s.Targets), len(s.Seeds))
	}
	lay, err := nn.NewLayout(s.Draws[0].Arch())
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := s.Draws[0].Params().Data, s.Draws[1].Params().Data
	if !slices.Equal(lay.View(p0, "conv4.weight"), lay.View(p1, "conv4.weight")) || slices.Equal(lay.View(p0, "fc2.weight"), lay.View(p1, "fc2.weight")) {
		t.Error("MC-dropout draws 0 and 1: want the same conv4 and another fc2")
	}
	fwd := 1732000.0
	want := map[string]float64{"occlusion": 582 * fwd, "occlusion_mc": Draws * 582 * fwd, "gradcam": 0, "lime": 128 * fwd}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range s.Cases() {
		if c.Maps != Batch || c.FLOPs != want[c.Key] {
			t.Errorf("%s: %d maps, %v FLOPs; want %d and %v", c.Key, c.Maps, c.FLOPs, Batch, want[c.Key])
		}
		if err := c.Run(context.Background()); err != nil {
			t.Errorf("%s: %v", c.Key, err)
		}
		if err := c.Run(cancelled); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", c.Key, err)
		}
	}
}

// TestThreadCPU: a case that spins uses CPU time close to its wall time,
// one that sleeps almost none; both in ms a map.
func TestThreadCPU(t *testing.T) {
	spin := Case{Name: "spin", Maps: 2, Run: func(context.Context) error {
		for t0 := time.Now(); time.Since(t0) < 4*time.Millisecond; {
		}
		return nil
	}}
	r, err := Measure(context.Background(), spin, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	// No upper bound on the wall time: a loaded machine deschedules the
	// spinning thread for any time (then its CPU is less than its wall).
	if !(r.CPU > 0 && r.CPU <= r.Median*1.05 && r.Median >= 2) {
		t.Errorf("spin: CPU %v, wall %v ms a map", r.CPU, r.Median)
	}
	sleep := Case{Name: "sleep", Maps: 2, Run: func(context.Context) error { time.Sleep(4 * time.Millisecond); return nil }}
	if r, err = Measure(context.Background(), sleep, 3, 0); err != nil {
		t.Fatal(err)
	}
	if !(r.CPU < r.Median/2 && r.Median >= 2) {
		t.Errorf("sleep: CPU %v, wall %v ms a map", r.CPU, r.Median)
	}
	if v, err := strconv.ParseFloat(loadAvg(), 64); err != nil || v < 0 {
		t.Errorf("load average %q", loadAvg())
	}
}

// TestReferenceEnv: the reference's environment keeps everything else,
// appends the malloc tuning to the caller's GLIBC_TUNABLES (or sets it),
// and sets every thread count to threads, each variable once.
func TestReferenceEnv(t *testing.T) {
	get := func(env []string, k string) (vals []string) {
		for _, kv := range env {
			if key, v, _ := strings.Cut(kv, "="); key == k {
				vals = append(vals, v)
			}
		}
		return vals
	}
	env := referenceEnv([]string{"PATH=/usr/bin", "OMP_NUM_THREADS=8", "HOME=/root", "X=a=b"}, 2)
	for k, want := range map[string]string{"PATH": "/usr/bin", "HOME": "/root", "X": "a=b", "OMP_NUM_THREADS": "2",
		"OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "GLIBC_TUNABLES": MallocTunables} {
		if v := get(env, k); len(v) != 1 || v[0] != want {
			t.Errorf("%s = %q, want once %q", k, v, want)
		}
	}
	if len(env) != 7 {
		t.Errorf("environment %q: want 7 variables", env)
	}
	for in, want := range map[string]string{
		"glibc.malloc.arena_max=2":      "glibc.malloc.arena_max=2:" + MallocTunables,
		"glibc.cpu.x86_ibt=on:":         "glibc.cpu.x86_ibt=on:" + MallocTunables,
		"":                              MallocTunables,
		"glibc.malloc.mmap_threshold=1": "glibc.malloc.mmap_threshold=1:" + MallocTunables, // ours is later, so it wins
	} {
		env := referenceEnv([]string{"GLIBC_TUNABLES=" + in}, 1)
		if v := get(env, "GLIBC_TUNABLES"); len(v) != 1 || v[0] != want {
			t.Errorf("GLIBC_TUNABLES=%q: got %q, want %q", in, v, want)
		}
	}
}

// TestHarnessBLASParsing runs the Python harness's own tests of reading
// the loaded BLAS out of a /proc/self/maps text (blasinfo.py), when
// /usr/bin/python3 is there (it needs nothing else).
func TestHarnessBLASParsing(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testdep.Skip(t, testdep.Python, py, ": ", err)
	}
	// read here so that go test's cache sees a change of either file
	for _, f := range []string{"blasinfo.py", "test_blasinfo.py"} {
		if _, err := os.ReadFile(filepath.Join("../../testdata/peers", f)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(py, "-m", "unittest", "discover", "-s", "../../testdata/peers", "-p", "test_*.py").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Errorf("unittest output:\n%s", out)
	}
}

// TestMedian: the middle value, or the mean of the two middle ones.
func TestMedian(t *testing.T) {
	if m := median([]float64{1, 2, 4}); m != 2 {
		t.Errorf("odd: %v", m)
	}
	if m := median([]float64{1, 2, 4, 8}); m != 3 {
		t.Errorf("even: %v", m)
	}
}

// TestRunWithReference: Run puts the harness's measurements beside ours
// and prints its notes.
func TestRunWithReference(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small network")
	}
	py := fakePython(t, `{"op": "occlusion_torch", "n": 1, "median_item_ms": 20.25, "batch": 64}`)
	script := filepath.Join(t.TempDir(), "torch_ref.py")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	if err := Run(context.Background(), Options{Seed: 2, Reps: 1, Reference: true,
		Ref: ReferenceOptions{Python: py, Script: script, Threads: 2, N: 1}}, &out, &log); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"torch 20.25 (batch 64)", "405.0 (20 x torch, batch 64)", "reference measured in this run: torch 1.13.0, 2 threads, median over 1 waveforms",
		"reference: BLAS loaded: openblas (pthread) (", "reference: captum not importable"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
