package nn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
)

// unfolded is a GraphModel with its own paths hidden (no Perturber) and
// a Probs that runs every node (PlainProbs), counting its calls and the
// largest batch: Perturbed takes the forward passes of explicit copies.
type unfolded struct {
	m           *GraphModel
	calls, most atomic.Int64
	seen        atomic.Int64
	after       func(calls int64) // called after each call, if set
}

func (u *unfolded) Arch() Arch    { return u.m.Arch() }
func (u *unfolded) InputLen() int { return u.m.InputLen() }
func (u *unfolded) Classes() int  { return u.m.Classes() }
func (u *unfolded) Probs(ctx context.Context, dst, x []float32) error {
	b := int64(len(x) / u.m.InputLen())
	u.calls.Add(1)
	u.seen.Add(b)
	for {
		old := u.most.Load()
		if b <= old || u.most.CompareAndSwap(old, b) {
			break
		}
	}
	err := u.m.PlainProbs(ctx, dst, x)
	if u.after != nil {
		u.after(u.calls.Load())
	}
	return err
}
func (u *unfolded) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	return u.m.InputGrad(ctx, dst, probs, x, target)
}
func (u *unfolded) LayerShape(ctx context.Context, layer string) (Shape, error) {
	return u.m.LayerShape(ctx, layer)
}
func (u *unfolded) LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error {
	return u.m.LayerGrad(ctx, act, grad, x, target, layer)
}

func graphModels(t *testing.T) []*GraphModel {
	every := graphtest.RandomNet(t, graphtest.EveryOp(), 11)
	graphtest.PositiveVar(every)
	return []*GraphModel{NewGraphModel(graphtest.RandomNet(t, graphtest.Local("local", "globalmaxpool"), 3)), NewGraphModel(every),
		NewGraphModel(graphtest.RandomNet(t, graphtest.Transformer(), 5))}
}

// randomRequest is a random Perturbation of kind ("windows", "signal",
// "channel", "spans") for an input of C channels of T samples.
func randomRequest(r *rand.Rand, kind string, x []float32, C, T, K int) Perturbation {
	req := Perturbation{X: x, Class: r.IntN(K), Baseline: float32(r.NormFloat64()), Channel: AllChannels, Unperturbed: r.IntN(2) == 0}
	if kind == "spans" {
		req.Spans = make([][]ChannelSpan, 1+r.IntN(80))
		for j := range req.Spans {
			for range r.IntN(4) {
				lo := r.IntN(T)
				ch := AllChannels
				if r.IntN(2) == 0 {
					ch = r.IntN(C)
				}
				req.Spans[j] = append(req.Spans[j], ChannelSpan{Ch: ch, Lo: lo, Hi: lo + r.IntN(T-lo+1)})
			}
		}
		req.Unperturbed = false
		return req
	}
	req.Width = 1 + r.IntN(T)
	for s := 0; s+req.Width <= T; s += 1 + r.IntN(req.Width) {
		req.Starts = append(req.Starts, s)
	}
	if kind == "signal" || kind == "channel" && r.IntN(2) == 0 {
		req.Signal = make([]float32, len(x))
		for i := range req.Signal {
			req.Signal[i] = float32(r.NormFloat64())
		}
	}
	if kind == "channel" {
		req.Channel = r.IntN(C)
	}
	return req
}

// TestPerturbedFastPathIsForwardPasses: on graph networks, Perturbed by
// the model's own path (GraphModel's receptive-field recomputation)
// gives the bits of Perturbed's forward passes of explicitly perturbed
// copies through the same (unfolded) computation (within rounding, the
// unperturbed probability bit for bit; see nearly), for random windows of
// a value baseline, of a baseline signal and of one channel, and random
// sets of spans of any channels; the unperturbed probability too.
func TestPerturbedFastPathIsForwardPasses(t *testing.T) {
	ctx := context.Background()
	for _, m := range graphModels(t) {
		defer func() {
			if p := m.Path(); m.Arch().Name == "local" && p.Incremental == 0 {
				t.Errorf("the local graph's copies never took the incremental path: %v", p)
			}
		}()
		C, T, K := m.Arch().InChannels, m.Arch().InLen, m.Classes()
		r := rand.New(rand.NewPCG(7, uint64(C*T)))
		for _, kind := range []string{"windows", "signal", "channel", "spans"} {
			for trial := range 12 {
				x := make([]float32, C*T)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				req := randomRequest(r, kind, x, C, T, K)
				n := req.Copies()
				if req.Unperturbed {
					n++
				}
				fast, plain := make([]float32, n), make([]float32, n)
				before := m.Path().Copies
				if err := Perturbed(ctx, m, req, fast); err != nil {
					t.Fatalf("%s %s trial %d: %v", m.Arch().Name, kind, trial, err)
				}
				if got := m.Path().Copies - before; got != req.Copies() {
					t.Fatalf("%s %s trial %d: the model's own path computed %d copies of %d", m.Arch().Name, kind, trial, got, req.Copies())
				}
				u := &unfolded{m: m}
				if err := Perturbed(ctx, u, req, plain); err != nil {
					t.Fatal(err)
				}
				if !nearly(fast, plain, req.Unperturbed) {
					t.Fatalf("%s %s trial %d (%d copies): own path %v, forward passes %v", m.Arch().Name, kind, trial, req.Copies(), fast, plain)
				}
				if u.most.Load() > perturbedBatch || u.calls.Load() != int64((n+perturbedBatch-1)/perturbedBatch) || u.seen.Load() != int64(n) {
					t.Fatalf("%s %s: %d copies in %d calls of at most %d (%d inputs); want calls of %d", m.Arch().Name, kind, n, u.calls.Load(), u.most.Load(), u.seen.Load(), perturbedBatch)
				}
			}
		}
	}
}

