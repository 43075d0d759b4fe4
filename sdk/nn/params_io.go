package nn

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// ParamsFromFile builds the parameter vector of arch a from a decoded
// safetensors file. Every tensor of the layout must be present with its
// exact shape and finite values; integer tensors named *.num_batches_tracked
// (PyTorch's batchnorm counters) are ignored; any other tensor is an error.
// name is the file name used in error messages.
func ParamsFromFile(a Arch, f *safetensors.File, name string) (Params, error) {
	lay, err := NewLayout(a)
	if err != nil {
		return Params{}, fmt.Errorf("%s: %w", name, err)
	}
	p := make([]float32, lay.Size)
	seen := map[string]bool{}
	for _, t := range f.Tensors {
		info, ok := lay.Lookup(t.Name)
		if !ok {
			if strings.HasSuffix(t.Name, ".num_batches_tracked") && !t.IsFloat() {
				continue
			}
			return Params{}, fmt.Errorf("%s: tensor %q is not a parameter of arch %q (expected: %s)", name, t.Name, a.Name, tensorList(lay))
		}
		if !t.IsFloat() {
			return Params{}, fmt.Errorf("%s: tensor %q has dtype %s, want F32, F64, F16 or BF16", name, t.Name, t.DType)
		}
		if !sameShape(t.Shape, info.Shape) {
			return Params{}, fmt.Errorf("%s: tensor %q has shape %v, want %v for arch %q", name, t.Name, t.Shape, info.Shape, a.Name)
		}
		for j, v := range t.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return Params{}, fmt.Errorf("%s: tensor %q element %d is %v, want a finite number", name, t.Name, j, v)
			}
		}
		copy(p[info.Offset:info.Offset+info.Size], t.Data)
		seen[t.Name] = true
	}
	var missing []string
	for _, t := range lay.Tensors {
		if !seen[t.Name] {
			missing = append(missing, t.Name)
		}
	}
	if len(missing) > 0 {
		return Params{}, fmt.Errorf("%s: missing parameter %q of arch %q (missing: %s)", name, missing[0], a.Name, strings.Join(missing, ", "))
	}
	return Params{Arch: a, Data: p}, nil
}

// LoadParams reads arch a's parameters from a safetensors file.
func LoadParams(path string, a Arch) (Params, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return Params{}, err
	}
	return ParamsFromFile(a, f, path)
}

// Tensors returns p as named float32 tensors in state_dict order.
func (p Params) Tensors() ([]safetensors.Tensor, error) {
	lay, err := NewLayout(p.Arch)
	if err != nil {
		return nil, err
	}
	if len(p.Data) != lay.Size {
		return nil, fmt.Errorf("arch %q: parameter vector has %d values, want %d", p.Arch.Name, len(p.Data), lay.Size)
	}
	out := make([]safetensors.Tensor, len(lay.Tensors))
	for i, t := range lay.Tensors {
		out[i] = safetensors.Tensor{Name: t.Name, DType: "F32", Shape: t.Shape, Data: p.Data[t.Offset : t.Offset+t.Size]}
	}
	return out, nil
}

// SaveParams writes p as F32 safetensors with PyTorch state_dict names.
func SaveParams(path string, p Params, meta map[string]string) error {
	ts, err := p.Tensors()
	if err != nil {
		return err
	}
	return safetensors.WriteFile(path, ts, meta)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func tensorList(l *Layout) string {
	names := make([]string, len(l.Tensors))
	for i, t := range l.Tensors {
		names[i] = t.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
