package driver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ModelService is the host's side of the model service (service Model of
// the protocol): it keeps the networks of the draws loaded into explainers
// that want it (sdk.Info.WantsModel) and answers their batches with sdk/nn,
// in the host process. It listens on a unix socket in a private directory
// (mode 0700) that it creates when the first model is added, and removes
// when it is closed.
//
// Every request is checked before any computation: an unknown handle, a
// batch whose length is not a multiple of the input's, a target out of
// range, an unknown layer or windows outside the input are errors that say
// what would have been accepted, and a batch is bounded (MaxServiceInputs
// inputs, MaxServiceWindows windows), so that no plugin can make the host
// panic or compute without end. Handles are random, so that a plugin
// cannot name another plugin's draws by counting.
//
// Its methods are safe for concurrent use. The zero value is not usable:
// use NewModelService.
type ModelService struct {
	busy   chan struct{} // one token a computation under way
	mu     sync.Mutex
	models map[uint64]nn.Model
	dir    string
	lis    net.Listener
	srv    *grpc.Server
	closed bool
}

// The bounds of one model-service request: the inputs of a batch, and the
// windows of a Windows request (inputs times starts).
const (
	MaxServiceInputs  = 1 << 16
	MaxServiceWindows = 1 << 22
)

// NewModelService returns a model service that serves nothing yet. It
// computes at most GOMAXPROCS requests at a time, whatever the plugins
// send; the others wait for a turn (or for their call to end).
func NewModelService() *ModelService {
	return newModelService(runtime.GOMAXPROCS(0))
}

func newModelService(concurrent int) *ModelService {
	return &ModelService{models: map[uint64]nn.Model{}, busy: make(chan struct{}, max(concurrent, 1))}
}

// Add registers m and returns its handle and the address to call it on,
// starting the server on first use.
func (s *ModelService) Add(m nn.Model) (address string, handle uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", 0, errors.New("the model service is closed")
	}
	if s.srv == nil {
		if err := s.start(); err != nil {
			return "", 0, err
		}
	}
	for {
		var b [8]byte
		rand.Read(b[:]) // never fails (it crashes the program instead, since Go 1.24)
		handle = binary.LittleEndian.Uint64(b[:])
		if _, taken := s.models[handle]; handle != 0 && !taken {
			break
		}
	}
	s.models[handle] = m
	return s.lis.Addr().String(), handle, nil
}

// Remove forgets a handle; requests naming it fail from then on.
func (s *ModelService) Remove(handle uint64) {
	s.mu.Lock()
	delete(s.models, handle)
	s.mu.Unlock()
}

// Len is the number of models served.
func (s *ModelService) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.models)
}

// Close stops the server, ending calls under way, and removes its socket
// directory. Closing twice is a no-op.
func (s *ModelService) Close() error {
	s.mu.Lock()
	srv, dir := s.srv, s.dir
	s.closed, s.srv, s.models = true, nil, map[uint64]nn.Model{}
	s.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
	if dir != "" {
		return os.RemoveAll(dir)
	}
	return nil
}

// start listens on a unix socket in a new private directory and serves.
func (s *ModelService) start() error {
	dir, err := os.MkdirTemp("", "uaxai-models-") // mode 0700
	if err != nil {
		return fmt.Errorf("model service: %w", err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "model.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("model service: %w", err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(proto.MaxMessageSize), grpc.MaxSendMsgSize(proto.MaxMessageSize),
		grpc.UnaryInterceptor(s.intercept))
	pb.RegisterModelServer(srv, &modelServer{s: s})
	go srv.Serve(lis) //nolint:errcheck // Serve returns when Close stops it
	s.dir, s.lis, s.srv = dir, lis, srv
	return nil
}

// intercept runs a handler when a computation slot is free (so that no
// plugin, however many calls it makes at once, keeps more than GOMAXPROCS
// of the host's threads computing), and turns its panic into an Internal
// status: a request the checks let through by mistake must not take the
// host process down (gRPC does not recover handlers' panics).
func (s *ModelService) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	select {
	case s.busy <- struct{}{}:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-s.busy }()
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "model service: %s: panic: %v", info.FullMethod, r)
		}
	}()
	return handler(ctx, req)
}