// nearly is equality within 1e-6: the trunk plan's head (the local
// graph's global max pool) scores its copies with the float32
// exponential, and EveryOp's incremental path is not always the forward
// pass's bits (1 ulp seen). The unperturbed probability, when asked for
// (unperturbed), is the forward pass's bit for bit on every path.
func nearly(a, b []float32, unperturbed bool) bool {
	if unperturbed && math.Float32bits(a[len(a)-1]) != math.Float32bits(b[len(b)-1]) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// TestPerturbedDefinition: Perturbed's forward passes are the model's
// probabilities of the copies as the Perturbation defines them, built
// here one at a time (window j: samples Starts[j]..Starts[j]+Width-1 of
// the channel, or every channel, from the signal or the baseline; a set
// of spans: each span in its channel), and the unperturbed value is
// p(X), on a layer-list network with no incremental path.
func TestPerturbedDefinition(t *testing.T) {
	ctx := context.Background()
	a := Arch{Name: "flat", InChannels: 2, InLen: 24, Layers: []Layer{
		{Kind: KindConv1D, Name: "conv1", Out: 3, Kernel: 3}, {Kind: KindReLU},
		{Kind: KindFlatten}, {Kind: KindDense, Name: "fc", Out: 4},
	}}
	lay, err := NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Arch: a, Data: make([]float32, lay.Size)}
	Init(lay, p.Data, rand.New(rand.NewPCG(1, 2)))
	m, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	C, T, K := 2, 24, 4
	r := rand.New(rand.NewPCG(3, 3))
	for _, kind := range []string{"windows", "signal", "channel", "spans"} {
		for range 5 {
			x := make([]float32, C*T)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			req := randomRequest(r, kind, x, C, T, K)
			n := req.Copies()
			dst := make([]float32, n+map[bool]int{true: 1}[req.Unperturbed])
			if err := Perturbed(ctx, m, req, dst); err != nil {
				t.Fatal(err)
			}
			probs := make([]float32, K)
			for j := range len(dst) {
				row := slices.Clone(x)
				set := func(ch, lo, hi int) {
					for c := range C {
						if ch != AllChannels && c != ch {
							continue
						}
						for t := lo; t < hi; t++ {
							row[c*T+t] = req.Baseline
							if req.Signal != nil {
								row[c*T+t] = req.Signal[c*T+t]
							}
						}
					}
				}
				switch {
				case j == n: // X itself
				case req.Spans != nil:
					for _, s := range req.Spans[j] {
						set(s.Ch, s.Lo, s.Hi)
					}
				default:
					set(req.Channel, req.Starts[j], req.Starts[j]+req.Width)
				}
				if err := m.Probs(ctx, probs, row); err != nil {
					t.Fatal(err)
				}
				if dst[j] != probs[req.Class] {
					t.Fatalf("%s: copy %d of %d: %v, the definition's forward pass %v", kind, j, n, dst[j], probs[req.Class])
				}
			}
		}
	}
}

// TestPerturbedUnperturbedScoresZero: a window whose signal is X itself
// changes nothing, and its value is exactly the unperturbed one, on the
// model's own path and on forward passes alike.
func TestPerturbedUnperturbedScoresZero(t *testing.T) {
	for _, m := range graphModels(t) {
		x := make([]float32, m.InputLen())
		for i := range x {
			x[i] = float32(math.Sin(float64(i)))
		}
		req := Perturbation{X: x, Class: 1, Signal: x, Starts: []int{0, 5, 9}, Width: 7, Channel: AllChannels, Unperturbed: true}
		for _, mm := range []Model{m, &unfolded{m: m}} {
			dst := make([]float32, 4)
			if err := Perturbed(context.Background(), mm, req, dst); err != nil {
				t.Fatal(err)
			}
			for j := range 3 {
				if dst[j] != dst[3] {
					t.Errorf("%s: window %d of X's own values: %v, unperturbed %v", m.Arch().Name, j, dst[j], dst[3])
				}
			}
		}
	}
}

