package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// ID is the plugin's ID.
const ID = "posterior.files"

// Version is the plugin's version.
const Version = "1.0.0"

// The configuration keys, both file keys (Info.Files).
const (
	KeyWeights = "weights"
	KeyFiles   = "files"
)

// Posterior reads its members from files.
type Posterior struct{}

// New returns the files posterior.
func New() *Posterior { return &Posterior{} }

// Info describes the plugin: finite, and its two keys name files. It
// does not set Replicates: its networks do not depend on a seed.
func (*Posterior) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: Version, Summary: "networks read from safetensors files, one member a file (weights or files)",
		Finite: true, Files: []string{KeyWeights, KeyFiles}}
}

// Paths returns the file paths of a table, in member order: the one of
// "weights" or the list of "files". Exactly one of the two keys must be
// set, and every path must be a non-empty string.
func Paths(cfg sdk.Config) ([]string, error) {
	if err := cfg.Only(KeyWeights, KeyFiles); err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	w, hasW := cfg[KeyWeights]
	f, hasF := cfg[KeyFiles]
	switch {
	case hasW && hasF:
		return nil, fmt.Errorf("%s: key %q and key %q are both set (accepted: one of them: weights = \"w.safetensors\" or files = [\"a.safetensors\", ...])", ID, KeyWeights, KeyFiles)
	case !hasW && !hasF:
		return nil, fmt.Errorf("%s: no key %q or %q (accepted: weights = \"w.safetensors\" or files = [\"a.safetensors\", ...])", ID, KeyWeights, KeyFiles)
	case hasW:
		s, ok := w.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("%s: key %q is %T %v (accepted: the path of a safetensors file)", ID, KeyWeights, w, w)
		}
		return []string{s}, nil
	}
	list, ok := f.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%s: key %q is %T %v (accepted: a non-empty list of safetensors file paths)", ID, KeyFiles, f, f)
	}
	out := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("%s: key %q entry %d is %T %v (accepted: the path of a safetensors file)", ID, KeyFiles, i, v, v)
		}
		out[i] = s
	}
	return out, nil
}

// Check validates the table and the draws: at most one a file.
func (*Posterior) Check(cfg sdk.Config, draws int) error {
	paths, err := Paths(cfg)
	if err != nil {
		return err
	}
	if draws < 1 || draws > len(paths) {
		return fmt.Errorf("%s: key \"draws\": %d draws of a finite posterior of %d file(s) (accepted: 1..%d)", ID, draws, len(paths), len(paths))
	}
	return nil
}

// Read reads one weights file of arch a: its parameters and the SHA-256
// of its bytes (the bytes that were decoded). Errors name the file, and
// for a tensor that does not fit the tensor and the shape a wants.
//
// A file whose name ends in .onnx is an ONNX model (sdk/onnx): its graph
// must be a's (a graph architecture, as [model] onnx or graph gives it:
// the same nodes and attributes on the same input), and its initializers
// are the parameters, by state_dict name.
//
// The file must be a regular file of at most onnx.MaxFileBytes bytes (an
// ONNX model) or safetensors.MaxFileBytes (a safetensors file): a FIFO,
// a device such as /dev/zero, a directory or a larger file is refused
// before it is read.
func Read(path string, a nn.Arch) (nn.Params, string, error) {
	isONNX := strings.EqualFold(filepath.Ext(path), ".onnx")
	lim := atomicfile.Limit{Bytes: safetensors.MaxFileBytes, What: "a safetensors file"}
	if isONNX {
		lim = atomicfile.Limit{Bytes: onnx.MaxFileBytes, What: "an ONNX model"}
	}
	b, err := atomicfile.ReadRegular(path, lim)
	if err != nil {
		return nn.Params{}, "", err
	}
	sum := sha256.Sum256(b)
	var f *safetensors.File
	if isONNX {
		f, err = onnxWeights(b, path, a)
	} else {
		f, err = safetensors.Decode(b, path)
	}
	if err != nil {
		return nn.Params{}, "", err
	}
	p, err := nn.ParamsFromFile(a, f, path)
	if err != nil {
		return nn.Params{}, "", err
	}
	return p, hex.EncodeToString(sum[:]), nil
}

