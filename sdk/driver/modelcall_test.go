package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// hangingService is a model service of a draw known by its shape (as the
// Python kit's server describes a PyTorch module: 2 x 20 inputs, 4
// classes, one layer "conv1" of 3 x 18) that answers its first answer
// requests after Describe, and then hangs in every later one until
// release closes, whatever the client does (as a forward pass that
// sleeps does); with refuse, it refuses them at once instead.
type hangingService struct {
	pb.UnimplementedModelServer
	answer       int32
	hangDescribe bool
	refuse       bool
	calls        atomic.Int32
	release      chan struct{}
	hung         chan struct{} // gets a value as a request starts to hang
	// abandoned counts the hung requests whose context ended: the
	// client's deadline reached the server.
	abandoned atomic.Int32
}

const hangN, hangK, hangC, hangT = 40, 4, 3, 18

// wait answers a request's turn: nil to answer, else the error to return.
func (h *hangingService) wait(ctx context.Context) error {
	if h.calls.Add(1) <= h.answer {
		return nil
	}
	if h.refuse {
		return status.Error(codes.InvalidArgument, "refused")
	}
	h.hung <- struct{}{}
	<-h.release
	h.ended(ctx)
	return status.Error(codes.Unavailable, "released")
}

// ended counts a released request as abandoned once its context ends
// (the client's reset reaches the server a moment after the client's
// error).
func (h *hangingService) ended(ctx context.Context) {
	select {
	case <-ctx.Done():
		h.abandoned.Add(1)
	case <-time.After(time.Minute):
	}
}

func (h *hangingService) Describe(ctx context.Context, _ *pb.ModelRef) (*pb.ModelInfo, error) {
	if h.hangDescribe {
		h.hung <- struct{}{}
		<-h.release
		h.ended(ctx)
		return nil, status.Error(codes.Unavailable, "released")
	}
	arch, err := wire.Arch(nn.Arch{Name: "hang", InChannels: 2, InLen: 20})
	if err != nil {
		return nil, err
	}
	return &pb.ModelInfo{ArchJson: arch, InputLen: hangN, Classes: hangK, Layers: []*pb.LayerInfo{{Name: "conv1", Channels: hangC, Length: hangT}}}, nil
}

func (h *hangingService) Probs(ctx context.Context, r *pb.ModelBatch) (*pb.ProbsResponse, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return &pb.ProbsResponse{Probs: make([]byte, len(r.GetX())/hangN*hangK)}, nil
}

func (h *hangingService) InputGrad(ctx context.Context, r *pb.ModelBatch) (*pb.InputGradResponse, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return &pb.InputGradResponse{Grad: make([]byte, len(r.GetX())), Probs: make([]byte, len(r.GetX())/hangN*hangK)}, nil
}

func (h *hangingService) Layer(ctx context.Context, r *pb.LayerRequest) (*pb.LayerResponse, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	b := len(r.GetX()) / 4 / hangN
	return &pb.LayerResponse{Channels: hangC, Length: hangT, Act: make([]byte, 4*b*hangC*hangT), Grad: make([]byte, 4*b*hangC*hangT)}, nil
}

func (h *hangingService) Windows(ctx context.Context, r *pb.WindowsRequest) (*pb.WindowsResponse, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return &pb.WindowsResponse{Probs: make([]byte, 4*len(r.GetStarts())), Unperturbed: make([]byte, 4)}, nil
}

func (h *hangingService) Spans(ctx context.Context, r *pb.SpansRequest) (*pb.SpansResponse, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return &pb.SpansResponse{Probs: make([]byte, 4*len(r.GetEnds()))}, nil
}

// serveHanging serves h on a unix socket until the test ends (h's hung
// requests released first).
func serveHanging(t *testing.T, h *hangingService) sdk.ModelRef {
	t.Helper()
	h.release, h.hung = make(chan struct{}), make(chan struct{}, 16)
	addr := filepath.Join(t.TempDir(), "hang.sock")
	lis, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterModelServer(srv, h)
	go srv.Serve(lis)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		srv.Stop()
	})
	return sdk.ModelRef{Address: addr, Handle: 7}
}