// TestPerturbedRejects: a request that does not fit the model is an error
// naming the field and what is accepted, and nothing is computed.
func TestPerturbedRejects(t *testing.T) {
	m := graphModels(t)[0] // 2 channels of 96 samples, 3 classes
	u := &unfolded{m: m}
	x := make([]float32, m.InputLen())
	ok := Perturbation{X: x, Class: 1, Starts: []int{0, 10}, Width: 8, Channel: AllChannels}
	for _, c := range []struct {
		name string
		edit func(r *Perturbation)
		dst  int
		want string
	}{
		{"short X", func(r *Perturbation) { r.X = x[:5] }, 2, "X has 5 values; want one input of 192"},
		{"class", func(r *Perturbation) { r.Class = 3 }, 2, "class 3; want 0..2"},
		{"signal", func(r *Perturbation) { r.Signal = x[:7] }, 2, "Signal has 7 values; want X's 192"},
		{"NaN baseline", func(r *Perturbation) { r.Baseline = float32(math.NaN()) }, 2, "baseline NaN; want a finite number"},
		{"dst", func(r *Perturbation) {}, 3, "dst has 3 values; want 2"},
		{"dst unperturbed", func(r *Perturbation) { r.Unperturbed = true }, 2, "dst has 2 values; want 3 (a copy each and X's)"},
		{"channel", func(r *Perturbation) { r.Channel = 2 }, 2, "channel 2; want -1 (every channel) or 0..1"},
		{"width", func(r *Perturbation) { r.Width = 97 }, 2, "window width 97; want 1..96"},
		{"start", func(r *Perturbation) { r.Starts = []int{0, 89} }, 2, "window 1 starts at 89; want 0..88"},
		{"both kinds", func(r *Perturbation) { r.Spans = [][]ChannelSpan{{}} }, 1, "both windows (2 starts, width 8) and 1 sets of spans; want one kind"},
		{"span channel", func(r *Perturbation) { r.Starts, r.Width, r.Spans = nil, 0, [][]ChannelSpan{{{Ch: 5, Lo: 0, Hi: 3}}} }, 1, "copy 0: span {Ch:5 Lo:0 Hi:3}"},
		{"span bounds", func(r *Perturbation) {
			r.Starts, r.Width, r.Spans = nil, 0, [][]ChannelSpan{{}, {{Ch: -1, Lo: 4, Hi: 2}}}
		}, 2, "copy 1: span {Ch:-1 Lo:4 Hi:2}; want channel -1 (every channel) or 0..1 and 0 <= Lo <= Hi <= 96"},
		{"spans and a channel", func(r *Perturbation) { r.Starts, r.Width, r.Channel, r.Spans = nil, 0, 0, [][]ChannelSpan{{}} }, 1, "channel 0 with spans; want -1"},
	} {
		r := ok
		c.edit(&r)
		for _, mm := range []Model{m, u} {
			dst := make([]float32, c.dst)
			err := Perturbed(context.Background(), mm, r, dst)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v; want an error containing %q", c.name, err, c.want)
			}
		}
	}
	if u.calls.Load() != 0 || m.Path().Copies != 0 {
		t.Errorf("rejected requests computed: %d calls, %d copies", u.calls.Load(), m.Path().Copies)
	}
}

