package recipe

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

func (d *decoder) model(v any, m *Model) error {
	path := []string{"model"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	var layers, nodes []any
	haveLayers := false
	err = d.table(tbl, path, []field{
		{"arch", d.setString(&m.Arch)},
		{"torch", d.setString(&m.Torch)},
		{"args", func(v any, p []string) error {
			t, ok := v.(map[string]any)
			if !ok {
				return d.keyErr(p, "want a table of keyword arguments for [model] torch's constructor, got %s (accepted: args = { width = 16 })", describe(v))
			}
			m.TorchArgs = t
			return nil
		}},
		{"output", d.setString(&m.TorchOutput)},
		{"graph", d.setString(&m.GraphFile)},
		{"onnx", d.setString(&m.ONNXFile)},
		{"nodes", func(v any, p []string) error {
			arr, ok := asArray(v)
			if !ok {
				return d.keyErr(p, "want [[model.nodes]] tables (a graph of ops, as recipes/archs/*.toml's [[nodes]]), got %s", describe(v))
			}
			nodes = arr
			return nil
		}},
		{"in_channels", d.setInt(&m.InChannels)},
		{"in_len", d.setInt(&m.InLen)},
		{"classes", d.setInt(&m.Classes)},
		{"layers", func(v any, p []string) error {
			arr, ok := asArray(v)
			if !ok {
				return d.keyErr(p, "want [[model.layers]] tables, got %s", describe(v))
			}
			layers, haveLayers = arr, true
			return nil
		}},
	})
	if err != nil {
		return err
	}
	for _, c := range []struct {
		key   string
		n     int
		bound int
	}{{"in_channels", m.InChannels, MaxInChannels}, {"in_len", m.InLen, MaxWaveLen}, {"classes", m.Classes, MaxLayerOut}} {
		if _, ok := tbl[c.key]; ok {
			if c.n < 1 {
				return d.keyErr(sub(path, c.key), "%d (accepted: 1..%d)", c.n, c.bound)
			}
			if err := d.checkCount(sub(path, c.key), c.n, c.bound, fmt.Sprintf("accepted: 1..%d", c.bound)); err != nil {
				return err
			}
		}
	}
	_, g := tbl["graph"]
	_, o := tbl["onnx"]
	if _, ok := tbl["nodes"]; ok {
		return d.inlineGraph(tbl, m, nodes)
	}
	if g || o {
		return d.graphModel(tbl, m)
	}
	if _, ok := tbl["torch"]; ok {
		return d.torchModel(tbl, m)
	}
	for _, k := range []string{"args", "output"} {
		if _, ok := tbl[k]; ok {
			return d.keyErr(sub(path, k), "applies only to a PyTorch module, [model] torch = \"file.py:Class\"")
		}
	}
	if !haveLayers {
		// A built-in architecture on an input of in_channels x in_len
		// with classes logits (each from the data when not given).
		if _, err := nn.LookupArch(m.Arch); err != nil {
			return d.keyErr(sub(path, "arch"), "%v; or define one inline with in_channels, in_len and [[model.layers]]", err)
		}
		if m.Arch == "" {
			m.Arch = nn.PaperArchName
		}
		return nil
	}
	if _, ok := tbl["classes"]; ok {
		return d.keyErr(sub(path, "classes"), "applies only to a built-in architecture (an inline one has its last layer's out)")
	}
	if _, ok := tbl["arch"]; !ok {
		m.Arch = "inline"
	} else if _, err := nn.LookupArch(m.Arch); err == nil {
		return d.keyErr(sub(path, "arch"), "%s names a built-in architecture, but [[model.layers]] define one inline; give the inline one another name", sdk.Quote(m.Arch))
	}
	for _, k := range []string{"in_channels", "in_len"} {
		if _, ok := tbl[k]; !ok {
			return d.errAt(path, "[model] with [[model.layers]] needs key %q", k)
		}
	}
	if len(layers) == 0 {
		return d.keyErr(sub(path, "layers"), "no layers")
	}
	if err := d.checkCount(sub(path, "in_channels"), m.InChannels, MaxInChannels, fmt.Sprintf("accepted: 1..%d", MaxInChannels)); err != nil {
		return err
	}
	if err := d.checkCount(sub(path, "in_len"), m.InLen, MaxWaveLen, fmt.Sprintf("accepted: 1..%d samples", MaxWaveLen)); err != nil {
		return err
	}
	if len(layers) > MaxLayers {
		return d.errAt(sub(path, "layers", strconv.Itoa(MaxLayers)), "[[model.layers]]: %d layers are above the bound %d", len(layers), MaxLayers)
	}
	m.Layers = make([]nn.Layer, len(layers))
	for i, l := range layers {
		lp := sub(path, "layers", strconv.Itoa(i))
		lt, ok := l.(map[string]any)
		if !ok {
			return d.keyErr(lp, "want a table, got %s", describe(l))
		}
		if err := d.setStruct(lt, lp, &m.Layers[i]); err != nil {
			return err
		}
		if err := d.checkCount(sub(lp, "out"), m.Layers[i].Out, MaxLayerOut, fmt.Sprintf("accepted: 1..%d channels or units", MaxLayerOut)); err != nil {
			return err
		}
		if err := d.checkCount(sub(lp, "kernel"), m.Layers[i].Kernel, MaxWaveLen, fmt.Sprintf("accepted: 1..%d samples, at most the input's length", MaxWaveLen)); err != nil {
			return err
		}
	}
	return nil
}

// torchModel checks [model] torch: "file.py:Name" or
// "package.module:Name", with args and output, and none of the keys of
// an sdk/nn network.
func (d *decoder) torchModel(tbl map[string]any, m *Model) error {
	path := []string{"model"}
	for _, k := range []string{"arch", "layers"} {
		if _, ok := tbl[k]; ok {
			return d.keyErr(sub(path, k), "describes a network uaxai builds, and [model] torch names a PyTorch module (accepted: one of them)")
		}
	}
	mod, name := m.torchParts()
	file := strings.HasSuffix(mod, ".py") || strings.ContainsRune(mod, '/')
	// In a file, the name may reach into a class (Outer.Inner); in a
	// module it is one name, as posterior.torch takes them.
	okMod := mod != "" && (file || pyinterp.DottedName(mod))
	okName := pyinterp.Identifier(name) || file && pyinterp.DottedName(name)
	if !strings.Contains(m.Torch, ":") || !okMod || !okName {
		return d.keyErr(sub(path, "torch"), "%s (accepted: \"file.py:Name\", a class or a function returning a torch.nn.Module in a Python file relative to the recipe's folder, or \"package.module:Name\" importable from sys.path, Name one Python name)", sdk.Quote(m.Torch))
	}
	switch m.TorchOutput {
	case "", "probs", "logits":
	default:
		return d.keyErr(sub(path, "output"), "%s (accepted: \"probs\", the module returns probabilities, or \"logits\", the softmax is applied to its output)", sdk.Quote(m.TorchOutput))
	}
	m.Arch = ""
	return nil
}

// graphModel reads [model] graph (a graph spec file, as
// recipes/archs/*.toml) or [model] onnx (an ONNX file's graph): an
// architecture of the op table, which takes its input's shape and classes
// as a built-in does.
func (d *decoder) graphModel(tbl map[string]any, m *Model) error {
	path := []string{"model"}
	key := "graph"
	if _, ok := tbl["onnx"]; ok {
		key = "onnx"
		if _, both := tbl["graph"]; both {
			return d.keyErr(sub(path, "onnx"), "and [model] graph both give the architecture (accepted: one of them)")
		}
	}
	for _, k := range []string{"arch", "layers", "torch", "args", "output"} {
		if _, ok := tbl[k]; ok {
			return d.keyErr(sub(path, k), "does not go with [model] %s, which gives the whole architecture (accepted: in_channels, in_len and classes beside it)", key)
		}
	}
	file := m.GraphFile
	if key == "onnx" {
		file = m.ONNXFile
	}
	if file == "" {
		return d.keyErr(sub(path, key), "is empty (accepted: a path relative to the recipe's folder)")
	}
	abs := d.resolve(file)
	var spec graph.Spec
	var err error
	if key == "onnx" {
		spec, _, err = onnx.LoadSpec(abs)
		m.ONNXFile = abs
	} else {
		spec, err = graph.ReadSpecFile(abs)
		m.GraphFile = abs
	}
	if err != nil {
		return d.keyErr(sub(path, key), "%v", err)
	}
	m.GraphSpec = &spec
	m.Arch = spec.Name
	return nil
}

// inlineGraph reads [[model.nodes]]: a graph of ops written in the
// recipe, each table a node as recipes/archs/*.toml's [[nodes]] (name,
// op, inputs, the op's attributes), on an input of in_channels x in_len
// (both required); arch names it ("inline" when absent).
func (d *decoder) inlineGraph(tbl map[string]any, m *Model, nodes []any) error {
	path := []string{"model"}
	for _, k := range []string{"layers", "graph", "onnx", "torch", "args", "output"} {
		if _, ok := tbl[k]; ok {
			return d.keyErr(sub(path, k), "does not go with [[model.nodes]], which give the whole architecture (accepted: arch, in_channels, in_len and classes beside them)")
		}
	}
	for _, k := range []string{"in_channels", "in_len"} {
		if _, ok := tbl[k]; !ok {
			return d.errAt(path, "[model] with [[model.nodes]] needs key %q", k)
		}
	}
	if len(nodes) == 0 {
		return d.keyErr(sub(path, "nodes"), "no nodes")
	}
	if len(nodes) > MaxNodes {
		return d.errAt(sub(path, "nodes", strconv.Itoa(MaxNodes)), "[[model.nodes]]: %d nodes are above the bound %d (graph.MaxNodes)", len(nodes), MaxNodes)
	}
	if _, ok := tbl["arch"]; !ok {
		m.Arch = "inline"
	} else if _, err := nn.LookupArch(m.Arch); err == nil {
		return d.keyErr(sub(path, "arch"), "%s names a built-in architecture, but [[model.nodes]] define one inline; give the inline one another name", sdk.Quote(m.Arch))
	}
	spec := graph.Spec{Name: m.Arch, InChannels: m.InChannels, InLen: m.InLen}
	for i, v := range nodes {
		np := sub(path, "nodes", strconv.Itoa(i))
		t, ok := v.(map[string]any)
		if !ok {
			return d.keyErr(np, "want a table, got %s", describe(v))
		}
		nd, err := graph.DecodeNode(t)
		if err != nil {
			return d.errAt(np, "[[model.nodes]] %d %s: %v", i, sdk.Quote(nd.Name), err)
		}
		spec.Nodes = append(spec.Nodes, nd)
	}
	if _, err := graph.Compile(spec); err != nil {
		np := sub(path, "nodes")
		var ne *graph.NodeError
		if errors.As(err, &ne) {
			np = sub(np, strconv.Itoa(ne.Index))
		}
		return d.errAt(np, "[[model.nodes]]: %v", err)
	}
	m.GraphSpec, m.GraphInline = &spec, true
	return nil
}

// checkModel validates the architecture and its fit to the data.
func (d *decoder) checkModel(r *Recipe) error {
	if r.Model.GraphSpec != nil {
		key := r.Model.graphKey()
		a, err := r.Arch()
		if err != nil {
			p := []string{"model", key}
			for _, k := range []string{"classes", "in_channels", "in_len"} {
				if d.lines.get("model", k) > 0 && strings.Contains(err.Error(), "classes") == (k == "classes") {
					p = []string{"model", k}
				}
			}
			return d.errAt(p, "[model] %s: %v", key, err)
		}
		return d.checkArchBounds(r, a)
	}
	if r.Model.Torch != "" {
		a, err := r.Arch()
		if err != nil {
			return d.errAt([]string{"model", "torch"}, "%v", err)
		}
		if g, ok := r.Data.Generator(); ok {
			for _, c := range []struct {
				key        string
				have, want int
			}{{"in_channels", a.InChannels, g.Channels()}, {"in_len", a.InLen, r.Data.Len()}, {"classes", a.Outputs, len(g.Classes())}} {
				if c.have != c.want {
					return d.keyErr([]string{"model", c.key}, "is %d, but [data] source %s gives %d (accepted: %d, or no key)", c.have, sdk.Quote(r.Data.Source), c.want, c.want)
				}
			}
		}
		return nil
	}
	a, err := r.Arch()
	if err != nil {
		path := []string{"model"}
		if r.Model.Layers == nil {
			path = sub(path, "arch")
			for _, k := range []string{"classes", "in_channels", "in_len"} {
				if d.lines.get("model", k) > 0 {
					path = []string{"model", k}
				}
			}
		} else {
			// nn names the layer "layer N", the graph its node N (node N is
			// layer N): point at it.
			var n int
			if _, e := fmt.Sscanf(layerPart(err.Error()), "layer %d", &n); e == nil {
				path = sub(path, "layers", strconv.Itoa(n))
				if strings.Contains(err.Error(), "graph.MaxParams") { // the parameters up to layer n: its out makes them
					return d.keyErr(sub(path, "out"), "%v", err)
				}
			}
		}
		return d.errAt(path, "[model]: %v", err)
	}
	if g, ok := r.Data.Generator(); ok {
		n, c, k := r.Data.Len(), g.Channels(), len(g.Classes())
		if a.InLen != n || a.InChannels != c {
			p := []string{"model", "in_len"}
			if a.InLen == n {
				p = []string{"model", "in_channels"}
			}
			if d.lines.get(p...) == 0 {
				p = []string{"model", "arch"}
			}
			return d.errAt(p, "[model]: architecture %q takes %d channel(s) x %d samples, but [data] source %s makes %d x %d (fs/f0*cycles = %v/%v*%d) (accepted: in_channels = %d, in_len = %d, or leave them out for a built-in architecture)",
				a.Name, a.InChannels, a.InLen, sdk.Quote(r.Data.Source), c, n, r.Data.Fs, r.Data.F0, r.Data.Cycles, c, n)
		}
		if a.Classes() != k {
			p := []string{"model", "classes"}
			if r.Model.Layers != nil {
				p = []string{"model", "layers", strconv.Itoa(len(r.Model.Layers) - 1), "out"}
			}
			if d.lines.get(p...) == 0 {
				p = []string{"model", "arch"}
			}
			return d.errAt(p, "[model]: architecture %q has %d logits, but [data] source %s has %d classes (accepted: a last layer of %d outputs)", a.Name, a.Classes(), sdk.Quote(r.Data.Source), k, k)
		}
	}
	return d.checkArchBounds(r, a)
}

func layerPart(msg string) string {
	if i := strings.Index(msg, "layer "); i >= 0 {
		return msg[i:]
	}
	return ""
}
