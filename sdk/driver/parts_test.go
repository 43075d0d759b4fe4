package driver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/nn"
)

// partedFake is a parted posterior: Parts answers its Config "parts" (or
// fails, or panics, as "mode" says), and Fit records the requests it gets
// and returns tensor "p<Part>" = [Part, Parts, Workers].
type partedFake struct {
	mu   sync.Mutex
	fits []sdk.FitRequest
}

func (*partedFake) Info() sdk.Info {
	return sdk.Info{ID: "posterior.parted", Version: "1", Finite: true}
}

func (*partedFake) Check(cfg sdk.Config, _ int) error { return cfg.Only("parts", "mode") }

func (*partedFake) Parts(cfg sdk.Config) (int, error) {
	switch mode, _ := cfg.String("mode", ""); mode {
	case "panic":
		panic("parts exploded")
	case "fail":
		return 0, fmt.Errorf("key %q: not today", "parts")
	}
	k, err := cfg.Int("parts", 0)
	return int(k), err
}

func (f *partedFake) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	f.mu.Lock()
	f.fits = append(f.fits, req)
	f.mu.Unlock()
	name := fmt.Sprintf("p%d", req.Part)
	return sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{name: {float32(req.Part), float32(req.Parts), float32(req.Workers)}}}, nil
}

func (*partedFake) Sample(context.Context, sdk.Artifact, sdk.SampleRequest) ([]nn.Params, error) {
	return nil, fmt.Errorf("not sampled in these tests")
}

// recorded returns the fit requests seen so far and forgets them.
func (f *partedFake) recorded() []sdk.FitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.fits
	f.fits = nil
	return r
}

func partedPosteriors(t *testing.T, f *partedFake) map[string]sdk.Posterior {
	t.Helper()
	local, err := LocalPosterior(f)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]sdk.Posterior{"remote": serveTest(t, f).(sdk.Posterior), "in-process": local}
}

// TestParts: the number of parts crosses the wire as it is; an answer out
// of 0..100000, an error and a panic of the plugin are errors that name it
// and the method; a posterior that is not parted has 0 parts.
func TestParts(t *testing.T) {
	for name, p := range partedPosteriors(t, &partedFake{}) {
		for _, k := range []int64{0, 1, 3, 100000} {
			got, err := p.(sdk.Parted).Parts(sdk.Config{"parts": k})
			if err != nil || int64(got) != k {
				t.Errorf("%s: Parts = %d, %v; want %d", name, got, err, k)
			}
		}
		for _, c := range []struct {
			cfg  sdk.Config
			want string
		}{
			{sdk.Config{"parts": int64(-1)}, "posterior.parted: Parts: answered -1 parts (accepted: 0..100000"},
			{sdk.Config{"parts": int64(1e9)}, "posterior.parted: Parts: answered 1000000000 parts (accepted: 0..100000"},
			{sdk.Config{"parts": int64(100001)}, "posterior.parted: Parts: answered 100001 parts"},
			{sdk.Config{"mode": "fail"}, `posterior.parted: Parts: key "parts": not today`},
			{sdk.Config{"mode": "panic"}, "posterior.parted: Parts: "},
		} {
			got, err := p.(sdk.Parted).Parts(c.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || got != 0 {
				t.Errorf("%s: %v: Parts = %d, %v; want an error starting %q", name, c.cfg, got, err, c.want)
			}
			if mode, _ := c.cfg.String("mode", ""); mode == "panic" && err != nil && !strings.Contains(err.Error(), "panic: parts exploded") {
				t.Errorf("%s: a panic in Parts: %v, want the panic's value", name, err)
			}
		}
	}
	local, err := LocalPosterior(fakePosterior{})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]sdk.Posterior{"remote": serveTest(t, fakePosterior{}).(sdk.Posterior), "in-process": local} {
		if k, err := p.(sdk.Parted).Parts(sdk.Config{"mode": "ok"}); k != 0 || err != nil {
			t.Errorf("%s: a posterior that is not parted: Parts = %d, %v; want 0", name, k, err)
		}
	}
}

// olderPosterior is a plugin built before Parts: its service has no such
// method at all.
type olderPosterior struct {
	pb.UnimplementedPosteriorServer
}

