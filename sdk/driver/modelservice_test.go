package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// convArch is a small network with the paper's shape (convolutions, a
// global max pool, a dense head) over 2 channels of 24 samples, so that
// the incremental window path applies.
func convArch() nn.Arch {
	return nn.Arch{Name: "conv", InChannels: 2, InLen: 24, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 4, Kernel: 3}, {Kind: nn.KindReLU},
		{Kind: nn.KindConv1D, Name: "conv2", Out: 5, Kernel: 3}, {Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool}, {Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
}

func convModel(t testing.TB, seed uint64) (nn.Params, *nn.GraphModel) {
	t.Helper()
	lay, err := nn.NewLayout(convArch())
	if err != nil {
		t.Fatal(err)
	}
	p := nn.Params{Arch: convArch(), Data: make([]float32, lay.Size)}
	nn.Init(lay, p.Data, rand.New(rand.NewPCG(seed, 1)))
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

func inputs(b, n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	x := make([]float32, b*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// dialService serves m in a new ModelService and returns a client of it
// and the handle.
func dialService(t testing.TB, m nn.Model) (*ModelService, pb.ModelClient, uint64) {
	t.Helper()
	svc := NewModelService()
	t.Cleanup(func() { svc.Close() })
	addr, h, err := svc.Add(m)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("unix:"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(proto.MaxMessageSize), grpc.MaxCallSendMsgSize(proto.MaxMessageSize)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return svc, pb.NewModelClient(cc), h
}

func f32(t *testing.T, b []byte) []float32 {
	t.Helper()
	v, err := wire.Float32s(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestModelServiceAnswersAsTheModel: every call of the service gives the
// local model's values bit for bit, and Windows gives the probabilities
// of the occluded inputs built here and passed through Probs.
func TestModelServiceAnswersAsTheModel(t *testing.T) {
	_, m := convModel(t, 1)
	_, rpc, h := dialService(t, m)
	ctx := context.Background()
	const B = 5
	n, k, T := m.InputLen(), m.Classes(), m.Arch().InLen
	x := inputs(B, n, 3)
	targets := []int{0, 1, 2, 1, 0}

	info, err := rpc.Describe(ctx, &pb.ModelRef{Handle: h})
	if err != nil {
		t.Fatal(err)
	}
	arch, err := wire.DecodeArch(info.GetArchJson())
	if err != nil || !slices.Equal(arch.Layers, convArch().Layers) || info.GetInputLen() != int64(n) || info.GetClasses() != int64(k) {
		t.Fatalf("Describe: %v %+v %d %d", err, arch, info.GetInputLen(), info.GetClasses())
	}

	wantP := make([]float32, B*k)
	if err := m.Probs(ctx, wantP, x); err != nil {
		t.Fatal(err)
	}
	r, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(x)})
	if err != nil || !slices.Equal(f32(t, r.GetProbs()), wantP) {
		t.Fatalf("Probs: %v\n got %v\nwant %v", err, f32(t, r.GetProbs()), wantP)
	}

	wantG := make([]float32, B*n)
	if err := m.InputGrad(ctx, wantG, nil, x, targets); err != nil {
		t.Fatal(err)
	}
	g, err := rpc.InputGrad(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets)})
	if err != nil || !slices.Equal(f32(t, g.GetGrad()), wantG) || !slices.Equal(f32(t, g.GetProbs()), wantP) {
		t.Fatalf("InputGrad: %v", err)
	}

	sh, _ := m.LayerShape(ctx, "conv2")
	act, grad := make([]float32, B*sh.Size()), make([]float32, B*sh.Size())
	if err := m.LayerGrad(ctx, act, grad, x, targets, "conv2"); err != nil {
		t.Fatal(err)
	}
	l, err := rpc.Layer(ctx, &pb.LayerRequest{Handle: h, Layer: "conv2", X: wire.Float32Bytes(x), Targets: wire.Int64s(targets)})
	if err != nil || l.GetChannels() != int64(sh.C) || l.GetLength() != int64(sh.T) ||
		!slices.Equal(f32(t, l.GetAct()), act) || !slices.Equal(f32(t, l.GetGrad()), grad) {
		t.Fatalf("Layer: %v (shape %dx%d, want %v)", err, l.GetChannels(), l.GetLength(), sh)
	}
	if l, err := rpc.Layer(ctx, &pb.LayerRequest{Handle: h, Layer: "conv1"}); err != nil || l.GetChannels() != 4 || l.GetLength() != 22 || len(l.GetAct()) != 0 {
		t.Fatalf("Layer shape only: %v %v", l, err)
	}

	// Windows, with a constant and with a signal baseline, occluding every
	// channel (no channel) or one, against occluded copies through Probs.
	starts := []int{0, 3, 7, 16}
	const width = 8
	z := inputs(B, n, 4)
	for _, channel := range []int{-1, 0, 1} {
		for _, signal := range []bool{false, true} {
			req := &pb.WindowsRequest{Handle: h, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets), Starts: wire.Int64s(starts), Width: width, Baseline: 0.25}
			if signal {
				req.BaselineX = wire.Float32Bytes(z)
			}
			if channel >= 0 {
				req.Channel = ptr(int64(channel))
			}
			w, err := rpc.Windows(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got := f32(t, w.GetProbs())
			if len(got) != B*len(starts) {
				t.Fatalf("Windows: %d values, want %d", len(got), B*len(starts))
			}
			// Bit for bit what explainer.occlusion computes in process.
			p0 := f32(t, w.GetUnperturbed())
			for b := range B {
				want := make([]float32, len(starts))
				var w0 float32
				xb := x[b*n : (b+1)*n]
				var zb []float32
				if signal {
					zb = z[b*n : (b+1)*n]
				}
				ch := nn.AllChannels
				if channel >= 0 {
					ch = channel
				}
				req := nn.Perturbation{X: xb, Class: targets[b], Baseline: 0.25, Signal: zb, Starts: starts, Width: width, Channel: ch, Unperturbed: true}
				want = make([]float32, len(starts)+1)
				if err := nn.Perturbed(context.Background(), m, req, want); err != nil {
					t.Fatal(err)
				}
				w0 = want[len(starts)]
				want = want[:len(starts)]
				if !slices.Equal(got[b*len(starts):(b+1)*len(starts)], want) || p0[b] != w0 {
					t.Errorf("Windows (channel %d, signal %v) input %d: not the in-process nn.Perturbed bytes", channel, signal, b)
				}
			}
			row, p := make([]float32, n), make([]float32, k)
			for b := range B {
				for j, s := range starts {
					copy(row, x[b*n:(b+1)*n])
					for c := 0; c < n/T; c++ {
						if channel >= 0 && c != channel {
							continue
						}
						for i := c*T + s; i < c*T+s+width; i++ {
							row[i] = 0.25
							if signal {
								row[i] = z[b*n+i]
							}
						}
					}
					if err := m.Probs(ctx, p, row); err != nil {
						t.Fatal(err)
					}
					if d := math.Abs(float64(got[b*len(starts)+j] - p[targets[b]])); d > 1e-6 {
						t.Errorf("Windows (channel %d, signal %v): input %d start %d: %v, occluded forward pass %v", channel, signal, b, s, got[b*len(starts)+j], p[targets[b]])
					}
				}
			}
		}
	}
}

// TestModelServiceSpans: Spans gives the local SpanProbs bit for bit, and
// the probabilities of the perturbed inputs built here.
func TestModelServiceSpans(t *testing.T) {
	_, m := convModel(t, 3)
	_, rpc, h := dialService(t, m)
	n, k, T := m.InputLen(), m.Classes(), m.Arch().InLen
	x := inputs(1, n, 7)
	spans := [][]nn.Span{{}, {{Lo: 0, Hi: 8}}, {{Lo: 2, Hi: 5}, {Lo: 5, Hi: 9}, {Lo: 20, Hi: 24}}, {{Lo: 0, Hi: 24}}}
	var bounds, ends []int64
	for _, sp := range spans {
		for _, s := range sp {
			bounds = append(bounds, int64(s.Lo), int64(s.Hi))
		}
		ends = append(ends, int64(len(bounds)/2))
	}
	r, err := rpc.Spans(context.Background(), &pb.SpansRequest{Handle: h, X: wire.Float32Bytes(x), Target: 2, Bounds: bounds, Ends: ends, Baseline: -0.5})
	if err != nil {
		t.Fatal(err)
	}
	got := f32(t, r.GetProbs())
	want := make([]float32, len(spans))
	cs := make([][]nn.ChannelSpan, len(spans))
	for j, sp := range spans {
		for _, s := range sp {
			cs[j] = append(cs[j], nn.ChannelSpan{Ch: nn.AllChannels, Lo: s.Lo, Hi: s.Hi})
		}
	}
	if err := nn.Perturbed(context.Background(), m, nn.Perturbation{X: x, Class: 2, Baseline: -0.5, Spans: cs, Channel: nn.AllChannels}, want); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Spans %v, local nn.Perturbed %v", got, want)
	}
	row, p := make([]float32, n), make([]float32, k)
	for j, sp := range spans {
		copy(row, x)
		for _, s := range sp {
			for c := 0; c < n/T; c++ {
				for i := c*T + s.Lo; i < c*T+s.Hi; i++ {
					row[i] = -0.5
				}
			}
		}
		if err := m.Probs(context.Background(), p, row); err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(float64(got[j] - p[2])); d > 1e-6 {
			t.Errorf("perturbation %d: %v, forward pass %v", j, got[j], p[2])
		}
	}
}

// plain is a model with nn.Model's methods only: the service computes
// its windows and spans by forward passes.
type plain struct{ nn.Model }

// TestModelServicePlainModel: for a model without sdk/nn's incremental
// paths, Windows and Spans are forward passes of the perturbed inputs
// built here, and Windows' unperturbed probabilities are Probs's.
func TestModelServicePlainModel(t *testing.T) {
	_, m := convModel(t, 5)
	_, rpc, h := dialService(t, plain{m})
	ctx := context.Background()
	n, k, T := m.InputLen(), m.Classes(), m.Arch().InLen
	const B = 2
	x, z := inputs(B, n, 8), inputs(B, n, 9)
	targets := []int{2, 0}
	starts := []int{0, 5, 24 - 4}
	forward := func(b int, set func(row []float32)) float32 {
		row, p := slices.Clone(x[b*n:(b+1)*n]), make([]float32, k)
		set(row)
		if err := m.Probs(ctx, p, row); err != nil {
			t.Fatal(err)
		}
		return p[targets[b]]
	}
	for _, signal := range []bool{false, true} {
		req := &pb.WindowsRequest{Handle: h, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets), Starts: wire.Int64s(starts), Width: 4, Baseline: -1}
		if signal {
			req.BaselineX = wire.Float32Bytes(z)
		}
		w, err := rpc.Windows(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got, p0 := f32(t, w.GetProbs()), f32(t, w.GetUnperturbed())
		for b := range B {
			if want := forward(b, func([]float32) {}); p0[b] != want {
				t.Errorf("signal %v input %d: unperturbed %v, Probs %v", signal, b, p0[b], want)
			}
			for j, s := range starts {
				want := forward(b, func(row []float32) {
					for c := 0; c < n/T; c++ {
						for i := c*T + s; i < c*T+s+4; i++ {
							row[i] = -1
							if signal {
								row[i] = z[b*n+i]
							}
						}
					}
				})
				if got[b*len(starts)+j] != want {
					t.Errorf("signal %v input %d start %d: %v, forward pass %v", signal, b, s, got[b*len(starts)+j], want)
				}
			}
		}
	}
	r, err := rpc.Spans(ctx, &pb.SpansRequest{Handle: h, X: wire.Float32Bytes(x[n:]), Target: 0, Bounds: []int64{1, 3, 6, 9, 20, 24}, Ends: []int64{0, 1, 3}, Baseline: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	got := f32(t, r.GetProbs())
	for j, sp := range [][][2]int{{}, {{1, 3}}, {{6, 9}, {20, 24}}} {
		want := forward(1, func(row []float32) {
			for _, s := range sp {
				for c := 0; c < n/T; c++ {
					for i := c*T + s[0]; i < c*T+s[1]; i++ {
						row[i] = 0.5
					}
				}
			}
		})
		if got[j] != want {
			t.Errorf("Spans perturbation %d: %v, forward pass %v", j, got[j], want)
		}
	}
}

// TestModelServiceNoPool: an nn.GraphModel without a global max pool
// answers Windows by its WindowProbs, which equal forward passes of the
// occluded copies within float32 rounding, with PlainProbs's p(x); its
// Describe has no pooled length.
func TestModelServiceNoPool(t *testing.T) {
	a := nn.Arch{Name: "flat", InChannels: 1, InLen: 16, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 2, Kernel: 3}, {Kind: nn.KindReLU},
		{Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := nn.Params{Arch: a, Data: make([]float32, lay.Size)}
	nn.Init(lay, p.Data, rand.New(rand.NewPCG(7, 7)))
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	_, rpc, h := dialService(t, m)
	x := inputs(1, 16, 3)
	starts := []int{0, 6, 12}
	w, err := rpc.Windows(context.Background(), &pb.WindowsRequest{Handle: h, X: wire.Float32Bytes(x), Targets: []int64{1}, Starts: wire.Int64s(starts), Width: 4, Baseline: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, probs := make([]float32, len(starts)), make([]float32, 3)
	for j, s := range starts { // the definition: a forward pass of each occluded copy
		row := slices.Clone(x)
		for i := s; i < s+4; i++ {
			row[i] = 2
		}
		if err := m.Probs(context.Background(), probs, row); err != nil {
			t.Fatal(err)
		}
		want[j] = probs[1]
	}
	if err := m.Probs(context.Background(), probs, x); err != nil {
		t.Fatal(err)
	}
	if got := f32(t, w.GetProbs()); !slices.Equal(got, want) || f32(t, w.GetUnperturbed())[0] != probs[1] {
		t.Errorf("Windows %v (p0 %v), forward passes %v (p0 %v)", got, f32(t, w.GetUnperturbed()), want, probs[1])
	}
	if info, err := rpc.Describe(context.Background(), &pb.ModelRef{Handle: h}); err != nil || info.GetPooledLen() != 0 {
		t.Errorf("Describe: pooled length %d, %v; want 0", info.GetPooledLen(), err)
	}
}

// panicky panics in Probs, as a model would on a request the service's
// checks let through by mistake.
type panicky struct{ nn.Model }

func (panicky) Probs(context.Context, []float32, []float32) error { panic("a bug") }

// TestModelServiceRecoversPanics: a panic while answering is an Internal
// status, and the service goes on answering.
func TestModelServiceRecoversPanics(t *testing.T) {
	_, m := convModel(t, 1)
	svc, rpc, h := dialService(t, panicky{m})
	x := wire.Float32Bytes(inputs(1, m.InputLen(), 1))
	_, err := rpc.Probs(context.Background(), &pb.ModelBatch{Handle: h, X: x})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "model service: /uaxai.v2.Model/Probs: panic: a bug") {
		t.Errorf("a panicking model: %v", err)
	}
	_, h2, err := svc.Add(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.Probs(context.Background(), &pb.ModelBatch{Handle: h2, X: x}); err != nil {
		t.Errorf("after the panic: %v", err)
	}
}

// slow counts the Probs calls under way and holds each until release
// closes.
type slow struct {
	nn.Model
	now, most atomic.Int64
	release   chan struct{}
}

func (m *slow) Probs(ctx context.Context, dst, x []float32) error {
	n := m.now.Add(1)
	for {
		old := m.most.Load()
		if n <= old || m.most.CompareAndSwap(old, n) {
			break
		}
	}
	<-m.release
	defer m.now.Add(-1)
	return m.Model.Probs(ctx, dst, x)
}

// TestModelServiceBoundsConcurrency: however many calls come at once, at
// most the service's bound compute; a call waiting for a turn ends with
// its deadline.
func TestModelServiceBoundsConcurrency(t *testing.T) {
	_, m := convModel(t, 1)
	sm := &slow{Model: m, release: make(chan struct{})}
	svc := newModelService(2)
	t.Cleanup(func() { svc.Close() })
	addr, h, err := svc.Add(sm)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("unix:"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rpc := pb.NewModelClient(cc)
	x := wire.Float32Bytes(inputs(1, m.InputLen(), 2))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := rpc.Probs(context.Background(), &pb.ModelBatch{Handle: h, X: x})
			errs <- err
		}()
	}
	for sm.now.Load() < 2 { // two are computing; the others wait for a turn
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: x}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a call waiting past its deadline: %v", err)
	}
	time.Sleep(20 * time.Millisecond) // time for a call that got a turn by mistake to start
	if n := sm.now.Load(); n != 2 {
		t.Errorf("%d calls computing while 2 may", n)
	}
	close(sm.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := sm.most.Load(); got != 2 {
		t.Errorf("at most %d calls computed at once, want the bound 2", got)
	}
}

// TestModelServiceRejects: each malformed request is refused with a
// status that says what would have been accepted, and the service still
// answers afterwards.
func TestModelServiceRejects(t *testing.T) {
	_, m := convModel(t, 1)
	svc, rpc, h := dialService(t, m)
	ctx := context.Background()
	n := m.InputLen()
	x := wire.Float32Bytes(inputs(2, n, 5))
	nan := inputs(2, n, 5)
	nan[n+3] = float32(math.NaN())
	two := []int64{0, 1}
	win := func(mod func(*pb.WindowsRequest)) error {
		r := &pb.WindowsRequest{Handle: h, X: x, Targets: two, Starts: []int64{0, 4}, Width: 8}
		mod(r)
		_, err := rpc.Windows(ctx, r)
		return err
	}
	spans := func(mod func(*pb.SpansRequest)) error {
		r := &pb.SpansRequest{Handle: h, X: x[:4*n], Bounds: []int64{0, 4, 10, 12}, Ends: []int64{1, 2}}
		mod(r)
		_, err := rpc.Spans(ctx, r)
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		code codes.Code
		want string
	}{
		{"unknown handle", func() error { _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h + 1, X: x}); return err }(), codes.NotFound, "no model with handle"},
		{"describe unknown", func() error { _, err := rpc.Describe(ctx, &pb.ModelRef{Handle: 0}); return err }(), codes.NotFound, "no model with handle 0"},
		{"empty", func() error { _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h}); return err }(), codes.InvalidArgument, "x has 0 values; want B*48"},
		{"partial input", func() error { _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: x[:4*(n+1)]}); return err }(), codes.InvalidArgument, "x has 49 values; want B*48"},
		{"odd bytes", func() error { _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: x[:5]}); return err }(), codes.InvalidArgument, "not a whole number of float32"},
		{"probs with targets", func() error { _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: x, Targets: two}); return err }(), codes.InvalidArgument, "Probs takes no targets"},
		{"NaN input", func() error {
			_, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(nan)})
			return err
		}(), codes.InvalidArgument, "value 51 (input 1, sample 3) is NaN"},
		{"targets missing", func() error {
			_, err := rpc.InputGrad(ctx, &pb.ModelBatch{Handle: h, X: x, Targets: two[:1]})
			return err
		}(), codes.InvalidArgument, "1 targets for 2 inputs"},
		{"target out of range", func() error {
			_, err := rpc.InputGrad(ctx, &pb.ModelBatch{Handle: h, X: x, Targets: []int64{0, 3}})
			return err
		}(), codes.InvalidArgument, "input 1: target class 3 out of range 0..2"},
		{"negative target", func() error {
			_, err := rpc.Layer(ctx, &pb.LayerRequest{Handle: h, Layer: "conv1", X: x, Targets: []int64{-1, 0}})
			return err
		}(), codes.InvalidArgument, "input 0: target class -1"},
		{"unknown layer", func() error { _, err := rpc.Layer(ctx, &pb.LayerRequest{Handle: h, Layer: "conv9"}); return err }(), codes.InvalidArgument, "conv9"},
		{"width 0", win(func(r *pb.WindowsRequest) { r.Width = 0 }), codes.InvalidArgument, "width 0; want 1..24"},
		{"window past the end", win(func(r *pb.WindowsRequest) { r.Starts = []int64{0, 17} }), codes.InvalidArgument, "start 17 (index 1): a window of width 8 must lie in 0..24"},
		{"negative start", win(func(r *pb.WindowsRequest) { r.Starts = []int64{-1} }), codes.InvalidArgument, "start -1"},
		{"no starts", win(func(r *pb.WindowsRequest) { r.Starts = nil }), codes.InvalidArgument, "no starts"},
		{"negative channel", win(func(r *pb.WindowsRequest) { r.Channel = ptr(int64(-1)) }), codes.InvalidArgument, "channel -1; want 0..1 (the input's channels), or none for every channel"},
		{"channel past the input", win(func(r *pb.WindowsRequest) { r.Channel = ptr(int64(2)) }), codes.InvalidArgument, "channel 2; want 0..1"},
		{"NaN baseline", win(func(r *pb.WindowsRequest) { r.Baseline = float32(math.NaN()) }), codes.InvalidArgument, "baseline NaN; want a finite number"},
		{"short baseline signal", win(func(r *pb.WindowsRequest) { r.BaselineX = x[:4*n] }), codes.InvalidArgument, "baseline_x has 192 bytes; want one baseline signal per input, 96 float32 values (384 bytes)"},
		{"NaN first", func() error {
			_, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(append([]float32{float32(math.NaN())}, nan[1:]...))})
			return err
		}(), codes.InvalidArgument, "value 0 (input 0, sample 0) is NaN"},
		{"NaN first in the baseline signal", win(func(r *pb.WindowsRequest) {
			r.BaselineX = wire.Float32Bytes(append([]float32{float32(math.Inf(-1))}, nan[1:]...))
		}), codes.InvalidArgument, "baseline_x: value 0 (input 0, sample 0) is -Inf"},
		{"width past the input", win(func(r *pb.WindowsRequest) { r.Width, r.Starts = 25, []int64{0} }), codes.InvalidArgument, "width 25; want 1..24"},
		{"NaN baseline signal", win(func(r *pb.WindowsRequest) { r.BaselineX = wire.Float32Bytes(nan) }), codes.InvalidArgument, "baseline_x: value 51 (input 1, sample 3) is NaN"},
		{"spans of two inputs", spans(func(r *pb.SpansRequest) { r.X = x }), codes.InvalidArgument, "x has 384 bytes; want one input of 48 float32 values (192 bytes)"},
		{"odd bounds", spans(func(r *pb.SpansRequest) { r.Bounds = []int64{1, 2, 3}; r.Ends = []int64{1} }), codes.InvalidArgument, "3 bounds; want (lo, hi) pairs"},
		{"no perturbation", spans(func(r *pb.SpansRequest) { r.Bounds, r.Ends = nil, nil }), codes.InvalidArgument, "0 perturbations; want 1.."},
		{"ends short", spans(func(r *pb.SpansRequest) { r.Ends = []int64{1} }), codes.InvalidArgument, "the last end is 1; want the number of (lo, hi) pairs, 2"},
		{"ends decreasing", spans(func(r *pb.SpansRequest) { r.Ends = []int64{2, 1, 2} }), codes.InvalidArgument, "ends[1] = 1 is less than ends[0] = 2"},
		{"span past the end", spans(func(r *pb.SpansRequest) { r.Bounds = []int64{0, 4, 20, 25} }), codes.InvalidArgument, "perturbation 1: span [20, 25); want 0 <= lo < hi <= 24"},
		{"empty span", spans(func(r *pb.SpansRequest) { r.Bounds = []int64{3, 3, 5, 6} }), codes.InvalidArgument, "perturbation 0: span [3, 3)"},
		{"overlapping spans", spans(func(r *pb.SpansRequest) { r.Bounds = []int64{0, 6, 5, 8}; r.Ends = []int64{2} }), codes.InvalidArgument, "span [5, 8) starts before the previous one ends (6)"},
		{"spans target", spans(func(r *pb.SpansRequest) { r.Target = 3 }), codes.InvalidArgument, "target class 3 out of range 0..2"},
		{"spans NaN baseline", spans(func(r *pb.SpansRequest) { r.Baseline = float32(math.Inf(1)) }), codes.InvalidArgument, "baseline +Inf; want a finite number"},
		{"too many windows", win(func(r *pb.WindowsRequest) {
			r.Width = 1
			r.X, r.Targets = wire.Float32Bytes(inputs(5, n, 5)), make([]int64, 5)
			r.Starts = make([]int64, MaxServiceWindows/5+1)
		}), codes.InvalidArgument, "5 inputs x 838861 windows in one request; at most 4194304 windows are accepted (split the batch)"},
		{"too many starts", win(func(r *pb.WindowsRequest) {
			r.Width = 1
			r.Starts = make([]int64, MaxServiceStarts+1)
		}), codes.InvalidArgument, "Windows: starts has 1048577 values; at most 1048576 are accepted in one request"},
		{"too many perturbations", spans(func(r *pb.SpansRequest) {
			r.Bounds, r.Ends = []int64{0, 1}, make([]int64, MaxServicePerturbations+1)
			r.Ends[len(r.Ends)-1] = 1
		}), codes.InvalidArgument, "Spans: ends has 65537 values; at most 65536"},
		{"a long layer name", func() error {
			_, err := rpc.Layer(ctx, &pb.LayerRequest{Handle: h, Layer: strings.Repeat("c", MaxServiceLayerName+1)})
			return err
		}(), codes.InvalidArgument, "Layer: layer has 257 bytes; at most 256"},
		{"a layer answer too large", func() error {
			// conv1's output is 4 x 22 values an input.
			b := MaxServiceValues/88 + 1
			_, err := rpc.Layer(ctx, &pb.LayerRequest{Handle: h, Layer: "conv1", X: make([]byte, 4*n*b), Targets: make([]int64, b)})
			return err
		}(), codes.InvalidArgument, "at most 2097152 are (send at most 23831 inputs)"},
	} {
		st, _ := status.FromError(c.err)
		if c.err == nil || st.Code() != c.code || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: got %v, want %s containing %q", c.name, c.err, c.code, c.want)
		}
	}
	if _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: x}); err != nil {
		t.Fatalf("after the rejections: %v", err)
	}
	// The bounds themselves are accepted: windows of width 1 and of the
	// whole input, and the most inputs a request may carry.
	for _, w := range []int64{1, 24} {
		if err := win(func(r *pb.WindowsRequest) { r.Width, r.Starts = w, []int64{0} }); err != nil {
			t.Errorf("width %d: %v", w, err)
		}
	}
	most := MaxServiceBatch(n)
	if most != MaxServiceValues/n {
		t.Fatalf("MaxServiceBatch(%d) = %d; want %d values / %d", n, most, MaxServiceValues, n)
	}
	if _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: make([]byte, 4*n*most)}); err != nil {
		t.Errorf("%d inputs: %v", most, err)
	}
	// More inputs than a request may carry.
	big := make([]byte, 4*n*(most+1))
	if _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: big}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), fmt.Sprintf("x has %d bytes; at most %d are accepted", len(big), 4*MaxServiceValues)) {
		t.Errorf("too many inputs: %v", err)
	}
	// A removed handle is unknown.
	svc.Remove(h)
	if _, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: x}); status.Code(err) != codes.NotFound {
		t.Errorf("removed handle: %v", err)
	}
}

