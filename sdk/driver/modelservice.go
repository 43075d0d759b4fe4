package driver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	gproto "google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/sdk/internal/pb"
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
// what would have been accepted, and a batch is bounded (the MaxService
// constants), so that no plugin can make the host panic or compute without
// end. Handles are random, so that a plugin cannot name another plugin's
// draws by counting.
//
// The host's memory is bounded whatever the plugins send. A request is
// admitted (one of GOMAXPROCS turns) before a byte of its message is read;
// it is received whole only up to MaxServiceMessage bytes, and its fields
// are counted on the wire before it is decoded (checkRaw), so that an
// admitted request holds at most a few times MaxServiceMessage. A request
// waiting for a turn holds its call's flow-control window (serviceWindow)
// in the transport; a connection has at most maxServiceStreams calls open
// and the service at most MaxServiceConnections connections. A handler
// that panics anyway answers Internal; it does not take the host down.
//
// Its methods are safe for concurrent use. The zero value is not usable:
// use NewModelService.
type ModelService struct {
	busy   chan struct{} // one token a computation under way
	mu     sync.Mutex
	models map[uint64]nn.Model
	dir    string
	in     string // NewModelServiceIn's directory: the socket goes there
	lis    net.Listener
	srv    *grpc.Server
	closed bool
}

// NewModelService returns a model service that serves nothing yet. It
// computes at most GOMAXPROCS requests at a time, whatever the plugins
// send; the others wait for a turn (or for their call to end).
func NewModelService() *ModelService {
	return newModelService(runtime.GOMAXPROCS(0))
}

// NewModelServiceIn is NewModelService listening on a socket of its own
// directly inside dir, which it neither makes nor removes (Close removes
// the socket): the service of a posterior plugin that serves its draws,
// in the SampleRequest's SocketDir.
func NewModelServiceIn(dir string) *ModelService {
	s := NewModelService()
	s.in = dir
	return s
}

// DrawDir makes a new private directory (mode 0700) for the sockets of a
// posterior that serves its draws (sdk.SampleRequest.SocketDir), inside
// the service's own directory, which Close removes (and a later host, if
// this one was killed), so that the plugin's sockets go with it. The
// service starts if it has not yet.
func (s *ModelService) DrawDir() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("the model service is closed")
	}
	if s.srv == nil {
		if err := s.start(); err != nil {
			return "", err
		}
	}
	d, err := os.MkdirTemp(s.dir, "draws-")
	if err != nil {
		return "", fmt.Errorf("model service: a directory for served draws: %w", err)
	}
	return d, nil
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
	if dir != "" && s.in != "" { // the socket, which the listener's Close may have removed
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if dir != "" {
		return os.RemoveAll(dir)
	}
	return nil
}

