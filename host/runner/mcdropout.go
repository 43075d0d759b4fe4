package runner

import (
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// This file is explain's and predict's --mc-dropout S: S draws of one
// network with its own dropout on, each a fixed thinned network, so that
// the output is a posterior of S draws as an ensemble's of S weights
// files is (predict: their mean; explain: a map a draw, or summaries).
//
//   - A PyTorch module (--model file.py:Class): the kit's model server
//     makes draw s with uaxai_plugin.mcdropout from the seed
//     rng.Key(seed, "mc-dropout", "torch", -1, s): every torch.nn.Dropout
//     and the attention dropout of every torch.nn.MultiheadAttention
//     masked, value by value, by a mask fixed by that seed.
//   - A native graph network (--model spec.toml or file.onnx, or the
//     built-in --arch): its own dropout nodes; draw s keeps channel i of
//     the j-th dropout node (in the graph's order) iff u >= p, u the i-th
//     Float64 of rng.For(seed, "mc-dropout", "graph", j, s), and folds
//     the mask into the node that reads the dropout (nn.FoldDropout: its
//     weight columns times m_i / (1 - p)). A dropout node must mask C x 1
//     features (the graph's mask is one a channel, shared over time,
//     which on C x T activations is not the value-by-value dropout the
//     network trained with) and be read by one linear or conv1d node; a
//     graph without dropout nodes (the built-in paper-1dcnn, an ONNX
//     export in evaluation mode, which drops them) is refused.

// mcDropout is --mc-dropout: draws MC-dropout draws (0: none) from seed.
type mcDropout struct {
	draws int
	seed  uint64
}

// on says whether MC dropout is asked for.
func (m mcDropout) on() bool { return m.draws > 0 }

// torchSeeds are the seeds of the PyTorch module's draws.
func (m mcDropout) torchSeeds() []uint64 {
	out := make([]uint64, m.draws)
	for s := range out {
		out[s] = rng.Key(m.seed, "mc-dropout", "torch", -1, s)
	}
	return out
}

// drawNames name the draws of the network of weights w: "w, MC-dropout
// draw s".
func (m mcDropout) drawNames(w string) []string {
	out := make([]string, m.draws)
	for s := range out {
		out[s] = fmt.Sprintf("%s, MC-dropout draw %d", w, s)
	}
	return out
}

// checkMCDropout refuses --mc-dropout draws that cannot be: a count
// other than 0 (none) or 2..recipe.MaxDraws, several weights files or
// ONNX files (an ensemble), a server already started (its draws are its
// own).
func checkMCDropout(draws int, weights []string, model ModelSource, served bool) error {
	if draws == 0 {
		return nil
	}
	if draws < 2 || draws > recipe.MaxDraws {
		return fmt.Errorf("--mc-dropout %d: want an integer 2..%d, the number of MC-dropout draws (a record's S maps are held together)", draws, recipe.MaxDraws)
	}
	files := len(weights)
	if o, ok := model.(ONNXFile); ok && o.More != "" {
		files = 1 + len(strings.Split(o.More, "\x00"))
	}
	if files > 1 {
		return fmt.Errorf("--mc-dropout %d with %d weights files: MC dropout samples the dropout of one network, and several files are an ensemble, one draw each (accepted: one weights file with --mc-dropout, or several without it)", draws, files)
	}
	if served {
		return fmt.Errorf("--mc-dropout %d with a model server already started: its draws are its own (accepted: the model's source, which serves the MC-dropout draws)", draws)
	}
	return nil
}

// fold returns the draws of p, a network of layers or a graph (what
// names it in errors): one nn.FoldDropout of its dropout nodes a draw.
func (m mcDropout) fold(p nn.Params, what string) ([]nn.Params, error) {
	net, err := p.Arch.GraphNet()
	if err != nil {
		return nil, fmt.Errorf("--mc-dropout: %s: %w", what, err)
	}
	type dropNode struct {
		units int
		p     float64
	}
	var drops []dropNode
	var on bool
	spec := net.Spec()
	for i, nd := range spec.Nodes {
		if nd.Op != "dropout" {
			continue
		}
		sh := net.NodeShape(i)
		if sh.T != 1 {
			return nil, fmt.Errorf("--mc-dropout: %s: dropout node %q masks %d channels x %d steps; a graph's MC-dropout draw folds one mask a channel, shared over time, into the node that reads it, which is not the value-by-value dropout the network trained with (accepted: dropout nodes on C x 1 features, e.g. before the output linear; or --model file.py:Class, whose draws mask every value)", what, nd.Name, sh.C, sh.T)
		}
		p, _ := nd.Attrs["p"].(float64)
		drops = append(drops, dropNode{units: sh.C, p: p})
		on = on || p > 0
	}
	switch {
	case len(drops) == 0:
		return nil, fmt.Errorf("--mc-dropout: %s has no dropout node: MC dropout samples a network's own dropout, so every draw would be the network itself (accepted: a graph spec with dropout nodes, e.g. recipes/archs/stridednet.toml, an ONNX file that keeps its Dropout nodes (an export in evaluation mode drops them), or --model file.py:Class with torch.nn.Dropout layers)", what)
	case !on:
		return nil, fmt.Errorf("--mc-dropout: every dropout node of %s has p = 0, so every draw would be the network itself (accepted: a network with dropout of p > 0)", what)
	}
	out := make([]nn.Params, m.draws)
	for s := range out {
		masks := make([][]bool, len(drops))
		for j, d := range drops {
			r := rng.For(m.seed, "mc-dropout", "graph", j, s)
			keep := make([]bool, d.units)
			for i := range keep {
				keep[i] = r.Float64() >= d.p
			}
			masks[j] = keep
		}
		a, data, err := nn.FoldDropout(p.Arch, p.Data, masks)
		if err != nil {
			return nil, fmt.Errorf("--mc-dropout: %s, draw %d: %w", what, s, err)
		}
		out[s] = nn.Params{Arch: a, Data: data}
	}
	return out, nil
}
