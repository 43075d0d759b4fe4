package nn

import "fmt"

// FoldDropout turns one MC-dropout draw into an ordinary network. masks[j]
// is the keep mask of the j-th dropout layer of a (one entry per input unit
// of that layer, the same for every input). Each dropout layer must be
// followed directly by a dense or conv1d layer, whose weight columns are
// scaled: w'[o,i,k] = w[o,i,k] m_i / (1 - p). The dropout layers are
// removed from the returned architecture. In a graph architecture each
// dropout node must be read by one linear or conv1d (groups 1) node, which
// then reads the dropout's input.
func FoldDropout(a Arch, p []float32, masks [][]bool) (Arch, []float32, error) {
	if a.Graph != nil {
		return foldGraphDropout(a, p, masks)
	}
	lay, err := NewLayout(a)
	if err != nil {
		return Arch{}, nil, err
	}
	if len(p) != lay.Size {
		return Arch{}, nil, fmt.Errorf("arch %q: parameter vector has %d values, want %d", a.Name, len(p), lay.Size)
	}
	shapes, _ := a.Shapes()
	out := Arch{Name: a.Name, InChannels: a.InChannels, InLen: a.InLen}
	q := append([]float32(nil), p...)
	j := 0
	for i, l := range a.Layers {
		if l.Kind != KindDropout {
			out.Layers = append(out.Layers, l)
			continue
		}
		if j >= len(masks) {
			return Arch{}, nil, fmt.Errorf("arch %q: %d dropout masks given, layer %d is dropout number %d", a.Name, len(masks), i, j+1)
		}
		m := masks[j]
		j++
		in := Shape{a.InChannels, a.InLen}
		if i > 0 {
			in = shapes[i-1]
		}
		var next *kindDef
		if i+1 < len(a.Layers) {
			next = kindOf(a.Layers[i+1].Kind)
		}
		if next == nil || next.linearTaps == nil {
			return Arch{}, nil, fmt.Errorf("arch %q: dropout layer %d must be followed by a dense or conv1d layer to be folded", a.Name, i)
		}
		if len(m) != in.C {
			return Arch{}, nil, fmt.Errorf("arch %q: dropout layer %d needs a mask of %d units, got %d", a.Name, i, in.C, len(m))
		}
		nl := a.Layers[i+1]
		k := next.linearTaps(nl)
		w := lay.View(q, nl.Name+".weight")
		scale := float32(1 / (1 - l.P))
		for o := 0; o < nl.Out; o++ {
			for c := 0; c < in.C; c++ {
				for t := 0; t < k; t++ {
					if m[c] {
						w[(o*in.C+c)*k+t] *= scale
					} else {
						w[(o*in.C+c)*k+t] = 0
					}
				}
			}
		}
	}
	if j != len(masks) {
		return Arch{}, nil, fmt.Errorf("arch %q: %d dropout masks given for %d dropout layers", a.Name, len(masks), j)
	}
	// The layout of out equals that of a (dropout has no parameters).
	return out, q, nil
}

// dropout applies layer i's inverted-dropout mask of sample s:
// dst[j] = src[j] * m[j], where m holds 0 or 1/(1-P) (drawn for this
// training step); in eval mode, or with P = 0, dst = src. Forward and
// backward share it: the mask scales the activation and its gradient.
func (n *Net) dropout(ws *Workspace, i int, l Layer, s int, dst, src []float32) {
	if !ws.train || l.P == 0 {
		copy(dst, src)
		return
	}
	m := ws.mask[i][s*len(dst) : (s+1)*len(dst)]
	for j := range dst {
		dst[j] = src[j] * m[j]
	}
}

// DropoutInputs lists the dropout layers (or graph nodes) of a in order:
// the number of input units each masks (channels; a mask is shared over
// time) and its probability.
func DropoutInputs(a Arch) (units []int, p []float64, err error) {
	if a.Graph != nil {
		net, err := a.compileGraph()
		if err != nil {
			return nil, nil, err
		}
		for i, nd := range net.Spec().Nodes {
			if nd.Op == "dropout" {
				units = append(units, net.NodeShape(i).C)
				p = append(p, nd.Attrs["p"].(float64))
			}
		}
		return units, p, nil
	}
	shapes, err := a.Shapes()
	if err != nil {
		return nil, nil, err
	}
	for i, l := range a.Layers {
		if l.Kind != KindDropout {
			continue
		}
		in := Shape{a.InChannels, a.InLen}
		if i > 0 {
			in = shapes[i-1]
		}
		units = append(units, in.C)
		p = append(p, l.P)
	}
	return units, p, nil
}
