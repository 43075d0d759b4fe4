package nn

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// chunkSize is the number of samples one task of the worker pool handles.
// Per-sample work inside a chunk, and the reduction of chunk results, run
// in a fixed order, so results do not depend on the number of workers.
const chunkSize = 8

// Net executes an architecture on batches. It holds no parameters: every
// call takes the flat parameter vector, so one Net serves every draw of a
// posterior. A Net is safe for concurrent use with separate Workspaces.
type Net struct {
	arch   Arch
	layout *Layout
	in     Shape
	shapes []Shape
	ins    []Shape // input shape of each layer
	offs   []layerOffs
	// gmpChain[i] is, for a conv1d layer followed by zero or more ReLUs and
	// a global max pool, the index of that pool; -1 otherwise. The output
	// gradient of such a conv has one nonzero per channel and sample.
	gmpChain []int
	// chainConv[i] is, for a ReLU or global max pool of such a chain, the
	// chain's conv1d; -1 otherwise.
	chainConv []int
	defs      []*kindDef // the kind of each layer
	dense     bool       // tests: no sparse backward
	// Workers is the number of goroutines a call may use (0: GOMAXPROCS):
	// the caller's and Workers-1 helpers from a package-wide pool, started
	// on first use and kept.
	Workers int
}

type layerOffs struct{ w, b, rm, rv int }

// NewNet validates the architecture and prepares its execution.
func NewNet(a Arch) (*Net, error) {
	shapes, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	lay, err := NewLayout(a)
	if err != nil {
		return nil, err
	}
	n := &Net{arch: a, layout: lay, in: Shape{a.InChannels, a.InLen}, shapes: shapes}
	n.ins = make([]Shape, len(a.Layers))
	n.offs = make([]layerOffs, len(a.Layers))
	n.defs = make([]*kindDef, len(a.Layers))
	cur := n.in
	for i, l := range a.Layers {
		n.ins[i] = cur
		n.defs[i] = kindOf(l.Kind)
		o := layerOffs{-1, -1, -1, -1}
		at := [...]*int{&o.w, &o.b, &o.rm, &o.rv}
		for j, ps := range LayerParams(l, cur) {
			t, ok := lay.Lookup(l.Name + "." + ps.Suffix)
			if !ok {
				panic("nn: layout lacks " + l.Name + "." + ps.Suffix)
			}
			*at[j] = t.Offset
		}
		n.offs[i] = o
		cur = shapes[i]
	}
	// The conv1d -> ReLU* -> global max pool chains of the sparse backward.
	n.gmpChain = make([]int, len(a.Layers))
	n.chainConv = make([]int, len(a.Layers))
	for i := range a.Layers {
		n.gmpChain[i], n.chainConv[i] = -1, -1
	}
	for i, l := range a.Layers {
		if l.Kind != KindConv1D {
			continue
		}
		g := i + 1
		for g < len(a.Layers) && a.Layers[g].Kind == KindReLU {
			g++
		}
		if g < len(a.Layers) && a.Layers[g].Kind == KindGlobalMaxPool {
			n.gmpChain[i] = g
			for r := i + 1; r <= g; r++ {
				n.chainConv[r] = i
			}
		}
	}
	return n, nil
}

// Arch returns the architecture.
func (n *Net) Arch() Arch { return n.arch }

// Layout returns the parameter layout.
func (n *Net) Layout() *Layout { return n.layout }

// InputLen is the length of one input, InChannels*InLen.
func (n *Net) InputLen() int { return n.in.Size() }

// Classes is the number of logits.
func (n *Net) Classes() int { return n.shapes[len(n.shapes)-1].C }

// LayerIndex returns the index of the layer called name.
func (n *Net) LayerIndex(name string) (int, error) {
	var known []string
	for i, l := range n.arch.Layers {
		if l.Name == name && name != "" {
			return i, nil
		}
		if l.Name != "" {
			known = append(known, l.Name)
		}
	}
	return -1, fmt.Errorf("arch %q has no layer %q (named layers: %v)", n.arch.Name, name, known)
}

// OutShape is the per-sample output shape of layer i.
func (n *Net) OutShape(i int) Shape { return n.shapes[i] }

func (n *Net) workers() int {
	if n.Workers > 0 {
		return n.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// stage is one parallel step of a pass over the fixed chunks of a batch:
// every sample of a chunk runs a run of layers (see sample), the chunks in
// any order on up to Net.Workers goroutines.
type stage struct {
	n          *Net
	ws         *Workspace
	p, dParams []float32
	back       bool
	lo, hi     int // forward: layers lo..hi-1; backward: hi..lo+1
	bn         int // a train-mode batchnorm closing the run (statistics or sums), or -1
	stop       int
	needInput  bool
	nch        int
	next       atomic.Int64
	wg         sync.WaitGroup
}

// sample runs the stage's layers for sample s of chunk c.
func (t *stage) sample(c, s int) {
	n, ws := t.n, t.ws
	if !t.back {
		for i := t.lo; i < t.hi; {
			i = n.forwardSample(ws, t.p, i, s, t.hi)
		}
		if t.bn >= 0 {
			n.bnStats(ws, t.bn, s)
		}
		return
	}
	n.backwardRun(ws, t.p, t.dParams, t.hi, t.lo, s, c, t.stop, t.needInput)
	if t.bn >= 0 {
		n.bnGradSums(ws, t.bn, s, n.batchGrad(ws, t.bn, s))
	}
}

// setStage returns ws.st set up for a pass with parameters p (and parameter
// gradients dParams); the caller sets the layer range.
func (ws *Workspace) setStage(n *Net, p, dParams []float32, back bool) *stage {
	t := &ws.st
	t.n, t.ws, t.p, t.dParams, t.back = n, ws, p, dParams, back
	return t
}

// work runs chunks until none is left.
func (t *stage) work() {
	b := t.ws.b
	for {
		c := int(t.next.Add(1) - 1)
		if c >= t.nch {
			return
		}
		for s := c * chunkSize; s < min((c+1)*chunkSize, b); s++ {
			t.sample(c, s)
		}
	}
}

// helpers is a package-wide pool of goroutines that join stages: started
// on demand (up to the largest Workers-1 asked for), they wait on ch.
var helpers struct {
	mu sync.Mutex
	n  atomic.Int64
	ch chan *stage
}

func helper(ch chan *stage) {
	for t := range ch {
		t.work()
		t.wg.Done()
	}
}

// run executes the stage ws.st on the calling goroutine and up to
// Workers-1 idle helpers (none idle: the caller does their share).
func (n *Net) run(t *stage) {
	t.nch = (t.ws.b + chunkSize - 1) / chunkSize
	t.next.Store(0)
	if w := min(n.workers(), t.nch) - 1; w > 0 {
		if helpers.n.Load() < int64(w) {
			helpers.mu.Lock()
			if helpers.ch == nil {
				helpers.ch = make(chan *stage)
			}
			for helpers.n.Load() < int64(w) {
				go helper(helpers.ch)
				helpers.n.Add(1)
			}
			helpers.mu.Unlock()
		}
		for range w {
			t.wg.Add(1)
			select {
			case helpers.ch <- t:
			default:
				t.wg.Done()
			}
		}
	}
	t.work()
	t.wg.Wait()
}