// maxSocketPath is the longest unix socket path Linux binds (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// start listens on a unix socket in a new private directory and serves.
// The directory's name carries the host's process ID, so that a later
// host can remove what a killed one left (removeStale).
func (s *ModelService) start() error {
	if s.in != "" {
		return s.startIn()
	}
	tmp := os.TempDir()
	removeStale(tmp)
	prefix := fmt.Sprintf("uaxai-models-%d-", os.Getpid())
	// MkdirTemp appends up to 10 digits.
	if n := len(filepath.Join(tmp, prefix+"0123456789", "model.sock")); n > maxSocketPath {
		return fmt.Errorf("model service: the socket path under the temporary directory %s would be %d bytes; unix socket paths must fit in %d: set TMPDIR to a shorter directory", tmp, n, maxSocketPath)
	}
	dir, err := os.MkdirTemp(tmp, prefix) // mode 0700
	if err != nil {
		return fmt.Errorf("model service: %w", err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "model.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("model service: %w", err)
	}
	s.serve(lis)
	s.dir = dir
	return nil
}

// startIn listens on a new socket directly inside s.in and serves; s.dir
// is then the socket, which Close removes.
func (s *ModelService) startIn() error {
	var b [8]byte
	rand.Read(b[:])
	path := filepath.Join(s.in, fmt.Sprintf("model-%x.sock", b))
	if len(path) > maxSocketPath {
		return fmt.Errorf("model service: the socket path %s is %d bytes; unix socket paths must fit in %d", path, len(path), maxSocketPath)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("model service: %w", err)
	}
	s.serve(lis)
	s.dir = path
	return nil
}

// serve serves the Model service on lis.
func (s *ModelService) serve(lis net.Listener) {
	srv := grpc.NewServer(
		grpc.MaxRecvMsgSize(MaxServiceMessage), grpc.MaxSendMsgSize(MaxServiceMessage),
		grpc.ForceServerCodecV2(newServiceCodec()),
		grpc.MaxConcurrentStreams(maxServiceStreams),
		grpc.StaticStreamWindowSize(serviceWindow), grpc.StaticConnWindowSize(serviceWindow),
	)
	srv.RegisterService(&modelServiceDesc, &modelServer{s: s})
	go srv.Serve(&limitListener{Listener: lis, slots: make(chan struct{}, MaxServiceConnections)}) //nolint:errcheck // Serve returns when Close stops it
	s.lis, s.srv = lis, srv
}

// A method of the service: the limits of its request's fields and its
// answer, given the request's checked bytes.
type serviceMethod struct {
	name   string
	limits []fieldLimit
	answer func(v *modelServer, ctx context.Context, raw []byte) (any, error)
}

// method adapts a modelServer method to a serviceMethod: it decodes the
// request of type R.
func method[R any, PR interface {
	*R
	gproto.Message
}, A any](name string, limits []fieldLimit, f func(*modelServer, context.Context, PR) (A, error)) serviceMethod {
	return serviceMethod{name: name, limits: limits, answer: func(v *modelServer, ctx context.Context, raw []byte) (any, error) {
		req := PR(new(R))
		if err := gproto.Unmarshal(raw, req); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: malformed request: %v", name, err)
		}
		return f(v, ctx, req)
	}}
}

var serviceMethods = []serviceMethod{
	method("Describe", nil, (*modelServer).Describe),
	method("Probs", batchLimits, (*modelServer).Probs),
	method("InputGrad", batchLimits, (*modelServer).InputGrad),
	method("Layer", layerLimits, (*modelServer).Layer),
	method("Windows", windowsLimits, (*modelServer).Windows),
	method("Spans", spansLimits, (*modelServer).Spans),
}

// modelServiceDesc is pb.Model_ServiceDesc with the service's own
// handlers: the generated ones decode a request before anything else can
// run, and these take a turn first, then check the request's bytes.
var modelServiceDesc = func() grpc.ServiceDesc {
	d := grpc.ServiceDesc{ServiceName: pb.Model_ServiceDesc.ServiceName, HandlerType: (*any)(nil), Metadata: pb.Model_ServiceDesc.Metadata}
	for _, m := range serviceMethods {
		d.Methods = append(d.Methods, grpc.MethodDesc{MethodName: m.name, Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			return srv.(*modelServer).serve(ctx, m, dec)
		}})
	}
	return d
}()

// serve answers one request when a turn is free (so that no plugin,
// however many calls it makes at once, keeps more than GOMAXPROCS of the
// host's threads, or their requests' memory, busy), and turns a panic
// into an Internal status: a request the checks let through by mistake
// must not take the host process down (gRPC does not recover handlers'
// panics).
func (v *modelServer) serve(ctx context.Context, m serviceMethod, dec func(any) error) (resp any, err error) {
	s := v.s
	select {
	case s.busy <- struct{}{}:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-s.busy }()
	full := "/" + pb.Model_ServiceDesc.ServiceName + "/" + m.name
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "model service: %s: panic: %v", full, r)
		}
	}()
	var raw rawRequest
	if err := dec(&raw); err != nil {
		return nil, err
	}
	if err := checkRaw(m.name, raw, m.limits); err != nil {
		return nil, err
	}
	return m.answer(v, ctx, raw)
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
	return &pb.ModelInfo{ArchJson: arch, InputLen: int64(m.InputLen()), Classes: int64(m.Classes())}, nil
}

