package runner

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// A --model of explain and predict that names a native graph network
// (issue 24) is computed in the host by sdk/nn/graph, with no Python:
//
//   - file.onnx: an ONNX export (sdk/onnx), its weights inside it (no
//     --weights), one draw;
//   - spec.toml: a graph spec (recipes/archs/*.toml), one draw a --weights
//     state_dict file (safetensors, PyTorch names); the spec takes the
//     input's channels and length.
//
// The draws are served by a model service of the host's own process
// (driver.ModelService over nn.GraphModel), so every explainer, in process
// or a plugin in any language, computes with them as with a PyTorch
// model's served draws.

// IsGraphModel reports whether module names a native graph network: a
// path ending in .onnx or .toml.
func IsGraphModel(module string) bool {
	ext := strings.ToLower(filepath.Ext(module))
	return ext == ".onnx" || ext == ".toml"
}

// IsGraph reports whether m is a native graph network (IsGraphModel);
// false for nil.
func (m *TorchModel) IsGraph() bool { return m != nil && IsGraphModel(m.Module) }

// graphNet compiles the graph network of module for one draw on the
// input's shape: the ONNX file itself (weight ""), or the TOML spec with
// weight's state_dict. A network above in.bounds (checkNetSize) is
// refused before any workspace of it is made.
func graphNet(module, weight string, in inputs) (*graph.Net, error) {
	c, t := in.c, in.t
	check := func(net *graph.Net) error {
		size, err := recipe.GraphSize(net)
		if err == nil {
			err = checkNetSize(fmt.Sprintf("%s on inputs of %d channel(s) x %d samples", module, c, t), size, in.bounds)
		}
		return err
	}
	if strings.EqualFold(filepath.Ext(module), ".onnx") {
		net, err := onnx.LoadNet(module)
		if err != nil {
			return nil, err
		}
		if in := net.InShape(); in.C != c || in.T != t {
			return nil, fmt.Errorf("%s takes inputs of %d channel(s) x %d samples, and the input's waveforms have %d x %d (accepted: waveforms of the model's shape)", module, in.C, in.T, c, t)
		}
		if err := check(net); err != nil {
			return nil, err
		}
		return net, nil
	}
	spec, err := graph.ReadSpecFile(module)
	if err != nil {
		return nil, err
	}
	spec.InChannels, spec.InLen = c, t // the spec's shape is the input's
	net, err := graph.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("%s on inputs of %d channel(s) x %d samples: %w", module, c, t, err)
	}
	if err := check(net); err != nil {
		return nil, err
	}
	if err := net.LoadSafetensors(weight); err != nil {
		return nil, fmt.Errorf("weights %s for %s: %w", weight, module, err)
	}
	return net, nil
}

// serveGraph compiles module's draws on the input's shape and serves
// them in a model service of this process, which the returned closer
// stops. names are the draws' files.
func serveGraph(module string, weights []string, in inputs) (refs []sdk.ModelRef, names []string, closer io.Closer, err error) {
	isONNX := strings.EqualFold(filepath.Ext(module), ".onnx")
	switch {
	case isONNX && len(weights) > 0:
		return nil, nil, nil, fmt.Errorf("--model %s: an ONNX file holds its weights (accepted: no --weights with an .onnx model)", module)
	case !isONNX && len(weights) == 0:
		return nil, nil, nil, fmt.Errorf("--model %s: a graph spec holds no weights (accepted: --weights W.safetensors[,W2,...], PyTorch state_dicts of the spec's modules, one draw each)", module)
	}
	files := weights
	if isONNX {
		files = []string{""}
	}
	ms := driver.NewModelService()
	gs := &graphServer{ModelService: ms}
	defer func() {
		if err != nil {
			err = errors.Join(err, ms.Close())
		}
	}()
	for s, w := range files {
		net, err := graphNet(module, w, in)
		if err != nil {
			if len(files) > 1 {
				err = fmt.Errorf("draw %d: %w", s, err)
			}
			return nil, nil, nil, err
		}
		gm := nn.NewGraphModel(net)
		gs.models = append(gs.models, gm)
		addr, h, err := ms.Add(gm)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("serving %s: %w", module, err)
		}
		refs = append(refs, sdk.ModelRef{Address: addr, Handle: h})
		names = append(names, w)
	}
	if isONNX {
		names = []string{module}
	}
	return refs, names, gs, nil
}

// graphServer is serveGraph's model service with its draws' models, so
// that Explain can say which path their perturbed copies took.
type graphServer struct {
	*driver.ModelService
	models []*nn.GraphModel
}

// pathNote says how the draws computed the perturbed copies of
// occlusion's windows and LIME's spans (nn.GraphModel.Path), or "" when
// they computed none.
func (g *graphServer) pathNote() string {
	var p graph.Path
	for _, m := range g.models {
		p = p.Add(m.Path())
	}
	if p.Copies == 0 {
		return ""
	}
	return "graph model: " + p.String()
}
