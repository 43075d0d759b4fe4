package nn

// FoldDropout turns one MC-dropout draw into an ordinary network. masks[j]
// is the keep mask of the j-th dropout node of a's graph (one entry per
// input unit of that node, the same for every input). Each dropout node
// must be read by one linear or conv1d (groups 1) node (a dense or conv1d
// layer right after a dropout layer), whose weight columns are scaled:
// w'[o,i,k] = w[o,i,k] m_i / (1 - p), and which then reads the dropout's
// input. The dropout nodes are removed from the returned architecture,
// a graph (its Layers nil).
func FoldDropout(a Arch, p []float32, masks [][]bool) (Arch, []float32, error) {
	return foldGraphDropout(a, p, masks)
}

// DropoutInputs lists the dropout layers (or graph nodes) of a in order:
// the number of input units each masks (channels; a mask is shared over
// time) and its probability.
func DropoutInputs(a Arch) (units []int, p []float64, err error) {
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
