package recipe

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

func (d *decoder) model(v any, m *Model) error {
	path := []string{"model"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	var layers []any
	haveLayers := false
	err = d.table(tbl, path, []field{
		{"arch", d.setString(&m.Arch)},
		{"in_channels", d.setInt(&m.InChannels)},
		{"in_len", d.setInt(&m.InLen)},
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
	if !haveLayers {
		if k := firstPresent(tbl, []string{"in_channels", "in_len"}); k != "" {
			return d.keyErr(sub(path, k), "applies only to an inline architecture, which needs [[model.layers]]")
		}
		if _, err := nn.LookupArch(m.Arch); err != nil {
			return d.keyErr(sub(path, "arch"), "%v; or define one inline with in_channels, in_len and [[model.layers]]", err)
		}
		if m.Arch == "" {
			m.Arch = nn.PaperArchName
		}
		return nil
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

// checkModel validates the architecture and its fit to the data.
func (d *decoder) checkModel(r *Recipe) error {
	a, err := r.Arch()
	var shapes []nn.Shape
	if err == nil {
		shapes, err = a.Shapes()
	}
	if err != nil {
		path := []string{"model"}
		if r.Model.Layers == nil {
			path = sub(path, "arch")
		} else {
			// nn names the layer "layer N": point at it.
			var n int
			if _, e := fmt.Sscanf(layerPart(err.Error()), "layer %d", &n); e == nil {
				path = sub(path, "layers", strconv.Itoa(n))
			}
		}
		return d.errAt(path, "[model]: %v", err)
	}
	if n := r.Data.Len(); n > 0 && (a.InLen != n || a.InChannels != 1) {
		p := []string{"model", "in_len"}
		if r.Model.Layers == nil {
			p = []string{"model", "arch"}
		}
		return d.errAt(p, "[model]: architecture %q takes %d channel(s) x %d samples, but [data] makes 1 x %d (fs/f0*cycles = %v/%v*%d)",
			a.Name, a.InChannels, a.InLen, n, r.Data.Fs, r.Data.F0, r.Data.Cycles)
	}
	return d.checkArchBounds(r, a, shapes)
}

func layerPart(msg string) string {
	if i := strings.Index(msg, "layer "); i >= 0 {
		return msg[i:]
	}
	return ""
}
