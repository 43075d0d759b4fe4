package nn

// Workspace holds the activations of one batch for the backward pass. It
// belongs to one goroutine at a time.
type Workspace struct {
	net   *Net
	cap   int
	b     int // current batch size
	train bool
	x     []float32
	acts  [][]float32
	xhat  [][]float32 // batchnorm: normalised input
	idx   [][]int32   // pooling: argmax position in the input
	mask  [][]float32 // dropout: 0 or 1/(1-p)
	mean  [][]float64 // batchnorm: per-channel mean used
	istd  [][]float64 // batchnorm: per-channel 1/sqrt(var+eps) used
	// batchnorm: per-sample, per-channel statistics (b*C values each): the
	// mean and centred sum of squares of the input (forward), the sums of
	// dy and dy*xhat (backward).
	sa, sb [][]float64
	gk     [][]float32  // batchnorm backward: gamma*istd, mean(dy), mean(dy*xhat) per channel
	wpack  [][]float32  // conv: the weights packed for the batch (kern.PackConv)
	g      [2][]float32 // gradients between runs of layers: sample s at s*gs
	gs     int
	cgrad  [][]float32 // per-chunk parameter gradients
	// Sparse gradients: the output gradient of layer supAt[s] of sample s
	// is valid only at the time steps sup[s] (sorted; zero elsewhere, not
	// yet written there); noSup: none.
	sup, sup2 [][]int32
	supAt     []int
	scr       [][]float32    // per-chunk scratch of the sparse conv backward
	gscr      [][2][]float32 // per-chunk gradients inside a backward run
	st        stage          // the parallel step being run
}

const noSup = -2

// NewWorkspace allocates the buffers for batches of up to capacity samples.
func (n *Net) NewWorkspace(capacity int) *Workspace {
	if capacity < 1 {
		panic("nn: workspace capacity must be >= 1")
	}
	ws := &Workspace{net: n, cap: capacity}
	L := len(n.arch.Layers)
	ws.acts = make([][]float32, L)
	ws.xhat = make([][]float32, L)
	ws.idx = make([][]int32, L)
	ws.mask = make([][]float32, L)
	ws.mean = make([][]float64, L)
	ws.istd = make([][]float64, L)
	ws.sa = make([][]float64, L)
	ws.sb = make([][]float64, L)
	ws.gk = make([][]float32, L)
	ws.wpack = make([][]float32, L)
	maxSize := n.in.Size()
	for i := range n.arch.Layers {
		s := n.shapes[i].Size()
		if s > maxSize {
			maxSize = s
		}
		ws.acts[i] = make([]float32, capacity*s)
		if d := n.defs[i]; d.alloc != nil {
			d.alloc(n, ws, i, capacity)
		}
	}
	ws.gs = maxSize
	ws.g[0] = make([]float32, capacity*maxSize)
	ws.g[1] = make([]float32, capacity*maxSize)
	nch := (capacity + chunkSize - 1) / chunkSize
	ws.cgrad = make([][]float32, nch)
	supCap, scrLen := n.in.T, 0
	for i := range n.arch.Layers {
		supCap = max(supCap, n.shapes[i].T, n.shapes[i].C)
		if d := n.defs[i]; d.scratch != nil {
			scrLen = max(scrLen, d.scratch(n, i))
		}
	}
	ws.sup = make([][]int32, capacity)
	ws.sup2 = make([][]int32, capacity)
	ws.supAt = make([]int, capacity)
	for s := range ws.sup {
		ws.sup[s] = make([]int32, 0, supCap)
		ws.sup2[s] = make([]int32, 0, supCap)
	}
	ws.scr = make([][]float32, nch)
	ws.gscr = make([][2][]float32, nch)
	for c := range ws.scr {
		ws.scr[c] = make([]float32, scrLen)
		ws.gscr[c] = [2][]float32{make([]float32, maxSize), make([]float32, maxSize)}
	}
	return ws
}

// Cap is the largest batch the workspace holds.
func (ws *Workspace) Cap() int { return ws.cap }

// Act returns the output of layer i for the current batch, (B, C, T).
func (ws *Workspace) Act(i int) []float32 { return ws.acts[i][:ws.b*ws.net.shapes[i].Size()] }

// Logits returns the output of the last layer for the current batch.
func (ws *Workspace) Logits() []float32 { return ws.Act(len(ws.acts) - 1) }

// input returns the input of layer i for sample s.
func (n *Net) input(ws *Workspace, i, s int) []float32 {
	sz := n.ins[i].Size()
	if i == 0 {
		return ws.x[s*sz : (s+1)*sz]
	}
	return ws.acts[i-1][s*sz : (s+1)*sz]
}