// batch decodes and checks the inputs of a request: x holds B whole
// inputs, 1 <= B <= MaxServiceBatch(InputLen), whose probabilities fit an
// answer (B * Classes <= MaxServiceValues), and, if withTargets, one
// target in range per input.
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
	if most := MaxServiceBatch(n); b > most {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: %d inputs of %d values in one request; at most %d are accepted (split the batch)", method, b, n, most)
	}
	if b*k > MaxServiceValues {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: %d inputs of %d classes would answer %d probabilities; at most %d are (send at most %d inputs)", method, b, k, b*k, MaxServiceValues, MaxServiceValues/k)
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

// computeStatus is the status of a model's computation that failed: the
// request's context's end, or Internal (the request was checked, so the
// model failed), naming the method.
func computeStatus(method string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.Errorf(status.FromContextError(err).Code(), "%s: %v", method, err)
	}
	return status.Errorf(codes.Internal, "%s: %v", method, err)
}

func (v *modelServer) Probs(ctx context.Context, r *pb.ModelBatch) (*pb.ProbsResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	x, _, err := batch(m, "Probs", r.GetX(), r.GetTargets(), false)
	if err != nil {
		return nil, err
	}
	p := make([]float32, len(x)/m.InputLen()*m.Classes())
	if err := m.Probs(ctx, p, x); err != nil {
		return nil, computeStatus("Probs", err)
	}
	return &pb.ProbsResponse{Probs: wire.Float32Bytes(p)}, nil
}

func (v *modelServer) InputGrad(ctx context.Context, r *pb.ModelBatch) (*pb.InputGradResponse, error) {
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
	if err := m.InputGrad(ctx, g, p, x, t); err != nil {
		return nil, computeStatus("InputGrad", err)
	}
	return &pb.InputGradResponse{Grad: wire.Float32Bytes(g), Probs: wire.Float32Bytes(p)}, nil
}

func (v *modelServer) Layer(ctx context.Context, r *pb.LayerRequest) (*pb.LayerResponse, error) {
	m, err := v.s.model(r.GetHandle())
	if err != nil {
		return nil, err
	}
	sh, err := m.LayerShape(ctx, r.GetLayer())
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
	if len(t)*sh.Size() > MaxServiceValues {
		return nil, status.Errorf(codes.InvalidArgument, "Layer: %d inputs of layer %q (%d x %d values each) would answer %d values; at most %d are (send at most %d inputs)", len(t), r.GetLayer(), sh.C, sh.T, len(t)*sh.Size(), MaxServiceValues, max(MaxServiceValues/sh.Size(), 1))
	}
	act := make([]float32, len(t)*sh.Size())
	grad := make([]float32, len(act))
	if err := m.LayerGrad(ctx, act, grad, x, t, r.GetLayer()); err != nil {
		if ctx.Err() != nil {
			return nil, computeStatus("Layer", err)
		}
		return nil, status.Errorf(codes.InvalidArgument, "Layer: %v", err)
	}
	out.Act, out.Grad = wire.Float32Bytes(act), wire.Float32Bytes(grad)
	return out, nil
}

// pooledLen is the length of the global max pool's output of m's
// network (the trunk plan's pooled vector), or 0: Describe's pooled_len.
func pooledLen(m nn.Model) int {
	if w, ok := m.(interface{ PooledLen() int }); ok {
		return w.PooledLen()
	}
	return 0
}

