package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ReferenceOptions say how to run the PyTorch reference harness
// (testdata/peers/torch_ref.py, a copy of the project's harness).
type ReferenceOptions struct {
	Python  string // the interpreter; /usr/bin/python3 sees Debian's torch
	Script  string // path of torch_ref.py
	Threads int    // torch threads (2: the machine's cores)
	N       int    // waveforms an op
}

// Reference is what the harness measured, in ms a waveform (the median
// over its waveforms) per op and variant ("occlusion_torch batch 64"),
// with the lines it wrote to stderr.
type Reference struct {
	Measured map[string]float64
	// CPU is the median CPU time a waveform of the harness's process (all
	// of torch's threads), by the same keys, when the harness gives it.
	CPU   map[string]float64
	Notes []string
	Torch string // torch's version
	Env   RefEnv // what the harness ran on, as it reported it
}

// RefEnv is the harness's "environment" line: what torch ran on.
type RefEnv struct {
	Threads int `json:"threads"`
	// BLAS is the library the harness's process has mapped (read from
	// /proc/self/maps: "openblas (pthread)", "reference", "mkl", "none",
	// ...), BLASPath its file. torch's BLAS_INFO (BLASBuild, "generic" in
	// Debian's build) says only what the build was configured with.
	BLAS      string `json:"blas"`
	BLASPath  string `json:"blas_path"`
	BLASBuild string `json:"blas_build"`
	// MKLDNN: oneDNN is available, and runs torch's batched convolutions
	// (aten::mkldnn_convolution), whatever the BLAS.
	MKLDNN        bool   `json:"mkldnn"`
	GlibcTunables string `json:"glibc_tunables"`
	Reported      bool   `json:"-"` // the harness printed the line
}

// MallocTunables is the glibc malloc tuning the reference runs with: with
// glibc's defaults, torch's large temporary tensors are returned to the OS
// after each forward and faulted back in on the next (1.19M page faults
// against 38k with the tuning, on the paper's occlusion), which costs more
// than the BLAS does.
const MallocTunables = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456"

// referenceEnv is the environment of the reference process: environ with
// MallocTunables appended to any GLIBC_TUNABLES it has (a later setting of
// the same tunable wins), and the OpenMP, OpenBLAS and MKL thread counts
// set to threads (the harness sets them too, before importing torch).
func referenceEnv(environ []string, threads int) []string {
	set := map[string]string{
		"OMP_NUM_THREADS":      strconv.Itoa(threads),
		"OPENBLAS_NUM_THREADS": strconv.Itoa(threads),
		"MKL_NUM_THREADS":      strconv.Itoa(threads),
	}
	tunables := MallocTunables
	out := make([]string, 0, len(environ)+len(set)+1)
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "GLIBC_TUNABLES":
			if v = strings.Trim(v, ":"); v != "" {
				tunables = v + ":" + MallocTunables
			}
		case set[k] != "":
		default:
			out = append(out, kv)
		}
	}
	for _, k := range []string{"MKL_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"} {
		out = append(out, k+"="+set[k])
	}
	return append(out, "GLIBC_TUNABLES="+tunables)
}

// probeScript prints torch's version, or fails when torch is missing.
const probeScript = `import torch, numpy
print(torch.__version__)`

// ErrNoTorch is returned when the interpreter cannot import torch.
var ErrNoTorch = errors.New("python cannot import torch")