// model returns the model of a handle.
func (s *ModelService) model(handle uint64) (nn.Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models[handle]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no model with handle %d is served (a handle is valid from the Load that named it until its Release)", handle)
	}
	return m, nil
}

// modelServer answers the protocol's Model service.
type modelServer struct {
	pb.UnimplementedModelServer
	s *ModelService
}

func (v *modelServer) Describe(_ context.Context, r *pb.ModelRef) (*pb.ModelInfo, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	arch, err := wire.Arch(m.Arch())
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &pb.ModelInfo{ArchJson: arch, InputLen: int64(m.InputLen()), Classes: int64(m.Classes()), PooledLen: int64(pooledLen(m))}, nil
}

// batch decodes and checks the inputs of a request: x holds B whole
// inputs, 1 <= B <= MaxServiceInputs, and, if withTargets, one target in
// range per input.
func batch(m nn.Model, method string, xb []byte, targets []int64, withTargets bool) ([]float32, []int, error) {
	n, k := m.InputLen(), m.Classes()
	if len(xb)%4 != 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: x has %d bytes, not a whole number of float32 values", method, len(xb))
	}
	vals := len(xb) / 4
	if vals == 0 || vals%n != 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: x has %d values; want B*%d (B >= 1 inputs of %d values)", method, vals, n, n)
	}
	b := vals / n
	if b > MaxServiceInputs {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: %d inputs in one request; at most %d are accepted (split the batch)", method, b, MaxServiceInputs)
	}
	var t []int
	if withTargets {
		if len(targets) != b {
			return nil, nil, status.Errorf(codes.InvalidArgument, "%s: %d targets for %d inputs; want one per input", method, len(targets), b)
		}
		t = make([]int, b)
		for i, c := range targets {
			if c < 0 || c >= int64(k) {
				return nil, nil, status.Errorf(codes.InvalidArgument, "%s: input %d: target class %d out of range 0..%d", method, i, c, k-1)
			}
			t[i] = int(c)
		}
	} else if len(targets) != 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s takes no targets, got %d", method, len(targets))
	}
	x, err := wire.Float32s(xb)
	if err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: x: %v", method, err)
	}
	if i := nonFinite(x); i >= 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: x: value %d (input %d, sample %d) is %v; inputs must be finite", method, i, i/n, i%n, x[i])
	}
	return x, t, nil
}

// nonFinite is the index of the first NaN or infinity of x, or -1.
func nonFinite(x []float32) int {
	for i, v := range x {
		if v-v != 0 {
			return i
		}
	}
	return -1
}

func (v *modelServer) Probs(_ context.Context, r *pb.ModelBatch) (*pb.ProbsResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	x, _, err := batch(m, "Probs", r.GetX(), r.GetTargets(), false)
	if err != nil {
		return nil, err
	}
	p := make([]float32, len(x)/m.InputLen()*m.Classes())
	m.Probs(p, x)
	return &pb.ProbsResponse{Probs: wire.Float32Bytes(p)}, nil
}

func (v *modelServer) InputGrad(_ context.Context, r *pb.ModelBatch) (*pb.InputGradResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	x, t, err := batch(m, "InputGrad", r.GetX(), r.GetTargets(), true)
	if err != nil {
		return nil, err
	}
	g := make([]float32, len(x))
	p := make([]float32, len(t)*m.Classes())
	m.InputGrad(g, p, x, t)
	return &pb.InputGradResponse{Grad: wire.Float32Bytes(g), Probs: wire.Float32Bytes(p)}, nil
}

func (v *modelServer) Layer(_ context.Context, r *pb.LayerRequest) (*pb.LayerResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	sh, err := m.LayerShape(r.GetLayer())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "Layer: %v", err)
	}
	out := &pb.LayerResponse{Channels: int64(sh.C), Length: int64(sh.T)}
	if len(r.GetX()) == 0 && len(r.GetTargets()) == 0 {
		return out, nil // the shape only
	}
	x, t, err := batch(m, "Layer", r.GetX(), r.GetTargets(), true)
	if err != nil {
		return nil, err
	}
	act := make([]float32, len(t)*sh.Size())
	grad := make([]float32, len(act))
	if err := m.LayerGrad(act, grad, x, t, r.GetLayer()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "Layer: %v", err)
	}
	out.Act, out.Grad = wire.Float32Bytes(act), wire.Float32Bytes(grad)
	return out, nil
}

