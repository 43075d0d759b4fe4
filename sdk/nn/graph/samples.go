package graph

// A training pass runs the nodes between two TrainForward nodes (whose
// batch statistics couple the samples: batchnorm, dropout's masks drawn
// in order) sample group by sample group: each chunk of the batch (as
// chunked splits it) goes to a worker, which takes its samples SampleRun
// at a time through every node of the run while their values are in
// cache, as the layer-list engine ran the layers between two
// batchnorms. Each sample's values are its own, so the bytes are those
// of node-by-node calls on the whole batch.

// SampleRun is the number of samples a worker takes through a run of
// nodes at a time.
const SampleRun = 2

// forwardSamples runs the Forward of the nodes (their calls prepared in
// w.calls for the batch of B) sample group by sample group.
func (n *Net) forwardSamples(w *workspace, nodes []int, B int) {
	if len(nodes) == 0 {
		return
	}
	nc := min(B, Chunks)
	for _, i := range nodes {
		w.chunkCalls(i, &w.calls[i], nc)
	}
	w.sw = samplesWork{n: n, w: w, nodes: nodes, B: B, nc: nc}
	runStage(&w.st, &w.sw, nc, n.Workers)
	w.sw = samplesWork{}
}

// forwardChunk runs chunk k of nc of the batch of B through the nodes,
// SampleRun samples at a time.
func (n *Net) forwardChunk(w *workspace, nodes []int, B, nc, k int) {
	b0, b1 := k*B/nc, (k+1)*B/nc
	for s := b0; s < b1; s += SampleRun {
		e := min(s+SampleRun, b1)
		for _, i := range nodes {
			cc := &w.chunks[i][k]
			cutCall(cc, &w.calls[i], s, e)
			n.nodes[i].op.Forward(cc)
		}
	}
}