// TestModelServiceLifetime: the socket lives in a private directory that
// Close removes; handles are distinct; nothing is added after Close.
func TestModelServiceLifetime(t *testing.T) {
	_, m := convModel(t, 1)
	svc := NewModelService()
	addr, h1, err := svc.Add(m)
	if err != nil {
		t.Fatal(err)
	}
	addr2, h2, err := svc.Add(m)
	if err != nil || addr2 != addr || h1 == h2 || svc.Len() != 2 {
		t.Fatalf("second Add: %v %q %d %d", err, addr2, h1, h2)
	}
	dir := filepath.Dir(addr)
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v %v", err, st.Mode())
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket directory is still there after Close: %v", err)
	}
	if _, _, err := svc.Add(m); err == nil || svc.Len() != 0 {
		t.Errorf("Add after Close: %v (%d served)", err, svc.Len())
	}
	if err := svc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// probsExplainer asks for the model service and returns each input's
// class probabilities, repeated over the input (or asks for a target out
// of range, with Config "bad" set).
type probsExplainer struct{}

func (probsExplainer) Info() sdk.Info {
	return sdk.Info{ID: "explainer.probs", Version: "1", Needs: sdk.NeedsProbs | sdk.NeedsInputGrad, WantsModel: true}
}
func (probsExplainer) Check(cfg sdk.Config) error { return cfg.Only("bad") }
func (probsExplainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	if _, local := m.(*nn.GraphModel); local {
		return nil, errors.New("got a local model, not the service's")
	}
	n, k := m.InputLen(), m.Classes()
	if _, bad := req.Config["bad"]; bad {
		g := make([]float32, len(req.X))
		if err := m.InputGrad(ctx, g, nil, req.X, slices.Repeat([]int{k}, len(req.Targets))); err != nil {
			return nil, err
		}
	}
	p := make([]float32, len(req.Targets)*k)
	if err := m.Probs(ctx, p, req.X); err != nil {
		return nil, err
	}
	maps := make([][]float64, len(req.Targets))
	for b := range maps {
		maps[b] = make([]float64, n)
		for i := range maps[b] {
			maps[b][i] = float64(p[b*k+i%k])
		}
	}
	return maps, nil
}