// The occluded-window probabilities of nn.Inference: WindowProbsCached
// and WindowProbsCachedSignal (with a nil cache, which gives the same bytes
// as a cache would) when the network has a global max pool after a local
// stack, as explainer.occlusion computes in process; else full forward
// passes.
type windowsCached interface {
	PooledLen() int
	WindowProbsCached(dst, x []float32, starts []int, width int, baseline float32, class int, c *nn.TrunkCache) float32
	WindowProbsCachedSignal(dst, x, z []float32, starts []int, width int, class int, c *nn.TrunkCache) float32
}

// pooledLen is m's nn.Inference.PooledLen, or 0.
func pooledLen(m nn.Model) int {
	if w, ok := m.(windowsCached); ok {
		return w.PooledLen()
	}
	return 0
}

func (v *modelServer) Windows(_ context.Context, r *pb.WindowsRequest) (*pb.WindowsResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	x, t, err := batch(m, "Windows", r.GetX(), r.GetTargets(), true)
	if err != nil {
		return nil, err
	}
	n, T := m.InputLen(), m.Arch().InLen
	width := r.GetWidth()
	if width < 1 || width > int64(T) {
		return nil, status.Errorf(codes.InvalidArgument, "Windows: width %d; want 1..%d (the input's samples a channel)", width, T)
	}
	starts := make([]int, len(r.GetStarts()))
	for j, s := range r.GetStarts() {
		if s < 0 || s+width > int64(T) {
			return nil, status.Errorf(codes.InvalidArgument, "Windows: start %d (index %d): a window of width %d must lie in 0..%d", s, j, width, T)
		}
		starts[j] = int(s)
	}
	if len(starts) == 0 {
		return nil, status.Error(codes.InvalidArgument, "Windows: no starts; want at least one window")
	}
	if len(t)*len(starts) > MaxServiceWindows {
		return nil, status.Errorf(codes.InvalidArgument, "Windows: %d inputs x %d windows in one request; at most %d windows are accepted (split the batch)", len(t), len(starts), MaxServiceWindows)
	}
	base := r.GetBaseline()
	if base-base != 0 {
		return nil, status.Errorf(codes.InvalidArgument, "Windows: baseline %v; want a finite number", base)
	}
	var z []float32
	if len(r.GetBaselineX()) > 0 {
		if len(r.GetBaselineX()) != 4*len(x) {
			return nil, status.Errorf(codes.InvalidArgument, "Windows: baseline_x has %d bytes; want one baseline signal per input, %d float32 values (%d bytes)", len(r.GetBaselineX()), len(x), 4*len(x))
		}
		if z, err = wire.Float32s(r.GetBaselineX()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Windows: baseline_x: %v", err)
		}
		if i := nonFinite(z); i >= 0 {
			return nil, status.Errorf(codes.InvalidArgument, "Windows: baseline_x: value %d (input %d, sample %d) is %v; baselines must be finite", i, i/n, i%n, z[i])
		}
	}
	out := make([]float32, len(t)*len(starts))
	p0 := make([]float32, len(t))
	for b, c := range t {
		dst, xb := out[b*len(starts):(b+1)*len(starts)], x[b*n:(b+1)*n]
		var zb []float32
		if z != nil {
			zb = z[b*n : (b+1)*n]
		}
		p0[b] = windowProbs(m, dst, xb, zb, starts, int(width), base, c)
	}
	return &pb.WindowsResponse{Probs: wire.Float32Bytes(out), Unperturbed: wire.Float32Bytes(p0)}, nil
}

// windowProbs writes dst[j] = p_class(x with samples starts[j] ..
// starts[j]+width-1 of every channel replaced by the baseline: z's samples
// if z is not nil, else the constant base), and returns p_class(x) by the
// same computation: the model's incremental path if it has one, else full
// forward passes.
func windowProbs(m nn.Model, dst, x, z []float32, starts []int, width int, base float32, class int) float32 {
	if w, ok := m.(windowsCached); ok && w.PooledLen() > 0 {
		if z != nil {
			return w.WindowProbsCachedSignal(dst, x, z, starts, width, class, nil)
		}
		return w.WindowProbsCached(dst, x, starts, width, base, class, nil)
	}
	nn.WindowProbsOf(m, dst, x, z, starts, width, base, class)
	probs := make([]float32, m.Classes())
	m.Probs(probs, x)
	return probs[class]
}

