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

// serviceModel is one draw in the host's model service. A failed request
// is the error of the call that made it ("model service: <Method>: ..."),
// and each call's ctx bounds its requests; withCall gives a copy whose
// requests have the CallLimit of one Explain.
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

// request runs one request of the service under the caller's ctx and the
// model's limit; the error is "model service: <method>: <why>" (the
// caller's ctx.Err() wrapped when it ended), or, past the limit, a
// *CallTimeoutError of the request (what it carried: inputs(), windows
// ...).
func request[R any](ctx context.Context, m *serviceModel, method string, what func() string, call func(ctx context.Context) (R, error)) (R, error) {
	if err := ctx.Err(); err != nil {
		var zero R
		return zero, fmt.Errorf("model service: %s: %w", method, err)
	}
	parent := ctx
	cancel := context.CancelFunc(func() {})
	limited := false // the request's deadline is the limit's, not the caller's
	if m.limit.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, m.limit.Timeout)
		dl, _ := ctx.Deadline()
		pdl, ok := parent.Deadline()
		limited = !ok || pdl.After(dl)
	}
	defer cancel()
	r, err := call(ctx)
	if err == nil {
		return r, nil
	}
	if perr := parent.Err(); perr != nil {
		return r, fmt.Errorf("model service: %s: %w (%s)", method, perr, status.Code(err))
	}
	// The server's own timer of the request's deadline may end it a
	// moment before the client's: its DeadlineExceeded is the limit's too.
	if limited && (errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded) {
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
	m := &serviceModel{rpc: rpc, handle: s.GetHandle(), limit: limit}
	info, err := request(ctx, m, "Describe", func() string { return fmt.Sprintf("handle %d", s.GetHandle()) }, func(ctx context.Context) (*pb.ModelInfo, error) {
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
// host's, or the Python kit's uaxai_plugin.torchmodel). ctx bounds the
// Describe; each call of the model runs under its own ctx, and a failed
// request is its error. close closes the connection.
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

// withCall is m for one Explain call: bounded by its ctx, each request by
// the CallLimit of its metadata.
func (m *serviceModel) withCall(ctx context.Context) *serviceModel {
	c := *m
	c.limit = callLimitOf(ctx)
	return &c
}

// into decodes little-endian float32 bytes of an answer to method into
// dst, which must take them exactly.
func into(method, what string, dst []float32, b []byte) error {
	v, err := wire.Float32s(b)
	if err == nil && len(v) != len(dst) {
		err = fmt.Errorf("%s has %d values, want %d", what, len(v), len(dst))
	}
	if err != nil {
		return fmt.Errorf("model service: %s: %w", method, err)
	}
	copy(dst, v)
	return nil
}

func (m *serviceModel) Arch() nn.Arch { return m.arch }
func (m *serviceModel) InputLen() int { return m.inputLen }
func (m *serviceModel) Classes() int  { return m.classes }
func (m *serviceModel) batch(method string, x []float32) (int, error) {
	if len(x)%m.inputLen != 0 {
		return 0, fmt.Errorf("model service: %s: %d input values are not whole inputs of %d", method, len(x), m.inputLen)
	}
	return len(x) / m.inputLen, nil
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
func (m *serviceModel) perRequest(method string, per int) (int, error) {
	b := serviceBounds
	most := min(b.inputs, b.values/m.inputLen, b.values/m.classes)
	if per > 0 {
		most = min(most, b.values/per)
	}
	if most < 1 {
		return 0, fmt.Errorf("model service: %s: an input of %d values (answers of %d) is more than one request may carry (%d values)", method, m.inputLen, max(per, m.classes), b.values)
	}
	return most, nil
}

// split calls f on the inputs [lo, hi) of a batch of b, at most per at a
// time, and stops at f's first error.
func split(b, per int, f func(lo, hi int) error) error {
	for lo := 0; lo < b; lo += per {
		if err := f(lo, min(lo+per, b)); err != nil {
			return err
		}
	}
	return nil
}

// Probs writes the softmax probabilities of a batch, as nn.Model.Probs,
// in as many requests as the service's bounds take.
func (m *serviceModel) Probs(ctx context.Context, dst, x []float32) error {
	b, err := m.batch("Probs", x)
	if err != nil {
		return err
	}
	n, k := m.inputLen, m.classes
	if len(dst) != b*k {
		return fmt.Errorf("model service: Probs: %d values for the probabilities of %d inputs; want %d", len(dst), b, b*k)
	}
	per, err := m.perRequest("Probs", 0)
	if err != nil {
		return err
	}
	return split(b, per, func(lo, hi int) error {
		r, err := request(ctx, m, "Probs", inputs(hi-lo), func(ctx context.Context) (*pb.ProbsResponse, error) {
			return m.rpc.Probs(ctx, &pb.ModelBatch{Handle: m.handle, X: wire.Float32Bytes(x[lo*n : hi*n])})
		})
		if err != nil {
			return err
		}
		return into("Probs", "probs", dst[lo*k:hi*k], r.GetProbs())
	})
}

// InputGrad writes d p_target / d x and, if probs is not nil, the
// probabilities, as nn.Model.InputGrad.
func (m *serviceModel) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	b, err := m.batch("InputGrad", x)
	if err != nil {
		return err
	}
	n, k := m.inputLen, m.classes
	if len(target) != b || len(dst) != len(x) || probs != nil && len(probs) != b*k {
		return fmt.Errorf("model service: InputGrad: %d targets, %d gradient values and %d probabilities for %d inputs; want %d, %d and %d (or no probabilities)", len(target), len(dst), len(probs), b, b, len(x), b*k)
	}
	per, err := m.perRequest("InputGrad", n)
	if err != nil {
		return err
	}
	return split(b, per, func(lo, hi int) error {
		r, err := request(ctx, m, "InputGrad", inputs(hi-lo), func(ctx context.Context) (*pb.InputGradResponse, error) {
			return m.rpc.InputGrad(ctx, &pb.ModelBatch{Handle: m.handle, X: wire.Float32Bytes(x[lo*n : hi*n]), Targets: wire.Int64s(target[lo:hi])})
		})
		if err != nil {
			return err
		}
		if err := into("InputGrad", "grad", dst[lo*n:hi*n], r.GetGrad()); err != nil {
			return err
		}
		if probs != nil {
			return into("InputGrad", "probs", probs[lo*k:hi*k], r.GetProbs())
		}
		return nil
	})
}

// LayerShape asks the service for a layer's per-input shape; a model
// that Describe gave layers answers from them.
func (m *serviceModel) LayerShape(ctx context.Context, layer string) (nn.Shape, error) {
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
	r, err := request(ctx, m, "Layer", func() string { return fmt.Sprintf("layer %q's shape", layer) }, func(ctx context.Context) (*pb.LayerResponse, error) {
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

// FeatureLen is the size of the service's penultimate features: its
// layer nn.PenultimateLayer, which a PyTorch model's service gives when
// the class scores come from a linear layer (the layer's input).
func (m *serviceModel) FeatureLen() (int, error) {
	for _, l := range m.layers {
		if l.name == nn.PenultimateLayer {
			return l.shape.Size(), nil
		}
	}
	return 0, fmt.Errorf("model %q: its service gives no penultimate features (no layer %q: the class scores do not come from a linear layer run once)", m.arch.Name, nn.PenultimateLayer)
}

// Features writes the penultimate features of the batch x: the output of
// the service's layer nn.PenultimateLayer, by its Layer requests (their
// gradients, of class 0, are dropped).
func (m *serviceModel) Features(ctx context.Context, dst, x []float32) error {
	D, err := m.FeatureLen()
	if err != nil {
		return err
	}
	b := len(dst) / D
	return m.LayerGrad(ctx, dst, make([]float32, len(dst)), x, make([]int, b), nn.PenultimateLayer)
}

// LayerGrad writes a layer's output and d p_target / d output, as
// nn.Model.LayerGrad, in as many requests as the service's bounds take.
func (m *serviceModel) LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error {
	b, err := m.batch("Layer", x)
	if err != nil {
		return err
	}
	if b == 0 {
		return nil
	}
	n := m.inputLen
	sh, err := m.LayerShape(ctx, layer)
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
	per, err := m.perRequest("Layer", sz)
	if err != nil {
		return err
	}
	return split(b, per, func(lo, hi int) error {
		r, err := request(ctx, m, "Layer", func() string { return fmt.Sprintf("%s at layer %q", inputs(hi-lo)(), layer) }, func(ctx context.Context) (*pb.LayerResponse, error) {
			return m.rpc.Layer(ctx, &pb.LayerRequest{Handle: m.handle, Layer: layer, X: wire.Float32Bytes(x[lo*n : hi*n]), Targets: wire.Int64s(target[lo:hi])})
		})
		if err != nil {
			return err
		}
		if r.GetChannels() != int64(sh.C) || r.GetLength() != int64(sh.T) {
			return fmt.Errorf("model service: Layer %q: shape %d x %d, then %d x %d", layer, sh.C, sh.T, r.GetChannels(), r.GetLength())
		}
		if err := into("Layer", "act", act[lo*sz:hi*sz], r.GetAct()); err != nil {
			return err
		}
		return into("Layer", "grad", grad[lo*sz:hi*sz], r.GetGrad())
	})
}

// PerturbedProbs computes a Perturbation (see nn.Perturbed) by the
// service: windows by Windows (the channel and the baseline signal sent
// as they are; the unperturbed probability the service's, by the same
// computation), spans of a constant baseline by Spans. The service
// computes with a trunk cache of its own or none, which gives the same
// bytes, so req.Cache, of this process, is not sent. Spans with a
// baseline signal or with the unperturbed probability, which the
// protocol does not carry, are left to nn.Perturbed's forward passes.
func (m *serviceModel) PerturbedProbs(ctx context.Context, req nn.Perturbation, dst []float32) (bool, error) {
	N := req.Copies()
	switch {
	case N == 0:
		return false, nil // the service wants a window or a perturbation
	case req.Spans != nil && (req.Signal != nil || req.Unperturbed):
		return false, nil
	case req.Spans != nil:
		return true, m.spans(ctx, dst, req)
	}
	var channel *int64
	if req.Channel != nn.AllChannels {
		c := int64(req.Channel)
		channel = &c
	}
	return true, split(N, serviceBounds.starts, func(lo, hi int) error {
		r, err := request(ctx, m, "Windows", func() string { return fmt.Sprintf("1 input, %d windows", hi-lo) }, func(ctx context.Context) (*pb.WindowsResponse, error) {
			return m.rpc.Windows(ctx, &pb.WindowsRequest{
				Handle: m.handle, X: wire.Float32Bytes(req.X), Targets: []int64{int64(req.Class)},
				Starts: wire.Int64s(req.Starts[lo:hi]), Width: int64(req.Width), Baseline: req.Baseline, BaselineX: wire.Float32Bytes(req.Signal), Channel: channel,
			})
		})
		if err != nil {
			return err
		}
		if err := into("Windows", "probs", dst[lo:hi], r.GetProbs()); err != nil {
			return err
		}
		var u [1]float32
		if err := into("Windows", "unperturbed", u[:], r.GetUnperturbed()); err != nil {
			return err
		}
		if lo == 0 && req.Unperturbed {
			dst[N] = u[0]
		}
		return nil
	})
}

// spans sends the sets of spans of req to the service's Spans in as many
// requests as its bounds take. The spans go with their channels unless
// every span covers every channel and a copy's spans are in order (the
// request without channels); empty spans, which change nothing, are not
// sent.
func (m *serviceModel) spans(ctx context.Context, dst []float32, req nn.Perturbation) error {
	withChannels := false
	for _, sp := range req.Spans {
		hi := 0
		for _, s := range sp {
			if s.Lo == s.Hi {
				continue
			}
			if s.Ch != nn.AllChannels || s.Lo < hi {
				withChannels = true
			}
			hi = s.Hi
		}
	}
	spans := req.Spans
	for lo := 0; lo < len(spans); {
		// As many perturbations as the service's bounds let one request
		// carry, and at least one.
		var bounds, ends, channels []int64
		hi := lo
		for hi < len(spans) && len(ends) < serviceBounds.perturbations &&
			(hi == lo || len(bounds)/2+len(spans[hi]) <= serviceBounds.pairs) {
			for _, s := range spans[hi] {
				if s.Lo == s.Hi {
					continue
				}
				bounds = append(bounds, int64(s.Lo), int64(s.Hi))
				if withChannels {
					channels = append(channels, int64(s.Ch))
				}
			}
			ends = append(ends, int64(len(bounds)/2))
			hi++
		}
		r, err := request(ctx, m, "Spans", func() string { return fmt.Sprintf("1 input, %d perturbations", len(ends)) }, func(ctx context.Context) (*pb.SpansResponse, error) {
			return m.rpc.Spans(ctx, &pb.SpansRequest{Handle: m.handle, X: wire.Float32Bytes(req.X), Target: int64(req.Class), Bounds: bounds, Ends: ends, Baseline: req.Baseline, Channels: channels})
		})
		if err != nil {
			return err
		}
		if err := into("Spans", "probs", dst[lo:hi], r.GetProbs()); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

var _ nn.Perturber = (*serviceModel)(nil)
