package sdk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/internal/units"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is the plugin side of the model service: an nn.Model whose
// computations the host does (service Model of the protocol). A Go
// explainer that sets Info.WantsModel gets one in Explain; it computes
// the same values as a local nn.GraphModel, because the host computes with
// sdk/nn too.

// serviceModel is one draw in the host's model service. Its methods have
// no error results (they are nn.Model's): a failed call panics with a
// serviceFailure, which the explainer server turns into the Explain's
// error. ctx bounds every call; withContext gives a copy for one Explain.
//
// A draw that is not an sdk/nn network (a PyTorch module served by the
// Python kit's uaxai_plugin.torchmodel) is described by its shape only:
// Arch() is an nn.Arch with a name, InChannels and InLen and no layers,
// and the layers a Layer request may name come with Describe (layers);
// LayerShape answers from them and refuses any other name without a call.
// Explainers that need only Probs, InputGrad, LayerGrad, WindowProbs and
// SpanProbs run on such a model as on any other; what needs the layers'
// kinds (Grad-CAM's receptive-field alignment) must refuse it.
type serviceModel struct {
	ctx      context.Context
	rpc      pb.ModelClient
	handle   uint64
	arch     nn.Arch
	inputLen int
	classes  int
	layers   []namedShape // Describe's layers, in its order; none for an sdk/nn network
	limit    CallLimit    // each request's deadline
}

// CallLimit bounds each request a client of a model service makes
// (Describe, or one batch of Probs, InputGrad, Layer, Windows or Spans):
// a request with no answer within Timeout fails with a
// *CallTimeoutError. Key names the setting that raises it, for that
// error ("limits.model_call"). A zero Timeout bounds nothing but the
// caller's context.
type CallLimit struct {
	Timeout time.Duration
	Key     string
}

// String is how errors name the limit: "2s (limits.model_call)".
func (l CallLimit) String() string {
	if l.Key == "" {
		return units.FormatDuration(l.Timeout)
	}
	return fmt.Sprintf("%s (%s)", units.FormatDuration(l.Timeout), l.Key)
}

// CallTimeoutError is the error of a model-service request that had no
// answer within its CallLimit (the caller's own context still running):
// the method, what the request carried ("64 inputs", "1 input, 200
// windows") and the limit.
type CallTimeoutError struct {
	Method string
	What   string
	Limit  CallLimit
}

func (e *CallTimeoutError) Error() string {
	return fmt.Sprintf("%s of %s: no answer within %s", e.Method, e.What, e.Limit)
}

// The host hands its CallLimit to an explainer's process in the gRPC
// metadata of Load and Explain (the protocol's messages have no field for
// it): the timeout in whole milliseconds and the key that raises it. An
// explainer's model then bounds each request by it, and a request past
// it is the Explain's error with code DeadlineExceeded.
const (
	CallLimitMetadata    = "uaxai-model-call-ms"
	CallLimitKeyMetadata = "uaxai-model-call-key"
)

// WithCallLimit is ctx with l in its outgoing gRPC metadata (a zero
// limit: ctx).
func WithCallLimit(ctx context.Context, l CallLimit) context.Context {
	if l.Timeout <= 0 {
		return ctx
	}
	ms := max(l.Timeout.Milliseconds(), 1)
	return metadata.AppendToOutgoingContext(ctx, CallLimitMetadata, strconv.FormatInt(ms, 10), CallLimitKeyMetadata, l.Key)
}

// callLimitOf is the CallLimit of an incoming call's metadata (zero if
// none, or not a positive number of milliseconds).
func callLimitOf(ctx context.Context) CallLimit {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(CallLimitMetadata)
	if len(v) == 0 {
		return CallLimit{}
	}
	ms, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || ms <= 0 || ms > int64(math.MaxInt64/time.Millisecond) {
		return CallLimit{}
	}
	l := CallLimit{Timeout: time.Duration(ms) * time.Millisecond}
	if k := md.Get(CallLimitKeyMetadata); len(k) > 0 && len(k[0]) <= 64 {
		l.Key = k[0]
	}
	return l
}