// cancelAfter is a context whose Err is nil for its first n calls and
// context.Canceled after: a caller that checks it between chunks stops
// after n chunks, whatever the machine's speed.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func newCancelAfter(n int64) *cancelAfter {
	c := &cancelAfter{Context: context.Background()}
	c.n.Store(n)
	return c
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestCancelledStopsBetweenChunks: a ctx that ends during a long call
// stops it at the next chunk: Probs, InputGrad and LayerGrad of a batch
// of 10 chunks (a graph, and a list of layers compiled to one) and
// Perturbed's forward passes
// of 10 chunks of copies return an error wrapping context.Canceled, with
// the chunks after the end not computed (their outputs keep the values
// they had). A ctx ended before the call computes nothing.
func TestCancelledStopsBetweenChunks(t *testing.T) {
	const chunks, done = 10, 3
	gm := graphModels(t)[0]
	inf, err := NewModel(Params{Arch: smallArch(), Data: nil})
	if err == nil {
		t.Fatal("a model without parameters")
	}
	_, p, _, _ := randomSetup(t, smallArch(), 1, 1)
	if inf, err = NewModel(Params{Arch: smallArch(), Data: p}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    Model
		per  int
	}{{"graph", gm, graphBatch}, {"layers", inf, graphBatch}} {
		m := c.m
		n, k := m.InputLen(), m.Classes()
		B := chunks * c.per
		x := make([]float32, B*n)
		for i := range x {
			x[i] = float32(math.Cos(float64(i)))
		}
		written := func(what string, dst []float32, per int, err error) {
			t.Helper()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s %s: %v; want context.Canceled wrapped", c.name, what, err)
			}
			for b := range B {
				nan := math.IsNaN(float64(dst[b*per]))
				if b < done*c.per == nan {
					t.Fatalf("%s %s: input %d computed %v; want the first %d chunks of %d only", c.name, what, b, !nan, done, chunks)
				}
			}
		}
		nans := func(s int) []float32 {
			v := make([]float32, s)
			for i := range v {
				v[i] = float32(math.NaN())
			}
			return v
		}
		probs := nans(B * k)
		written("Probs", probs, k, m.Probs(newCancelAfter(done), probs, x))
		grad := nans(B * n)
		written("InputGrad", grad, n, m.InputGrad(newCancelAfter(done), grad, nil, x, make([]int, B)))
		layer := "c2"
		if c.name == "graph" {
			layer = "down"
		}
		sh, err := m.LayerShape(context.Background(), layer)
		if err != nil {
			t.Fatal(err)
		}
		act, lg := nans(B*sh.Size()), nans(B*sh.Size())
		written("LayerGrad", act, sh.Size(), m.LayerGrad(newCancelAfter(done), act, lg, x, make([]int, B), layer))
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		probs = nans(B * k)
		if err := m.Probs(cancelled, probs, x); !errors.Is(err, context.Canceled) || !math.IsNaN(float64(probs[0])) {
			t.Errorf("%s: Probs under an ended ctx: %v", c.name, err)
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	u := &unfolded{m: gm, after: func(calls int64) {
		if calls == done {
			cancel() // during the call of the done-th chunk
		}
	}}
	T := gm.Arch().InLen
	starts := make([]int, chunks*perturbedBatch)
	for j := range starts {
		starts[j] = j % (T - 3)
	}
	dst := make([]float32, len(starts))
	err = Perturbed(cancelled, u, Perturbation{X: make([]float32, gm.InputLen()), Starts: starts, Width: 4, Channel: AllChannels}, dst)
	if !errors.Is(err, context.Canceled) || u.calls.Load() != done || u.seen.Load() != done*perturbedBatch {
		t.Errorf("Perturbed: %v after %d calls of %d copies; want context.Canceled after %d calls of %d", err, u.calls.Load(), u.seen.Load(), done, done*perturbedBatch)
	}
}

// TestPerturbedEdges: the bounds of a request are accepted (a window of 1
// sample and one of the whole input, an empty span, which changes
// nothing and scores X's own probability), and the forward passes take
// ceil(rows/64) calls exactly, 64 rows in one.
func TestPerturbedEdges(t *testing.T) {
	ctx := context.Background()
	m := graphModels(t)[0]
	T := m.Arch().InLen
	x := make([]float32, m.InputLen())
	for i := range x {
		x[i] = float32(math.Cos(0.1 * float64(i)))
	}
	for _, w := range []int{1, T} {
		dst := make([]float32, 2)
		if err := Perturbed(ctx, m, Perturbation{X: x, Starts: []int{T - w}, Width: w, Channel: AllChannels, Unperturbed: true}, dst); err != nil {
			t.Errorf("a window of %d samples: %v", w, err)
		}
	}
	for _, mm := range []Model{m, &unfolded{m: m}} {
		dst := make([]float32, 2)
		req := Perturbation{X: x, Class: 2, Spans: [][]ChannelSpan{{{Ch: 1, Lo: 7, Hi: 7}}, {}}, Channel: AllChannels}
		if err := Perturbed(ctx, mm, req, dst); err != nil || dst[0] != dst[1] {
			t.Errorf("an empty span: %v, %v; want the probability of the copy without spans", dst, err)
		}
	}
	for _, c := range []struct {
		copies      int
		unperturbed bool
		calls       int64
	}{{64, false, 1}, {63, true, 1}, {64, true, 2}, {128, false, 2}} {
		u := &unfolded{m: m}
		starts := make([]int, c.copies)
		dst := make([]float32, c.copies+map[bool]int{true: 1}[c.unperturbed])
		if err := Perturbed(ctx, u, Perturbation{X: x, Starts: starts, Width: 3, Channel: AllChannels, Unperturbed: c.unperturbed}, dst); err != nil {
			t.Fatal(err)
		}
		if u.calls.Load() != c.calls || u.seen.Load() != int64(len(dst)) {
			t.Errorf("%d rows: %d calls of %d inputs; want %d calls", len(dst), u.calls.Load(), u.seen.Load(), c.calls)
		}
	}
}