// TestModelCallLimit: every request of a served draw (Describe, Probs,
// InputGrad, Layer, Windows, Spans) that has no answer within
// ModelCalls' limit fails with an *sdk.CallTimeoutError naming the call,
// what it carried and the limit's key, handed once to Expired (which
// stops the server) and returned as Expired's error; the request is
// abandoned at the server (its deadline went over the wire), though the
// server ignored it. The request before it, answered, counts: the limit
// is each request's, not the draw's.
func TestModelCallLimit(t *testing.T) {
	const limit = 2 * time.Second
	x := make([]float32, 64*hangN)
	for i := range x {
		x[i] = float32(i%7) + 1
	}
	cases := []struct {
		method, what string
		call         func(m nn.Model) error
	}{
		{"Probs", "64 inputs", func(m nn.Model) error { return m.Probs(context.Background(), make([]float32, 64*hangK), x) }},
		{"InputGrad", "3 inputs", func(m nn.Model) error {
			return m.InputGrad(context.Background(), make([]float32, 3*hangN), nil, x[:3*hangN], []int{0, 1, 2})
		}},
		{"Layer", `2 inputs at layer "conv1"`, func(m nn.Model) error {
			sz := 2 * hangC * hangT
			return m.LayerGrad(context.Background(), make([]float32, sz), make([]float32, sz), x[:2*hangN], []int{0, 3}, "conv1")
		}},
		{"Windows", "1 input, 5 windows", func(m nn.Model) error {
			return nn.Perturbed(context.Background(), m, nn.Perturbation{X: x[:hangN], Class: 1, Starts: []int{0, 2, 4, 6, 8}, Width: 4, Channel: nn.AllChannels}, make([]float32, 5))
		}},
		{"Spans", "1 input, 4 perturbations", func(m nn.Model) error {
			all := nn.AllChannels
			spans := [][]nn.ChannelSpan{{{Ch: all, Lo: 0, Hi: 2}}, {{Ch: all, Lo: 3, Hi: 5}}, {}, {{Ch: all, Lo: 1, Hi: 2}, {Ch: all, Lo: 9, Hi: 12}}}
			return nn.Perturbed(context.Background(), m, nn.Perturbation{X: x[:hangN], Class: 2, Spans: spans, Channel: all}, make([]float32, 4))
		}},
	}
	check := func(t *testing.T, h *hangingService, err error, expired int32, method, what string) {
		t.Helper()
		want := fmt.Sprintf(": %s of %s: no answer within 2s (limits.model_call)", method, what)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "server stopped: ") {
			t.Fatalf("error %v; want Expired's error with %q", err, want)
		}
		te, ok := errors.AsType[*sdk.CallTimeoutError](err)
		if !ok || te.Method != method || te.What != what || te.Limit.Timeout != limit || te.Limit.Key != "limits.model_call" {
			t.Errorf("CallTimeoutError %+v (%v); want %s of %s within %v", te, ok, method, what, limit)
		}
		if expired != 1 {
			t.Errorf("Expired called %d times; want once", expired)
		}
		close(h.release)
		for h.abandoned.Load() == 0 {
			time.Sleep(10 * time.Millisecond) // the test's own deadline bounds this
		}
	}
	for _, c := range cases {
		t.Run(c.method, func(t *testing.T) {
			t.Parallel()
			h := &hangingService{answer: 1}
			ref := serveHanging(t, h)
			var expired atomic.Int32
			calls := ModelCalls{Limit: sdk.CallLimit{Timeout: limit, Key: "limits.model_call"}, Expired: func(err error) error {
				expired.Add(1)
				return fmt.Errorf("server stopped: %w", err)
			}}
			m, err := OpenDraw(context.Background(), sdk.Draw{Served: &ref}, calls)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Call(context.Background(), c.call); err != nil {
				t.Fatalf("the first %s, answered: %v", c.method, err)
			}
			err = m.Call(context.Background(), c.call)
			check(t, h, err, expired.Load(), c.method, c.what)
			if c.method != "Layer" && !strings.Contains(err.Error(), ref.String()+": "+c.method+" of ") {
				t.Errorf("error %v does not name the draw's reference %v", err, ref)
			}
			if n := h.calls.Load(); n != 2 {
				t.Errorf("the service saw %d requests; want the answered one and the hung one", n)
			}
		})
	}
	t.Run("Describe", func(t *testing.T) {
		t.Parallel()
		h := &hangingService{hangDescribe: true}
		ref := serveHanging(t, h)
		var expired atomic.Int32
		calls := ModelCalls{Limit: sdk.CallLimit{Timeout: limit, Key: "limits.model_call"}, Expired: func(err error) error {
			expired.Add(1)
			return fmt.Errorf("server stopped: %w", err)
		}}
		_, err := OpenDraw(context.Background(), sdk.Draw{Served: &ref}, calls)
		check(t, h, err, expired.Load(), "Describe", "handle 7")
	})
}