// spanProber is nn.Inference's SpanProbs.
type spanProber interface {
	SpanProbs(dst, x []float32, spans [][]nn.Span, baseline float32, class int)
}

func (v *modelServer) Spans(_ context.Context, r *pb.SpansRequest) (*pb.SpansResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	if len(r.GetX()) != 4*m.InputLen() {
		return nil, status.Errorf(codes.InvalidArgument, "Spans: x has %d bytes; want one input of %d float32 values (%d bytes)", len(r.GetX()), m.InputLen(), 4*m.InputLen())
	}
	x, t, err := batch(m, "Spans", r.GetX(), []int64{r.GetTarget()}, true)
	if err != nil {
		return nil, err
	}
	spans, err := decodeSpans(r.GetBounds(), r.GetEnds(), m.Arch().InLen)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "Spans: %v", err)
	}
	base := r.GetBaseline()
	if base-base != 0 {
		return nil, status.Errorf(codes.InvalidArgument, "Spans: baseline %v; want a finite number", base)
	}
	out := make([]float32, len(spans))
	if sp, ok := m.(spanProber); ok {
		sp.SpanProbs(out, x, spans, base, t[0])
		return &pb.SpansResponse{Probs: wire.Float32Bytes(out)}, nil
	}
	n, k, T := m.InputLen(), m.Classes(), m.Arch().InLen
	row, p := make([]float32, n), make([]float32, k)
	for j, sp := range spans {
		copy(row, x)
		for _, s := range sp {
			for c := 0; c < n/T; c++ {
				for i := c*T + s.Lo; i < c*T+s.Hi; i++ {
					row[i] = base
				}
			}
		}
		m.Probs(p, row)
		out[j] = p[t[0]]
	}
	return &pb.SpansResponse{Probs: wire.Float32Bytes(out)}, nil
}

// decodeSpans reads the perturbations of a SpansRequest: (lo, hi) pairs
// in bounds, perturbation j the pairs ends[j-1] .. ends[j]-1, each span
// inside [0, T) and after the previous one of its perturbation.
func decodeSpans(bounds, ends []int64, T int) ([][]nn.Span, error) {
	if len(bounds)%2 != 0 {
		return nil, fmt.Errorf("%d bounds; want (lo, hi) pairs", len(bounds))
	}
	if len(ends) == 0 || len(ends) > MaxServiceWindows {
		return nil, fmt.Errorf("%d perturbations; want 1..%d", len(ends), MaxServiceWindows)
	}
	pairs := int64(len(bounds) / 2)
	if ends[len(ends)-1] != pairs {
		return nil, fmt.Errorf("the last end is %d; want the number of (lo, hi) pairs, %d", ends[len(ends)-1], pairs)
	}
	out := make([][]nn.Span, len(ends))
	prev := int64(0)
	for j, e := range ends {
		if e < prev {
			return nil, fmt.Errorf("ends[%d] = %d is less than ends[%d] = %d; want non-decreasing ends", j, e, j-1, prev)
		}
		sp := make([]nn.Span, 0, e-prev)
		for i := prev; i < e; i++ {
			lo, hi := bounds[2*i], bounds[2*i+1]
			if lo < 0 || hi > int64(T) || lo >= hi {
				return nil, fmt.Errorf("perturbation %d: span [%d, %d); want 0 <= lo < hi <= %d", j, lo, hi, T)
			}
			if len(sp) > 0 && lo < int64(sp[len(sp)-1].Hi) {
				return nil, fmt.Errorf("perturbation %d: span [%d, %d) starts before the previous one ends (%d); want spans in order, not overlapping", j, lo, hi, sp[len(sp)-1].Hi)
			}
			sp = append(sp, nn.Span{Lo: int(lo), Hi: int(hi)})
		}
		out[j] = sp
		prev = e
	}
	return out, nil
}
