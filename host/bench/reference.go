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
	Notes    []string
	Torch    string // torch's version
}

// probeScript prints torch's version and the BLAS it was built with.
const probeScript = `import re, torch, numpy
print(torch.__version__)
m = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
print(m.group(1) if m else "unknown")`

// ErrNoTorch is returned when the interpreter cannot import torch.
var ErrNoTorch = errors.New("python cannot import torch")

// RunReference runs `torch_ref.py bench` for the ops that have a row in
// the table: occlusion in torch (batches of 64 and of all 582 inputs) and,
// when Captum is importable, Captum's Occlusion, LayerGradCam and Lime.
func RunReference(ctx context.Context, o ReferenceOptions) (*Reference, error) {
	if _, err := os.Stat(o.Script); err != nil {
		return nil, fmt.Errorf("reference harness: %w", err)
	}
	probe := exec.CommandContext(ctx, o.Python, "-c", probeScript)
	out, err := probe.Output()
	if err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoTorch, o.Python, err)
	}
	ver, blas, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	cmd := exec.CommandContext(ctx, o.Python, o.Script, "bench",
		"--threads", strconv.Itoa(o.Threads), "--n", strconv.Itoa(o.N),
		"--ops", "occlusion_captum,occlusion_torch,gradcam,lime",
		"--occ-chunks", "0,64", "--ppe", "64,581", "--lime-ppe", "128", "--lime-models", "linreg")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("reference harness: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	r := &Reference{Measured: map[string]float64{}, Torch: strings.TrimSpace(ver)}
	if strings.TrimSpace(blas) == "generic" {
		r.Notes = append(r.Notes, "this torch build has BLAS_INFO=generic (the reference BLAS, as Debian's python3-torch): its convolutions are many times slower than a build with an optimised BLAS, which the README's figures are from")
	}
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
			Batch  *int     `json:"batch"`
			PPE    *int     `json:"ppe"`
			Model  string   `json:"interpretable_model"`
			Diff   *float64 `json:"max_abs_diff_vs_captum"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Op == "" || rec.Median == 0 {
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
	}
	return r, nil
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