func (v *modelServer) Windows(ctx context.Context, r *pb.WindowsRequest) (*pb.WindowsResponse, error) {
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
	ns := len(r.GetStarts())
	if ns == 0 {
		return nil, status.Error(codes.InvalidArgument, "Windows: no starts; want at least one window")
	}
	if len(t)*ns > MaxServiceWindows {
		return nil, status.Errorf(codes.InvalidArgument, "Windows: %d inputs x %d windows in one request; at most %d windows are accepted (split the batch)", len(t), ns, MaxServiceWindows)
	}
	starts := make([]int, ns)
	for j, s := range r.GetStarts() {
		if s < 0 || s+width > int64(T) {
			return nil, status.Errorf(codes.InvalidArgument, "Windows: start %d (index %d): a window of width %d must lie in 0..%d", s, j, width, T)
		}
		starts[j] = int(s)
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
	ch := nn.AllChannels
	if r.Channel != nil {
		C := m.Arch().InChannels
		if v := r.GetChannel(); v < 0 || v >= int64(C) {
			return nil, status.Errorf(codes.InvalidArgument, "Windows: channel %d; want 0..%d (the input's channels), or none for every channel", v, C-1)
		}
		ch = int(r.GetChannel())
	}
	out := make([]float32, len(t)*len(starts))
	p0 := make([]float32, len(t))
	dst := make([]float32, len(starts)+1) // the windows', then the input's
	for b, c := range t {
		req := nn.Perturbation{X: x[b*n : (b+1)*n], Class: c, Baseline: base, Starts: starts, Width: int(width), Channel: ch, Unperturbed: true}
		if z != nil {
			req.Signal = z[b*n : (b+1)*n]
		}
		if err := nn.Perturbed(ctx, m, req, dst); err != nil {
			return nil, computeStatus(fmt.Sprintf("Windows: input %d", b), err)
		}
		copy(out[b*len(starts):], dst[:len(starts)])
		p0[b] = dst[len(starts)]
	}
	return &pb.WindowsResponse{Probs: wire.Float32Bytes(out), Unperturbed: wire.Float32Bytes(p0)}, nil
}

func (v *modelServer) Spans(ctx context.Context, r *pb.SpansRequest) (*pb.SpansResponse, error) {
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
	base := r.GetBaseline()
	var spans [][]nn.ChannelSpan
	if len(r.GetChannels()) > 0 {
		spans, err = decodeChannelSpans(r.GetBounds(), r.GetEnds(), r.GetChannels(), m.Arch().InChannels, m.Arch().InLen)
	} else {
		spans, err = decodeSpans(r.GetBounds(), r.GetEnds(), m.Arch().InLen)
	}
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "Spans: %v", err)
	}
	if base-base != 0 {
		return nil, status.Errorf(codes.InvalidArgument, "Spans: baseline %v; want a finite number", base)
	}
	out := make([]float32, len(spans))
	if err := nn.Perturbed(ctx, m, nn.Perturbation{X: x, Class: t[0], Baseline: base, Spans: spans, Channel: nn.AllChannels}, out); err != nil {
		return nil, computeStatus("Spans", err)
	}
	return &pb.SpansResponse{Probs: wire.Float32Bytes(out)}, nil
}

// decodeChannelSpans reads the perturbations of a SpansRequest with
// channels: as decodeSpans, span i of channel channels[i] (-1: every
// channel, else 0..C-1), the spans of a perturbation in any order.
func decodeChannelSpans(bounds, ends, channels []int64, C, T int) ([][]nn.ChannelSpan, error) {
	if len(bounds)%2 != 0 {
		return nil, fmt.Errorf("%d bounds; want (lo, hi) pairs", len(bounds))
	}
	if len(bounds) > 2*MaxServicePairs {
		return nil, fmt.Errorf("%d (lo, hi) pairs; at most %d are accepted", len(bounds)/2, MaxServicePairs)
	}
	if len(channels) != len(bounds)/2 {
		return nil, fmt.Errorf("%d channels for %d (lo, hi) pairs; want one a pair, or none (every span covers every channel)", len(channels), len(bounds)/2)
	}
	if err := checkEnds(ends, int64(len(bounds)/2)); err != nil {
		return nil, err
	}
	out := make([][]nn.ChannelSpan, len(ends))
	prev := int64(0)
	for j, e := range ends {
		sp := make([]nn.ChannelSpan, 0, e-prev)
		for i := prev; i < e; i++ {
			lo, hi, ch := bounds[2*i], bounds[2*i+1], channels[i]
			if lo < 0 || hi > int64(T) || lo >= hi {
				return nil, fmt.Errorf("perturbation %d: span [%d, %d); want 0 <= lo < hi <= %d", j, lo, hi, T)
			}
			if ch < -1 || ch >= int64(C) {
				return nil, fmt.Errorf("perturbation %d: span [%d, %d) of channel %d; want -1 (every channel) or 0..%d", j, lo, hi, ch, C-1)
			}
			sp = append(sp, nn.ChannelSpan{Ch: int(ch), Lo: int(lo), Hi: int(hi)})
		}
		out[j] = sp
		prev = e
	}
	return out, nil
}