// request runs one request of the service under the model's context and
// its limit; the error is "model service: <method>: <why>", or, past the
// limit, a *CallTimeoutError of the request (what it carried: inputs(),
// windows ...).
func request[R any](m *serviceModel, method string, what func() string, call func(ctx context.Context) (R, error)) (R, error) {
	ctx, cancel := m.ctx, context.CancelFunc(func() {})
	limited := false // the request's deadline is the limit's, not the caller's
	if m.limit.Timeout > 0 {
		ctx, cancel = context.WithTimeout(m.ctx, m.limit.Timeout)
		dl, _ := ctx.Deadline()
		pdl, ok := m.ctx.Deadline()
		limited = !ok || pdl.After(dl)
	}
	defer cancel()
	r, err := call(ctx)
	if err == nil {
		return r, nil
	}
	// The server's own timer of the request's deadline may end it a
	// moment before the client's: its DeadlineExceeded is the limit's too.
	if limited && m.ctx.Err() == nil && (errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded) {
		return r, fmt.Errorf("model service: %w", &CallTimeoutError{Method: method, What: what(), Limit: m.limit})
	}
	if st, ok := status.FromError(err); ok {
		err = fmt.Errorf("%s (%s)", st.Message(), st.Code())
	}
	return r, fmt.Errorf("model service: %s: %w", method, err)
}

// inputs says how many inputs a request carries.
func inputs(n int) func() string {
	return func() string {
		if n == 1 {
			return "1 input"
		}
		return fmt.Sprintf("%d inputs", n)
	}
}

// namedShape is a layer of Describe and its per-input output shape.
type namedShape struct {
	name  string
	shape nn.Shape
}

// serviceFailure is the panic value of a serviceModel call that failed.
type serviceFailure struct{ err error }

func (f serviceFailure) Error() string { return f.err.Error() }

// serviceConns dials each model-service address once per process.
type serviceConns struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func (c *serviceConns) dial(address string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[address]; ok {
		return cc, nil
	}
	cc, err := grpc.NewClient("unix:"+address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(proto.MaxMessageSize), grpc.MaxCallSendMsgSize(proto.MaxMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("model service at %s: %w", address, err)
	}
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	c.conns[address] = cc
	return cc, nil
}

// newServiceModel describes the draw of s at the service.
func newServiceModel(ctx context.Context, conns *serviceConns, s *pb.ModelService, limit CallLimit) (*serviceModel, error) {
	if s.GetAddress() == "" {
		return nil, fmt.Errorf("the model service has no address")
	}
	cc, err := conns.dial(s.GetAddress())
	if err != nil {
		return nil, err
	}
	rpc := pb.NewModelClient(cc)
	m := &serviceModel{ctx: ctx, rpc: rpc, handle: s.GetHandle(), limit: limit}
	info, err := request(m, "Describe", func() string { return fmt.Sprintf("handle %d", s.GetHandle()) }, func(ctx context.Context) (*pb.ModelInfo, error) {
		return rpc.Describe(ctx, &pb.ModelRef{Handle: s.GetHandle()})
	})
	if err != nil {
		return nil, err
	}
	arch, err := wire.DecodeArch(info.GetArchJson())
	if err != nil {
		return nil, fmt.Errorf("model service: Describe: %w", err)
	}
	n, k, pl := info.GetInputLen(), info.GetClasses(), info.GetPooledLen()
	if arch.InChannels < 1 || arch.InLen < 1 || n < 1 || k < 1 || n != int64(arch.InChannels)*int64(arch.InLen) || pl < 0 || pl > 1<<20 {
		return nil, fmt.Errorf("model service: Describe: input length %d, %d classes and pooled length %d do not fit the architecture (%d x %d inputs)", n, k, pl, arch.InChannels, arch.InLen)
	}
	layers, err := describedLayers(info.GetLayers())
	if err != nil {
		return nil, fmt.Errorf("model service: Describe: %w", err)
	}
	m.arch, m.inputLen, m.classes, m.layers = arch, int(n), int(k), layers
	return m, nil
}

// describedLayers checks Describe's layers: named (at most
// proto.MaxServiceLayerName bytes), each once, of C x T >= 1 x 1 values
// that an answer can hold (at most proto.MaxServiceValues).
func describedLayers(ls []*pb.LayerInfo) ([]namedShape, error) {
	out := make([]namedShape, 0, len(ls))
	seen := map[string]bool{}
	for i, l := range ls {
		name, c, t := l.GetName(), l.GetChannels(), l.GetLength()
		switch {
		case name == "" || len(name) > proto.MaxServiceLayerName:
			return nil, fmt.Errorf("layer %d has a name of %d bytes; want 1..%d", i, len(name), proto.MaxServiceLayerName)
		case seen[name]:
			return nil, fmt.Errorf("layer %q is listed twice", name)
		case c < 1 || t < 1 || c*t > proto.MaxServiceValues || c > proto.MaxServiceValues || t > proto.MaxServiceValues:
			return nil, fmt.Errorf("layer %q has shape %d x %d; want channels and length >= 1 and at most %d values", name, c, t, proto.MaxServiceValues)
		}
		seen[name] = true
		out = append(out, namedShape{name, nn.Shape{C: int(c), T: int(t)}})
	}
	return out, nil
}

// DialModel connects to the model service listening on the unix socket
// at address and describes its draw handle: the nn.Model a Go explainer
// that sets Info.WantsModel is handed in Explain, for a tool or a test
// that holds a service's address (any server of service Model: the
// host's, or the Python kit's uaxai_plugin.torchmodel). Every call runs
// under ctx. The model's methods have no error results (they are
// nn.Model's): a failed call panics with an error value, which ModelCall
// turns back into an error. close closes the connection.
func DialModel(ctx context.Context, address string, handle uint64) (m nn.Model, close func() error, err error) {
	var conns serviceConns
	sm, err := newServiceModel(ctx, &conns, &pb.ModelService{Address: address, Handle: handle}, CallLimit{})
	if err != nil {
		for _, cc := range conns.conns {
			cc.Close()
		}
		return nil, nil, err
	}
	return sm, conns.conns[address].Close, nil
}

// ModelCall runs f, which calls a model of DialModel, and returns the
// error of the model-service call that failed in it ("model service:
// <Method>: ..."), or nil. Any other panic goes on.
func ModelCall(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			sf, ok := r.(serviceFailure)
			if !ok {
				panic(r)
			}
			err = sf.err
		}
	}()
	f()
	return nil
}