// onnxWeights decodes an ONNX model, checks that its graph is arch a's,
// and returns its parameters as the tensors of a weights file.
func onnxWeights(b []byte, path string, a nn.Arch) (*safetensors.File, error) {
	m, err := onnx.Decode(b, path)
	if err != nil {
		return nil, err
	}
	spec, params, err := onnx.ToSpec(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if spec.InChannels != a.InChannels || spec.InLen != a.InLen {
		return nil, fmt.Errorf("%s: the model takes %d channel(s) x %d samples, the run's architecture %d x %d (accepted: the same input)", path, spec.InChannels, spec.InLen, a.InChannels, a.InLen)
	}
	if err := sameGraph(nn.GraphArch(spec), a); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &safetensors.File{Meta: map[string]string{}}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t := params[k]
		f.Tensors = append(f.Tensors, safetensors.Tensor{Name: k, DType: "F32", Shape: t.Shape, Data: t.Float})
	}
	return f, nil
}

// sameGraph reports, as an error naming the first difference, whether
// the graph of file (an ONNX model's, on its input) differs from arch a's
// (compiled: its canonical spec).
func sameGraph(file, a nn.Arch) error {
	net, err := a.GraphNet()
	if err != nil {
		return err
	}
	fs, as := file.Graph, net.Spec()
	for i := range min(len(fs.Nodes), len(as.Nodes)) {
		x, _ := json.Marshal(fs.Nodes[i])
		y, _ := json.Marshal(as.Nodes[i])
		if !bytes.Equal(x, y) {
			return fmt.Errorf("its graph differs from the run's architecture %q at node %d: %s in the file, %s in the architecture (accepted: the architecture's graph)", a.Name, i, x, y)
		}
	}
	if len(fs.Nodes) != len(as.Nodes) || fs.Output != as.Output {
		return fmt.Errorf("its graph has %d nodes and output %q, the run's architecture %q %d and %q (accepted: the architecture's graph)", len(fs.Nodes), fs.Output, a.Name, len(as.Nodes), as.Output)
	}
	return nil
}

// Fit reads the files, in order, against the request's architecture. It
// refuses a replicate other than 0 (see the package documentation).
func (*Posterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	if req.Replicate != 0 {
		return sdk.Artifact{}, fmt.Errorf("%s: replicate %d asked (accepted: replicate 0 only): its networks are read from files, the same in every replicate, so a replicate could not train networks of its own; leave this posterior out of a recipe with [replicates] count > 1", ID, req.Replicate)
	}
	paths, err := Paths(req.Config)
	if err != nil {
		return sdk.Artifact{}, err
	}
	a := sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{}, Meta: map[string]string{"members": strconv.Itoa(len(paths))}}
	for i, path := range paths {
		if err := ctx.Err(); err != nil {
			return sdk.Artifact{}, err
		}
		p, sum, err := Read(path, req.Arch)
		if err != nil {
			return sdk.Artifact{}, fmt.Errorf("%s: member %d: %w", ID, i, err)
		}
		a.Tensors[memberName(i)] = p.Data
		a.Meta["sha256."+strconv.Itoa(i)] = sum
		if req.Progress != nil {
			req.Progress(sdk.Progress{Done: i + 1, Total: len(paths), Message: "read " + path})
		}
	}
	return a, nil
}

func memberName(i int) string { return "member." + strconv.Itoa(i) }

// Sample returns members 0..S-1, in order; the seeds are not used.
func (*Posterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	k, err := strconv.Atoi(a.Meta["members"])
	if err != nil || k < 1 {
		return nil, fmt.Errorf("%s: the artifact's meta \"members\" is %q (want the number of files, >= 1)", ID, a.Meta["members"])
	}
	if len(req.Seeds) > k {
		return nil, fmt.Errorf("%s: %d draws asked of a finite posterior of %d file(s) (draws must be <= %d)", ID, len(req.Seeds), k, k)
	}
	lay, err := nn.NewLayout(a.Arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	out := make([]nn.Params, len(req.Seeds))
	for s := range out {
		d, ok := a.Tensors[memberName(s)]
		if !ok || len(d) != lay.Size {
			return nil, fmt.Errorf("%s: artifact tensor %s has %d values, arch %q needs %d", ID, memberName(s), len(d), a.Arch.Name, lay.Size)
		}
		out[s] = nn.Params{Arch: a.Arch, Data: append([]float32(nil), d...)}
	}
	return out, nil
}