// checkEnds checks the ends of a SpansRequest against its number of
// (lo, hi) pairs.
func checkEnds(ends []int64, pairs int64) error {
	if len(ends) == 0 || len(ends) > MaxServicePerturbations {
		return fmt.Errorf("%d perturbations; want 1..%d", len(ends), MaxServicePerturbations)
	}
	if ends[len(ends)-1] != pairs {
		return fmt.Errorf("the last end is %d; want the number of (lo, hi) pairs, %d", ends[len(ends)-1], pairs)
	}
	for j := 1; j < len(ends); j++ {
		if ends[j] < ends[j-1] {
			return fmt.Errorf("ends[%d] = %d is less than ends[%d] = %d; want non-decreasing ends", j, ends[j], j-1, ends[j-1])
		}
	}
	return nil
}

// decodeSpans reads the perturbations of a SpansRequest: (lo, hi) pairs
// in bounds, perturbation j the pairs ends[j-1] .. ends[j]-1, each span
// inside [0, T) and after the previous one of its perturbation.
func decodeSpans(bounds, ends []int64, T int) ([][]nn.ChannelSpan, error) {
	if len(bounds)%2 != 0 {
		return nil, fmt.Errorf("%d bounds; want (lo, hi) pairs", len(bounds))
	}
	if len(ends) == 0 || len(ends) > MaxServicePerturbations {
		return nil, fmt.Errorf("%d perturbations; want 1..%d", len(ends), MaxServicePerturbations)
	}
	if len(bounds) > 2*MaxServicePairs {
		return nil, fmt.Errorf("%d (lo, hi) pairs; at most %d are accepted", len(bounds)/2, MaxServicePairs)
	}
	pairs := int64(len(bounds) / 2)
	if ends[len(ends)-1] != pairs {
		return nil, fmt.Errorf("the last end is %d; want the number of (lo, hi) pairs, %d", ends[len(ends)-1], pairs)
	}
	out := make([][]nn.ChannelSpan, len(ends))
	prev := int64(0)
	for j, e := range ends {
		if e < prev {
			return nil, fmt.Errorf("ends[%d] = %d is less than ends[%d] = %d; want non-decreasing ends", j, e, j-1, prev)
		}
		sp := make([]nn.ChannelSpan, 0, e-prev)
		for i := prev; i < e; i++ {
			lo, hi := bounds[2*i], bounds[2*i+1]
			if lo < 0 || hi > int64(T) || lo >= hi {
				return nil, fmt.Errorf("perturbation %d: span [%d, %d); want 0 <= lo < hi <= %d", j, lo, hi, T)
			}
			if len(sp) > 0 && lo < int64(sp[len(sp)-1].Hi) {
				return nil, fmt.Errorf("perturbation %d: span [%d, %d) starts before the previous one ends (%d); want spans in order, not overlapping", j, lo, hi, sp[len(sp)-1].Hi)
			}
			sp = append(sp, nn.ChannelSpan{Ch: nn.AllChannels, Lo: int(lo), Hi: int(hi)})
		}
		out[j] = sp
		prev = e
	}
	return out, nil
}