// RunReference runs `torch_ref.py bench` for the ops that have a row in
// the table: occlusion in torch (batches of 64 and of all 582 inputs) and,
// when Captum is importable, Captum's Occlusion, LayerGradCam and Lime.
// The harness runs at its best, in the environment referenceEnv makes
// (the malloc tuning, o.Threads threads), and reports what it ran on
// (Reference.Env) and each op's wall and CPU medians.
func RunReference(ctx context.Context, o ReferenceOptions) (*Reference, error) {
	if _, err := os.Stat(o.Script); err != nil {
		return nil, fmt.Errorf("reference harness: %w", err)
	}
	env := referenceEnv(os.Environ(), o.Threads)
	probe := exec.CommandContext(ctx, o.Python, "-c", probeScript)
	probe.Env = env
	out, err := probe.Output()
	if err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoTorch, o.Python, err)
	}
	ver, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	cmd := exec.CommandContext(ctx, o.Python, o.Script, "bench",
		"--threads", strconv.Itoa(o.Threads), "--n", strconv.Itoa(o.N),
		"--ops", "occlusion_captum,occlusion_torch,gradcam,lime",
		"--occ-chunks", "0,64", "--ppe", "64,581", "--lime-ppe", "128", "--lime-models", "linreg")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("reference harness: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	r := &Reference{Measured: map[string]float64{}, CPU: map[string]float64{}, Torch: strings.TrimSpace(ver)}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line = strings.TrimSpace(strings.TrimPrefix(line, "#")); line != "" {
			r.Notes = append(r.Notes, line)
		}
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var rec struct {
			Op     string   `json:"op"`
			Median float64  `json:"median_item_ms"`
			CPU    float64  `json:"median_item_cpu_ms"`
			Batch  *int     `json:"batch"`
			PPE    *int     `json:"ppe"`
			Model  string   `json:"interpretable_model"`
			Diff   *float64 `json:"max_abs_diff_vs_captum"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Op == "" {
			continue
		}
		if rec.Op == "environment" {
			if json.Unmarshal(sc.Bytes(), &r.Env) == nil {
				r.Env.Reported = true
			}
			continue
		}
		if rec.Median == 0 {
			continue
		}
		key := rec.Op
		switch {
		case rec.Batch != nil:
			key += fmt.Sprintf(" batch %d", *rec.Batch)
		case rec.PPE != nil:
			key += fmt.Sprintf(" ppe %d", *rec.PPE)
		}
		r.Measured[key] = rec.Median
		if rec.CPU > 0 {
			r.CPU[key] = rec.CPU
		}
	}
	return r, nil
}

// EnvLine says what the reference ran on, as the harness reported it.
func (r *Reference) EnvLine() string {
	e := r.Env
	if !e.Reported {
		return "the harness did not report its BLAS and oneDNN (an older torch_ref.py?)"
	}
	blas := e.BLAS
	if e.BLASPath != "" {
		blas += " (" + e.BLASPath + ")"
	}
	dnn := "not available"
	if e.MKLDNN {
		dnn = "available (runs torch's batched convolutions)"
	}
	tun := e.GlibcTunables
	if tun == "" {
		tun = "unset"
	}
	return fmt.Sprintf("BLAS loaded: %s; oneDNN (mkldnn): %s; torch threads %d; GLIBC_TUNABLES=%s", blas, dnn, e.Threads, tun)
}

// cpuNote is ", CPU c" when the harness gave key's CPU time, else "".
func (r *Reference) cpuNote(key string, scale float64) string {
	if c, ok := r.CPU[key]; ok {
		return fmt.Sprintf(", CPU %.2f", scale*c)
	}
	return ""
}

// best returns the smallest measurement whose key starts with op, and its
// key.
func (r *Reference) best(op string) (float64, string, bool) {
	v, at, ok := 0.0, "", false
	for k, ms := range r.Measured {
		if (k == op || strings.HasPrefix(k, op+" ")) && (!ok || ms < v) {
			v, at, ok = ms, k, true
		}
	}
	return v, at, ok
}

// readmeFigures are the 2-thread medians testdata/peers/README.md gives
// for a 2-core machine of this kind, ms a waveform.
var readmeFigures = map[string]string{
	"occlusion":    "Captum 45; torch, batches of 64: 14-24",
	"occlusion_mc": "20 x the above",
	"gradcam":      "Captum LayerGradCam 0.72",
	"lime":         "Captum Lime (128 samples, ppe 128) 20",
}
