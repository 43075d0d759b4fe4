package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// ModelSource is the network of explain's and predict's --model: one case
// a kind, each handled by its own methods in this file.
//
//   - TorchModule: a PyTorch module (path/file.py:Class), its draws (one a
//     --weights state_dict file) served by the Python kit's model server
//     (host/torchserver);
//   - ONNXFile: an ONNX export (sdk/onnx), its weights inside it (no
//     --weights), one draw;
//   - GraphSpec: a graph spec (recipes/archs/*.toml), one draw a --weights
//     state_dict file (safetensors, PyTorch names); the spec takes the
//     input's channels and length.
//
// The draws of an ONNXFile or a GraphSpec, native graph networks (issue
// 24), are computed in the host by sdk/nn/graph, with no Python, served by
// a model service of the host's own process (driver.ModelService over
// nn.GraphModel), so every explainer, in process or a plugin in any
// language, computes with them as with a PyTorch model's served draws.
type ModelSource interface {
	// String is the --model argument.
	String() string
	// Native says that the host computes the network itself, and checks
	// the weights it is given (none for an ONNX file, one or more for a
	// spec) with its own errors.
	Native() bool
	// serve serves the draws of weights (with mc on, mc's MC-dropout
	// draws of the one network; checkMCDropout has checked mc) on in's
	// shape, and returns their references and names (for messages), what
	// closes them, and the bound of each request to them (lim's
	// model_call).
	serve(ctx context.Context, weights []string, mc mcDropout, in inputs, lim limits.Limits) (refs []sdk.ModelRef, names []string, started io.Closer, calls driver.ModelCalls, err error)
}

// TorchModule is a PyTorch module served by the Python kit.
type TorchModule struct{ torchserver.Model }

// ONNXFile is an ONNX export, its weights inside it.
type ONNXFile struct {
	Path string
	// More are further ONNX files of the same network's shape, each a
	// draw after Path's (an ensemble: --weights a.onnx,b.onnx), "\x00"
	// between them (a string keeps ONNXFile comparable).
	More string
}

// onnxEnsemble is the model source of weights that are all ONNX files
// given without a model (--weights a.onnx,b.onnx): an ensemble, one draw
// a file; else model and weights as they are.
func onnxEnsemble(model ModelSource, weights []string) (ModelSource, []string) {
	if model != nil || len(weights) == 0 {
		return model, weights
	}
	for _, w := range weights {
		if !strings.EqualFold(filepath.Ext(w), ".onnx") {
			return model, weights
		}
	}
	return ONNXFile{Path: weights[0], More: strings.Join(weights[1:], "\x00")}, nil
}

// GraphSpec is a graph spec's TOML file; each draw's weights are a
// state_dict file.
type GraphSpec struct{ Path string }

// ModelSourceOf is the source --model arg names: an ONNXFile for a path
// ending in .onnx, a GraphSpec for .toml, else a TorchModule of arg (the
// caller sets its arguments and output).
func ModelSourceOf(arg string) ModelSource {
	switch strings.ToLower(filepath.Ext(arg)) {
	case ".onnx":
		return ONNXFile{Path: arg}
	case ".toml":
		return GraphSpec{Path: arg}
	}
	return TorchModule{torchserver.Model{Module: arg}}
}

func (m TorchModule) String() string { return m.Module }
func (o ONNXFile) String() string    { return o.Path }
func (g GraphSpec) String() string   { return g.Path }

func (TorchModule) Native() bool { return false }
func (ONNXFile) Native() bool    { return true }
func (GraphSpec) Native() bool   { return true }

// native says whether src is set and Native.
func native(src ModelSource) bool { return src != nil && src.Native() }

// serve starts the kit's model server over the module, one draw a file of
// weights (or one a seed of mc's), which the caller closes; a request
// past lim's model_call kills it (torchserver.Server.ModelCalls).
func (m TorchModule) serve(ctx context.Context, weights []string, mc mcDropout, in inputs, lim limits.Limits) ([]sdk.ModelRef, []string, io.Closer, driver.ModelCalls, error) {
	tm := m.Model
	if mc.on() {
		tm.MCDropoutSeeds = mc.torchSeeds()
	}
	ts, err := torchserver.Start(ctx, tm, weights, in.c, in.t)
	if err != nil {
		return nil, nil, nil, driver.ModelCalls{}, err
	}
	return ts.Draws(), ts.Names(), ts, ts.ModelCalls(modelCallLimit(lim)), nil
}

// serve serves the ONNX file's one draw (or mc's MC-dropout draws of
// its network) in a model service of this process; its name is the file.
func (o ONNXFile) serve(_ context.Context, weights []string, mc mcDropout, in inputs, lim limits.Limits) ([]sdk.ModelRef, []string, io.Closer, driver.ModelCalls, error) {
	if len(weights) > 0 {
		return nil, nil, nil, driver.ModelCalls{}, fmt.Errorf("--model %s: an ONNX file holds its weights (accepted: no --weights with an .onnx model)", o.Path)
	}
	paths := []string{o.Path}
	if o.More != "" {
		paths = append(paths, strings.Split(o.More, "\x00")...)
	}
	nets := make([]*graph.Net, len(paths))
	for s, p := range paths {
		net, err := ONNXFile{Path: p}.net(in)
		if err != nil {
			return nil, nil, nil, driver.ModelCalls{}, err
		}
		if s > 0 && net.Classes() != nets[0].Classes() {
			return nil, nil, nil, driver.ModelCalls{}, fmt.Errorf("draw %d, %s: %d classes, and draw 0, %s, has %d (accepted: ONNX files of one network's shape, one draw each)", s, p, net.Classes(), paths[0], nets[0].Classes())
		}
		nets[s] = net
	}
	if mc.on() {
		var err error
		if nets, err = mc.foldNets(nets[0], o.Path); err != nil {
			return nil, nil, nil, driver.ModelCalls{}, err
		}
		paths = mc.drawNames(o.Path)
	}
	refs, gs, err := serveNets(o.Path, nets)
	if err != nil {
		return nil, nil, nil, driver.ModelCalls{}, err
	}
	return refs, paths, gs, driver.ModelCalls{Limit: modelCallLimit(lim)}, nil
}