// withContext is m bounded by ctx.
func (m *serviceModel) withContext(ctx context.Context) *serviceModel {
	c := *m
	c.ctx = ctx
	return &c
}

// withCall is m for one Explain call: bounded by its ctx, each request by
// the CallLimit of its metadata.
func (m *serviceModel) withCall(ctx context.Context) *serviceModel {
	c := m.withContext(ctx)
	c.limit = callLimitOf(ctx)
	return c
}

// fail panics with the failure of a call.
func fail(method string, err error) {
	if st, ok := status.FromError(err); ok {
		err = fmt.Errorf("%s (%s)", st.Message(), st.Code())
	}
	panic(serviceFailure{fmt.Errorf("model service: %s: %w", method, err)})
}

// failed panics with the error of a request (request's).
func failed(err error) { panic(serviceFailure{err}) }

// into decodes little-endian float32 bytes into dst, which must take them
// exactly.
func into(method, what string, dst []float32, b []byte) {
	v, err := wire.Float32s(b)
	if err == nil && len(v) != len(dst) {
		err = fmt.Errorf("%s has %d values, want %d", what, len(v), len(dst))
	}
	if err != nil {
		fail(method, err)
	}
	copy(dst, v)
}

func (m *serviceModel) Arch() nn.Arch { return m.arch }
func (m *serviceModel) InputLen() int { return m.inputLen }
func (m *serviceModel) Classes() int  { return m.classes }
func (m *serviceModel) batch(x []float32) int {
	if len(x)%m.inputLen != 0 {
		panic(fmt.Sprintf("sdk: service model: %d input values are not whole inputs of %d", len(x), m.inputLen))
	}
	return len(x) / m.inputLen
}

// requestBounds are the bounds of the host's service (sdk/internal/proto's)
// that a serviceModel splits its requests by; tests make them smaller.
type requestBounds struct {
	values, inputs, starts, perturbations, pairs int
}

var serviceBounds = requestBounds{
	values: proto.MaxServiceValues, inputs: proto.MaxServiceInputs, starts: proto.MaxServiceStarts,
	perturbations: proto.MaxServicePerturbations, pairs: proto.MaxServicePairs,
}

// perRequest is the most inputs of a request whose answer has per values
// an input besides the probabilities: the service's bounds
// (proto.MaxServiceBatch, proto.MaxServiceValues). An input too long for
// any request fails.
func (m *serviceModel) perRequest(method string, per int) int {
	b := serviceBounds
	most := min(b.inputs, b.values/m.inputLen, b.values/m.classes)
	if per > 0 {
		most = min(most, b.values/per)
	}
	if most < 1 {
		fail(method, fmt.Errorf("an input of %d values (answers of %d) is more than one request may carry (%d values)", m.inputLen, max(per, m.classes), b.values))
	}
	return most
}

// split calls f on the inputs [lo, hi) of a batch of b, at most per at a
// time.
func split(b, per int, f func(lo, hi int)) {
	for lo := 0; lo < b; lo += per {
		f(lo, min(lo+per, b))
	}
}