// TestModelCallLimitOtherErrors: what is not a request past the limit
// does not stop the server: a request the service refuses, and one the
// caller's own context ends while it hangs (cancelled, or its deadline
// before the limit's: the caller's business), are
// errors without a CallTimeoutError, and Expired is not called.
func TestModelCallLimitOtherErrors(t *testing.T) {
	x := make([]float32, 2*hangN)
	probsIn := func(ctx context.Context) func(m nn.Model) error {
		return func(m nn.Model) error { return m.Probs(ctx, make([]float32, 2*hangK), x) }
	}
	probs := probsIn(context.Background())
	open := func(t *testing.T, h *hangingService, expired *atomic.Int32) *DrawModel {
		ref := serveHanging(t, h)
		calls := ModelCalls{Limit: sdk.CallLimit{Timeout: time.Hour, Key: "limits.model_call"}, Expired: func(err error) error {
			expired.Add(1)
			return err
		}}
		m, err := OpenDraw(context.Background(), sdk.Draw{Served: &ref}, calls)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	var expired atomic.Int32
	m := open(t, &hangingService{refuse: true}, &expired)
	err := m.Call(context.Background(), probs)
	if _, ok := errors.AsType[*sdk.CallTimeoutError](err); ok || err == nil || !strings.Contains(err.Error(), ", handle 7: Probs: refused (InvalidArgument)") {
		t.Errorf("a refused request: %v; want the service's refusal", err)
	}
	h := &hangingService{}
	m = open(t, h, &expired)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Call(ctx, probsIn(ctx)) }()
	<-h.hung
	cancel()
	err = <-done
	if _, ok := errors.AsType[*sdk.CallTimeoutError](err); ok || err == nil || !strings.Contains(err.Error(), "Canceled") {
		t.Errorf("a request the caller cancelled: %v; want the cancellation", err)
	}
	h = &hangingService{}
	m = open(t, h, &expired)
	ctx, cancel = context.WithTimeout(context.Background(), time.Second) // before the limit's hour
	defer cancel()
	err = m.Call(ctx, probsIn(ctx))
	if _, ok := errors.AsType[*sdk.CallTimeoutError](err); ok || err == nil || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Errorf("a request past the caller's own deadline: %v; want the caller's deadline, no CallTimeoutError", err)
	}
	if n := expired.Load(); n != 0 {
		t.Errorf("Expired called %d times; want never", n)
	}
	if ModelCallsOf(&servingPosterior{}).Expired != nil || ModelCallsOf(&servingPosterior{}).Limit.Timeout != 0 {
		t.Error("a posterior that is no DrawServer has model-call limits")
	}
}

// TestModelCallLimitInExplainer: an explainer plugin's own requests to a
// served draw (straight to the draw's service, not through the host)
// have the host's limit (Options.ModelCall, handed in the Load's and the
// Explain's metadata): a request past it fails the Explain with
// DeadlineExceeded, naming the call, its batch and the key, and
// ModelCalls.Expire hands that error to Expired, which stops the server,
// as for the host's own requests.
func TestModelCallLimitInExplainer(t *testing.T) {
	h := &hangingService{answer: 1}
	ref := serveHanging(t, h)
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	limit := sdk.CallLimit{Timeout: 2 * time.Second, Key: "limits.model_call"}
	rpc, stop, err := proto.InProcess(probsExplainer{}, PluginSetFor(Options{ModelCall: limit}), DialOptions(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	v, err := rpc.Dispense("explainer")
	if err != nil {
		t.Fatal(err)
	}
	lm, err := v.(Explainer).Load(context.Background(), sdk.Draw{Served: &ref})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	req := sdk.ExplainRequest{X: make([]float32, 2*hangN), Targets: []int{0, 1}}
	if _, err := lm.Explain(context.Background(), req); err != nil {
		t.Fatalf("the first Explain, answered: %v", err)
	}
	_, err = lm.Explain(context.Background(), req)
	want := "Probs of 2 inputs: no answer within 2s (limits.model_call)"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "explainer.probs: Explain: ") || status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("the Explain whose request hung: %v (%v); want DeadlineExceeded with %q", err, status.Code(err), want)
	}
	var expired atomic.Int32
	calls := ModelCalls{Limit: limit, Expired: func(err error) error {
		expired.Add(1)
		return fmt.Errorf("server stopped: %w", err)
	}}
	if got := calls.Expire(err); got == nil || !strings.HasPrefix(got.Error(), "server stopped: ") || expired.Load() != 1 {
		t.Errorf("Expire: %v, Expired called %d times; want Expired's error, once", got, expired.Load())
	}
	if got := calls.Expire(errors.New("explainer.probs: Explain: something else")); expired.Load() != 1 || got.Error() != "explainer.probs: Explain: something else" {
		t.Errorf("Expire of another error: %v (Expired called %d times)", got, expired.Load())
	}
	close(h.release)
	for h.abandoned.Load() == 0 {
		time.Sleep(10 * time.Millisecond) // the test's own deadline bounds this
	}
}