// TestPartsOfAnOlderPlugin: a plugin whose service predates Parts answers
// Unimplemented, which the host reads as 0 parts, not as an error; other
// failures stay errors.
func TestPartsOfAnOlderPlugin(t *testing.T) {
	desc := pb.Posterior_ServiceDesc
	desc.Methods = nil
	for _, m := range pb.Posterior_ServiceDesc.Methods {
		if m.MethodName != "Parts" {
			desc.Methods = append(desc.Methods, m)
		}
	}
	if len(desc.Methods) != len(pb.Posterior_ServiceDesc.Methods)-1 {
		t.Fatalf("the service has no method Parts to leave out: %+v", pb.Posterior_ServiceDesc.Methods)
	}
	srv := grpc.NewServer()
	srv.RegisterService(&desc, olderPosterior{})
	lis := bufconn.Listen(1 << 16)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///older",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &posteriorClient{described: described{sdk.Info{ID: "posterior.older"}}, rpc: pb.NewPosteriorClient(conn), timeouts: Timeouts{Check: 10 * time.Second}}
	if _, err := c.rpc.Parts(context.Background(), &pb.CheckRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("the older service answers Parts with %v, want Unimplemented", err)
	}
	if k, err := c.Parts(sdk.Config{"members": int64(4)}); k != 0 || err != nil {
		t.Errorf("an older plugin: Parts = %d, %v; want 0, no error", k, err)
	}
	// A plugin that is gone is an error, not 0 parts.
	srv.Stop()
	if k, err := c.Parts(nil); err == nil || !strings.HasPrefix(err.Error(), "posterior.older: Parts: ") || k != 0 {
		t.Errorf("a stopped plugin: Parts = %d, %v; want an error naming it", k, err)
	}
}

// TestPartTravels: a fit request's Part and Parts reach the plugin as they
// were sent, in process and over the wire, and 0/0 for a whole fit.
func TestPartTravels(t *testing.T) {
	f := &partedFake{}
	for name, p := range partedPosteriors(t, f) {
		for _, c := range []struct{ part, parts int }{{0, 0}, {2, 3}, {0, 1}, {99999, 100000}} {
			req := sdk.FitRequest{Arch: fakeArch(4), Part: c.part, Parts: c.parts, Workers: 5}
			a, err := p.Fit(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: part %d of %d: %v", name, c.part, c.parts, err)
			}
			got := f.recorded()
			if len(got) != 1 || got[0].Part != c.part || got[0].Parts != c.parts || got[0].Workers != 5 {
				t.Errorf("%s: sent part %d of %d; the plugin got %+v", name, c.part, c.parts, got)
			}
			want := []float32{float32(c.part), float32(c.parts), 5}
			if tv := a.Tensors[fmt.Sprintf("p%d", c.part)]; fmt.Sprint(tv) != fmt.Sprint(want) {
				t.Errorf("%s: part %d of %d: artifact %v, want tensor %v", name, c.part, c.parts, a.Tensors, want)
			}
		}
	}
}

// TestBadPartRefused: a part out of range, a negative or too large
// number of parts, and a part of a whole fit are refused before they
// leave the host; a part asked of a posterior that is not parted is
// refused too (by the driver in process, by sdk.Serve over the wire).
func TestBadPartRefused(t *testing.T) {
	f := &partedFake{}
	for name, p := range partedPosteriors(t, f) {
		for _, c := range []struct {
			part, parts int
			want        string
		}{
			{3, 3, "bad request: part = 3 of 3 parts (accepted: 0..2)"},
			{-1, 3, "bad request: part = -1 of 3 parts (accepted: 0..2)"},
			{0, -1, "bad request: parts = -1 (accepted: 0 for a whole fit, or 1..100000)"},
			{0, 100001, "bad request: parts = 100001"},
			{1, 0, "bad request: part = 1 of a whole fit (parts = 0"},
		} {
			_, err := p.Fit(context.Background(), sdk.FitRequest{Arch: fakeArch(4), Part: c.part, Parts: c.parts})
			if err == nil || !strings.HasPrefix(err.Error(), "posterior.parted: Fit: "+c.want) {
				t.Errorf("%s: part %d of %d: %v, want %q", name, c.part, c.parts, err, c.want)
			}
			if got := f.recorded(); len(got) != 0 {
				t.Errorf("%s: part %d of %d reached the plugin: %+v", name, c.part, c.parts, got)
			}
		}
	}
	local, err := LocalPosterior(fakePosterior{})
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.FitRequest{Arch: fakeArch(4), Train: sdk.Dataset{X: make([]float32, 4), Y: []int{0}, N: 1, Len: 4}, Part: 1, Parts: 2}
	for name, p := range map[string]sdk.Posterior{"remote": serveTest(t, fakePosterior{}).(sdk.Posterior), "in-process": local} {
		_, err := p.Fit(context.Background(), req)
		if err == nil || !strings.HasPrefix(err.Error(), "posterior.fake: Fit: bad request: part 1 of 2 parts asked of a posterior whose fit is not parted") {
			t.Errorf("%s: a part of a posterior that is not parted: %v", name, err)
		}
	}
}

// TestPluginChecksPart: a request that bypasses the host's checks (a raw
// message with a part out of range) is refused by sdk.Serve's side too.
func TestPluginChecksPart(t *testing.T) {
	c := serveTest(t, &partedFake{}).(*posteriorClient)
	r, err := encodeFitRequest(sdk.FitRequest{Arch: fakeArch(4)})
	if err != nil {
		t.Fatal(err)
	}
	r.Part, r.Parts = 4, 2
	stream, err := c.rpc.Fit(context.Background(), r)
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "part = 4 of 2 parts (accepted: 0..1)") {
		t.Errorf("a raw part 4 of 2: %v, want InvalidArgument naming the range", err)
	}
}