// Probs writes the softmax probabilities of a batch, as nn.Model.Probs,
// in as many requests as the service's bounds take.
func (m *serviceModel) Probs(dst, x []float32) {
	b, n, k := m.batch(x), m.inputLen, m.classes
	split(b, m.perRequest("Probs", 0), func(lo, hi int) {
		r, err := request(m, "Probs", inputs(hi-lo), func(ctx context.Context) (*pb.ProbsResponse, error) {
			return m.rpc.Probs(ctx, &pb.ModelBatch{Handle: m.handle, X: wire.Float32Bytes(x[lo*n : hi*n])})
		})
		if err != nil {
			failed(err)
		}
		into("Probs", "probs", dst[lo*k:hi*k], r.GetProbs())
	})
}

// InputGrad writes d p_target / d x and, if probs is not nil, the
// probabilities, as nn.Model.InputGrad.
func (m *serviceModel) InputGrad(dst, probs, x []float32, target []int) {
	b, n, k := m.batch(x), m.inputLen, m.classes
	split(b, m.perRequest("InputGrad", n), func(lo, hi int) {
		r, err := request(m, "InputGrad", inputs(hi-lo), func(ctx context.Context) (*pb.InputGradResponse, error) {
			return m.rpc.InputGrad(ctx, &pb.ModelBatch{Handle: m.handle, X: wire.Float32Bytes(x[lo*n : hi*n]), Targets: wire.Int64s(target[lo:hi])})
		})
		if err != nil {
			failed(err)
		}
		into("InputGrad", "grad", dst[lo*n:hi*n], r.GetGrad())
		if probs != nil {
			into("InputGrad", "probs", probs[lo*k:hi*k], r.GetProbs())
		}
	})
}

// LayerShape asks the service for a layer's per-input shape; a model
// that Describe gave layers answers from them.
func (m *serviceModel) LayerShape(layer string) (nn.Shape, error) {
	if len(m.layers) > 0 {
		for _, l := range m.layers {
			if l.name == layer {
				return l.shape, nil
			}
		}
		names := make([]string, len(m.layers))
		for i, l := range m.layers {
			names[i] = fmt.Sprintf("%q (%d x %d)", l.name, l.shape.C, l.shape.T)
		}
		return nn.Shape{}, fmt.Errorf("model %q has no layer %q (accepted: %s)", m.arch.Name, layer, strings.Join(names, ", "))
	}
	r, err := request(m, "Layer", func() string { return fmt.Sprintf("layer %q's shape", layer) }, func(ctx context.Context) (*pb.LayerResponse, error) {
		return m.rpc.Layer(ctx, &pb.LayerRequest{Handle: m.handle, Layer: layer})
	})
	if err != nil {
		return nn.Shape{}, err
	}
	if r.GetChannels() < 1 || r.GetLength() < 1 {
		return nn.Shape{}, fmt.Errorf("model service: Layer %q: shape %d x %d", layer, r.GetChannels(), r.GetLength())
	}
	return nn.Shape{C: int(r.GetChannels()), T: int(r.GetLength())}, nil
}

// LayerGrad writes a layer's output and d p_target / d output, as
// nn.Model.LayerGrad, in as many requests as the service's bounds take.
func (m *serviceModel) LayerGrad(act, grad, x []float32, target []int, layer string) error {
	b, n := m.batch(x), m.inputLen
	if b == 0 {
		return nil
	}
	sh, err := m.LayerShape(layer)
	if err != nil {
		return err
	}
	sz := sh.Size()
	if len(act) < b*sz || len(grad) < b*sz {
		return fmt.Errorf("layer %q: want act and grad of %d values, got %d and %d", layer, b*sz, len(act), len(grad))
	}
	if len(target) != b {
		return fmt.Errorf("layer %q: %d targets for %d inputs; want one an input", layer, len(target), b)
	}
	split(b, m.perRequest("Layer", sz), func(lo, hi int) {
		if err != nil {
			return
		}
		var r *pb.LayerResponse
		r, err = request(m, "Layer", func() string { return fmt.Sprintf("%s at layer %q", inputs(hi-lo)(), layer) }, func(ctx context.Context) (*pb.LayerResponse, error) {
			return m.rpc.Layer(ctx, &pb.LayerRequest{Handle: m.handle, Layer: layer, X: wire.Float32Bytes(x[lo*n : hi*n]), Targets: wire.Int64s(target[lo:hi])})
		})
		if err != nil {
			return
		}
		if r.GetChannels() != int64(sh.C) || r.GetLength() != int64(sh.T) {
			err = fmt.Errorf("model service: Layer %q: shape %d x %d, then %d x %d", layer, sh.C, sh.T, r.GetChannels(), r.GetLength())
			return
		}
		into("Layer", "act", act[lo*sz:hi*sz], r.GetAct())
		into("Layer", "grad", grad[lo*sz:hi*sz], r.GetGrad())
	})
	return err
}