// serve compiles the spec's draws, one a file of weights (or mc's
// MC-dropout draws of the one file's network), and serves them in a model
// service of this process; their names are the files.
func (g GraphSpec) serve(_ context.Context, weights []string, mc mcDropout, in inputs, lim limits.Limits) ([]sdk.ModelRef, []string, io.Closer, driver.ModelCalls, error) {
	if len(weights) == 0 {
		return nil, nil, nil, driver.ModelCalls{}, fmt.Errorf("--model %s: a graph spec holds no weights (accepted: --weights W.safetensors[,W2,...], PyTorch state_dicts of the spec's modules, one draw each)", g.Path)
	}
	nets := make([]*graph.Net, len(weights))
	for s, w := range weights {
		net, err := g.net(w, in)
		if err != nil {
			if len(weights) > 1 {
				err = fmt.Errorf("draw %d: %w", s, err)
			}
			return nil, nil, nil, driver.ModelCalls{}, err
		}
		nets[s] = net
	}
	names := weights
	if mc.on() {
		var err error
		if nets, err = mc.foldNets(nets[0], g.Path+" with weights "+weights[0]); err != nil {
			return nil, nil, nil, driver.ModelCalls{}, err
		}
		names = mc.drawNames(weights[0])
	}
	refs, gs, err := serveNets(g.Path, nets)
	if err != nil {
		return nil, nil, nil, driver.ModelCalls{}, err
	}
	return refs, names, gs, driver.ModelCalls{Limit: modelCallLimit(lim)}, nil
}

// net is the ONNX file's network, which must take the input's shape,
// refused above in.bounds (checkGraphSize) before any workspace of it is
// made.
func (o ONNXFile) net(in inputs) (*graph.Net, error) {
	net, err := onnx.LoadNet(o.Path)
	if err != nil {
		return nil, err
	}
	if s := net.InShape(); s.C != in.c || s.T != in.t {
		return nil, fmt.Errorf("%s takes inputs of %d channel(s) x %d samples, and the input's waveforms have %d x %d (accepted: waveforms of the model's shape)", o.Path, s.C, s.T, in.c, in.t)
	}
	if err := checkGraphSize(o.Path, net, in); err != nil {
		return nil, err
	}
	return net, nil
}

// net compiles the spec on the input's shape, checks it against
// in.bounds and loads weight's state_dict into it.
func (g GraphSpec) net(weight string, in inputs) (*graph.Net, error) {
	spec, err := graph.ReadSpecFile(g.Path)
	if err != nil {
		return nil, err
	}
	spec.InChannels, spec.InLen = in.c, in.t // the spec's shape is the input's
	net, err := graph.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("%s on inputs of %d channel(s) x %d samples: %w", g.Path, in.c, in.t, err)
	}
	if err := checkGraphSize(g.Path, net, in); err != nil {
		return nil, err
	}
	if err := net.LoadSafetensors(weight); err != nil {
		return nil, fmt.Errorf("weights %s for %s: %w", weight, g.Path, err)
	}
	return net, nil
}

// foldNets returns m's draws of net, a graph network with its weights
// (what names it), compiled.
func (m mcDropout) foldNets(net *graph.Net, what string) ([]*graph.Net, error) {
	spec := net.Spec()
	a := nn.GraphArch(spec)
	a.InChannels, a.InLen = net.InShape().C, net.InShape().T
	ps, err := m.fold(nn.Params{Arch: a, Data: net.Theta}, what)
	if err != nil {
		return nil, err
	}
	nets := make([]*graph.Net, len(ps))
	for s, p := range ps {
		if nets[s], err = p.Arch.GraphNet(); err != nil {
			return nil, fmt.Errorf("--mc-dropout: %s, draw %d: %w", what, s, err)
		}
		copy(nets[s].Theta, p.Data)
	}
	return nets, nil
}

// checkGraphSize refuses net, the network of module, when its size is
// above in.bounds (checkNetSize).
func checkGraphSize(module string, net *graph.Net, in inputs) error {
	size, err := recipe.GraphSize(net)
	if err == nil {
		err = checkNetSize(fmt.Sprintf("%s on inputs of %d channel(s) x %d samples", module, in.c, in.t), size, in.bounds)
	}
	return err
}

// serveNets serves nets, the draws of module, in a model service of this
// process, which the returned graphServer stops.
func serveNets(module string, nets []*graph.Net) (refs []sdk.ModelRef, _ *graphServer, err error) {
	ms := driver.NewModelService()
	gs := &graphServer{ModelService: ms}
	for _, net := range nets {
		gm := nn.NewGraphModel(net)
		gs.models = append(gs.models, gm)
		addr, h, err := ms.Add(gm)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("serving %s: %w", module, err), ms.Close())
		}
		refs = append(refs, sdk.ModelRef{Address: addr, Handle: h})
	}
	return refs, gs, nil
}

// graphServer is serveNets's model service with its draws' models, so
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
