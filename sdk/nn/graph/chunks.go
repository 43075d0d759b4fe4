package graph

// Chunks is the number of sample chunks a node's call is split into
// (fewer for a smaller batch): the chunks run on up to Net.Workers
// goroutines, and a chunk's parameter gradients are summed in a buffer of
// its own, added to the result in chunk order. The split depends on the
// batch only, so the bytes do not depend on the number of workers.
const Chunks = 4

// TrainChunks is the number of sample chunks of a training pass's runs
// of nodes (samples.go): finer than Chunks, so that the helpers that
// join a run late still find work (the split depends on the batch
// only, as Chunks').
const TrainChunks = 8

// maxChunks is the larger of Chunks and TrainChunks.
const maxChunks = max(Chunks, TrainChunks)

// GradChunk is the number of samples of a chunk of a call that adds to
// parameter gradients: each chunk's sum in a buffer of its own, the
// buffers added to the gradient in chunk order (the layer-list engine's
// order of sums, so that training the paper's network gives its bytes).
const GradChunk = 8

// chunked runs fn, an op's Forward or Backward on the call c, on the
// chunks of c's samples. whole runs it on the whole batch instead (an
// op whose samples are coupled: batchnorm on batch statistics, dropout
// drawing its masks in order).
func (n *Net) chunked(w *workspace, i int, c *Call, fn func(*Call), whole bool) {
	grads := false
	for _, d := range c.DP {
		grads = grads || d != nil
	}
	nc := min(c.B, Chunks)
	if grads {
		nc = (c.B + GradChunk - 1) / GradChunk
	}
	if whole || nc < 2 || (n.Workers <= 1 && !grads) {
		fn(c) // the same bytes as chunks: each sample's values are its own
		return
	}
	calls := w.chunkCalls(i, c, nc)
	for k := range calls {
		// Even shares: ceil(B/nc)-sized chunks would leave the last
		// ones empty or past the batch (B = 5: 2, 2, 2 and -1).
		cc := &calls[k]
		b0, b1 := k*c.B/nc, (k+1)*c.B/nc
		if grads {
			b0, b1 = k*GradChunk, min((k+1)*GradChunk, c.B)
		}
		cutCall(cc, c, b0, b1)
		cc.DP = cc.DP[:len(c.DP)]
		for j, d := range c.DP {
			if d == nil {
				cc.DP[j] = nil
				continue
			}
			cc.DP[j] = w.chunkGrad(i, k, j, len(d))
			clear(cc.DP[j])
		}
	}
	w.cw = callsWork{calls: calls, fn: fn}
	runStage(&w.st, &w.cw, nc, n.Workers)
	w.cw = callsWork{}
	for j, d := range c.DP {
		if d == nil {
			continue
		}
		for k := range calls {
			for x, v := range calls[k].DP[j] {
				d[x] += v
			}
		}
	}
}

// cutCall makes cc the call c on its samples b0..b1-1 (all but DP).
func cutCall(cc, c *Call, b0, b1 int) {
	cc.A, cc.In, cc.Out, cc.P, cc.Train, cc.Rand, cc.Fused = c.A, c.In, c.Out, c.P, c.Train, c.Rand, c.Fused
	cc.B = b1 - b0
	for j, s := range c.X {
		cc.X[j] = nil
		if s != nil {
			sz := c.In[j].Size()
			cc.X[j] = s[b0*sz : b1*sz]
		}
	}
	for j, s := range c.DX {
		cc.DX[j] = nil
		if s != nil {
			sz := c.In[j].Size()
			cc.DX[j] = s[b0*sz : b1*sz]
		}
	}
	osz := c.Out.Size()
	cc.Y = c.Y[b0*osz : b1*osz]
	cc.DY = nil
	if c.DY != nil {
		cc.DY = c.DY[b0*osz : b1*osz]
	}
	cc.HotAt, cc.HotDY, cc.Steps, cc.DXSteps = nil, nil, nil, nil
	if c.HotAt != nil {
		per := len(c.HotAt) / c.B
		cc.HotAt, cc.HotDY = c.HotAt[b0*per:b1*per], c.HotDY[b0*per:b1*per]
	}
	if c.Steps != nil {
		cc.Steps = c.Steps[b0:b1]
	}
	if c.DXSteps != nil {
		cc.DXSteps = c.DXSteps[b0:b1]
	}
	if per := len(c.Idx) / c.B; per > 0 {
		cc.Idx = c.Idx[b0*per : b1*per]
	} else {
		cc.Idx = nil
	}
}

// chunkCalls are node i's chunk calls (nc of them), made once.
func (w *workspace) chunkCalls(i int, c *Call, nc int) []Call {
	if w.chunks == nil {
		w.chunks = make([][]Call, len(w.calls))
	}
	if len(w.chunks[i]) < nc {
		w.chunks[i] = make([]Call, max(nc, maxChunks))
		for k := range w.chunks[i] {
			w.chunks[i][k] = Call{X: make([][]float32, len(c.X)), DX: make([][]float32, len(c.DX)), DP: make([][]float32, len(c.DP))}
		}
	}
	return w.chunks[i][:nc]
}

// chunkGrad is chunk k's buffer for parameter j of node i.
func (w *workspace) chunkGrad(i, k, j, n int) []float32 {
	if w.chunkDP == nil {
		w.chunkDP = make([][][][]float32, len(w.calls))
	}
	if len(w.chunkDP[i]) <= k {
		w.chunkDP[i] = append(w.chunkDP[i], make([][][]float32, max(k+1, maxChunks)-len(w.chunkDP[i]))...)
	}
	if len(w.chunkDP[i][k]) <= j {
		w.chunkDP[i][k] = append(w.chunkDP[i][k], make([][]float32, j+1-len(w.chunkDP[i][k]))...)
	}
	if len(w.chunkDP[i][k][j]) < n {
		w.chunkDP[i][k][j] = make([]float32, n)
	}
	return w.chunkDP[i][k][j][:n]
}
