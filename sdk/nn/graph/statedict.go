package graph

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// Tensor is a state_dict entry: its shape and float32 values.
type Tensor struct {
	Shape []int
	Data  []float32
}

// LoadStateDict copies a PyTorch state_dict into Theta by name. Entries
// named "*.num_batches_tracked" are ignored. Every parameter must be
// present with its shape and no other entry may be; otherwise nothing is
// copied and the error lists the missing, unexpected and mis-shaped names.
func (n *Net) LoadStateDict(sd map[string]Tensor) error {
	var missing, unexpected, shapes []string
	for _, p := range n.params {
		t, ok := sd[p.Name]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s %v", p.Name, p.Shape))
		case !slices.Equal(t.Shape, p.Shape) || len(t.Data) != p.Len:
			shapes = append(shapes, fmt.Sprintf("%s is %v (%d values), want %v", p.Name, t.Shape, len(t.Data), p.Shape))
		}
	}
	have := map[string]bool{}
	for _, p := range n.params {
		have[p.Name] = true
	}
	for name := range sd {
		if !have[name] && !strings.HasSuffix(name, ".num_batches_tracked") && name != "num_batches_tracked" {
			unexpected = append(unexpected, name)
		}
	}
	if len(missing)+len(unexpected)+len(shapes) > 0 {
		sort.Strings(unexpected)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing: "+strings.Join(missing, ", "))
		}
		if len(unexpected) > 0 {
			parts = append(parts, "unexpected: "+strings.Join(unexpected, ", "))
		}
		if len(shapes) > 0 {
			parts = append(parts, "wrong shape: "+strings.Join(shapes, "; "))
		}
		return fmt.Errorf("graph %q: state_dict does not fit: %s", n.spec.Name, strings.Join(parts, "; "))
	}
	for _, p := range n.params {
		copy(n.Theta[p.Offset:p.Offset+p.Len], sd[p.Name].Data)
	}
	return nil
}

// LoadSafetensors loads a state_dict saved as safetensors (PyTorch's
// num_batches_tracked counters, I64, are skipped).
func (n *Net) LoadSafetensors(path string) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("graph %q: %w", n.spec.Name, err)
	}
	sd := map[string]Tensor{}
	for _, t := range f.Tensors {
		if strings.HasSuffix(t.Name, "num_batches_tracked") {
			continue
		}
		if !t.IsFloat() {
			return fmt.Errorf("graph %q: %s: tensor %s has dtype %s; need a float dtype (F32, F64, F16, BF16)", n.spec.Name, path, t.Name, t.DType)
		}
		sd[t.Name] = Tensor{Shape: t.Shape, Data: t.Data}
	}
	if err := n.LoadStateDict(sd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