// TestWantsModelOverTheWire: an explainer that wants the model service
// gets a service model whose answers are the host's; a failed service call
// is the Explain's error and names the call; the draw is served until its
// release; a host without a service refuses the Load.
func TestWantsModelOverTheWire(t *testing.T) {
	params, m := convModel(t, 2)
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: &testWriter{t}})
	svc := NewModelService()
	defer svc.Close()
	for _, o := range []Options{{Models: svc}, {}} {
		rpc, stop, err := proto.InProcess(probsExplainer{}, PluginSetFor(o), DialOptions(), quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		v, err := rpc.Dispense("explainer")
		if err != nil {
			t.Fatal(err)
		}
		e := v.(Explainer)
		if !e.Info().WantsModel {
			t.Fatal("WantsModel did not cross the wire")
		}
		lm, err := e.Load(context.Background(), sdk.Draw{Params: params})
		if o.Models == nil {
			if err == nil || !strings.Contains(err.Error(), "explainer.probs: Load: the explainer wants the model service (Info.WantsModel), which this host does not serve") {
				t.Errorf("Load without a service: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if svc.Len() != 1 {
			t.Fatalf("%d draws served after a Load, want 1", svc.Len())
		}
		x := inputs(3, m.InputLen(), 6)
		maps, err := lm.Explain(context.Background(), sdk.ExplainRequest{X: x, Targets: []int{0, 1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, 3*m.Classes())
		if err := m.Probs(context.Background(), p, x); err != nil {
			t.Fatal(err)
		}
		for b := range maps {
			for i, v := range maps[b] {
				if v != float64(p[b*m.Classes()+i%m.Classes()]) {
					t.Fatalf("input %d value %d: %v, want the host's probability %v", b, i, v, p[b*m.Classes()+i%m.Classes()])
				}
			}
		}
		_, err = lm.Explain(context.Background(), sdk.ExplainRequest{X: x, Targets: []int{0, 1, 2}, Config: sdk.Config{"bad": true}})
		if err == nil || !strings.Contains(err.Error(), "explainer.probs: Explain: model service: InputGrad: InputGrad: input 0: target class 3 out of range 0..2") || strings.Contains(err.Error(), "panic") {
			t.Errorf("a failed service call: %v", err)
		}
		if _, err := lm.Explain(context.Background(), sdk.ExplainRequest{X: x, Targets: []int{0, 1, 2}}); err != nil {
			t.Errorf("after a failed service call: %v", err)
		}
		if err := lm.Close(); err != nil {
			t.Fatal(err)
		}
		if svc.Len() != 0 {
			t.Errorf("%d draws served after the release, want 0", svc.Len())
		}
	}
}

// ptr returns a pointer to v, for optional proto fields.
func ptr[T any](v T) *T { return &v }