// WindowProbs writes the probabilities of occluded copies of x (see
// nn.GraphModel.WindowProbs), computed by the service's fast path.
func (m *serviceModel) WindowProbs(dst, x []float32, starts []int, width int, baseline float32, class int) {
	m.windows(dst, x, nil, starts, width, baseline, class)
}

// WindowProbsSignal is WindowProbs with a baseline signal z (see
// nn.GraphModel.WindowProbsSignal).
func (m *serviceModel) WindowProbsSignal(dst, x, z []float32, starts []int, width int, class int) {
	m.windows(dst, x, z, starts, width, 0, class)
}

// windows asks the service for the window probabilities of one input.
func (m *serviceModel) windows(dst, x, z []float32, starts []int, width int, baseline float32, class int) {
	if len(x) != m.inputLen || len(dst) < len(starts) {
		panic("sdk: service model: WindowProbs needs one input and a dst per window")
	}
	if len(starts) == 0 { // the service wants a window
		return
	}
	split(len(starts), serviceBounds.starts, func(lo, hi int) {
		r, err := request(m, "Windows", func() string { return fmt.Sprintf("1 input, %d windows", hi-lo) }, func(ctx context.Context) (*pb.WindowsResponse, error) {
			return m.rpc.Windows(ctx, &pb.WindowsRequest{
				Handle: m.handle, X: wire.Float32Bytes(x), Targets: []int64{int64(class)},
				Starts: wire.Int64s(starts[lo:hi]), Width: int64(width), Baseline: baseline, BaselineX: wire.Float32Bytes(z),
			})
		})
		if err != nil {
			failed(err)
		}
		into("Windows", "probs", dst[lo:hi], r.GetProbs())
	})
}

// SpanProbs writes the probabilities of copies of x with sets of spans set
// to a baseline (see nn.GraphModel.SpanProbs), computed by the service.
func (m *serviceModel) SpanProbs(dst, x []float32, spans [][]nn.Span, baseline float32, class int) {
	spanRequests(m, "SpanProbs", dst, x, spans, baseline, class, false, func(s nn.Span) (int, int, int) { return s.Lo, s.Hi, nn.AllChannels })
}

// ChannelSpanProbs writes the probabilities of copies of x with spans of
// single channels set to a baseline (see nn.GraphModel.ChannelSpanProbs),
// computed by the service (the channels of SpansRequest).
func (m *serviceModel) ChannelSpanProbs(dst, x []float32, spans [][]nn.ChannelSpan, baseline float32, class int) {
	spanRequests(m, "ChannelSpanProbs", dst, x, spans, baseline, class, true, func(s nn.ChannelSpan) (int, int, int) { return s.Lo, s.Hi, s.Ch })
}

// spanRequests sends the perturbations spans of x to the service's Spans
// in as many requests as its bounds take, each span as enc's (lo, hi,
// channel), the channels only when withChannels.
func spanRequests[S any](m *serviceModel, method string, dst, x []float32, spans [][]S, baseline float32, class int, withChannels bool, enc func(S) (lo, hi, ch int)) {
	if len(x) != m.inputLen || len(dst) < len(spans) {
		panic("sdk: service model: " + method + " needs one input and a dst per perturbed input")
	}
	if len(spans) == 0 {
		return
	}
	for lo := 0; lo < len(spans); {
		// As many perturbations as the service's bounds let one request
		// carry, and at least one.
		var bounds, ends, channels []int64
		hi := lo
		for hi < len(spans) && len(ends) < serviceBounds.perturbations &&
			(hi == lo || len(bounds)/2+len(spans[hi]) <= serviceBounds.pairs) {
			for _, s := range spans[hi] {
				a, b, c := enc(s)
				bounds = append(bounds, int64(a), int64(b))
				if withChannels {
					channels = append(channels, int64(c))
				}
			}
			ends = append(ends, int64(len(bounds)/2))
			hi++
		}
		r, err := request(m, "Spans", func() string { return fmt.Sprintf("1 input, %d perturbations", len(ends)) }, func(ctx context.Context) (*pb.SpansResponse, error) {
			return m.rpc.Spans(ctx, &pb.SpansRequest{Handle: m.handle, X: wire.Float32Bytes(x), Target: int64(class), Bounds: bounds, Ends: ends, Baseline: baseline, Channels: channels})
		})
		if err != nil {
			failed(err)
		}
		into("Spans", "probs", dst[lo:hi], r.GetProbs())
		lo = hi
	}
}
