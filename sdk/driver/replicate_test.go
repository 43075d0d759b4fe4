package driver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// replicaFake honours replicates (Info.Replicates): Fit records the
// requests it gets and returns tensor "r" = [Replicate, Seed mod 2^20].
type replicaFake struct {
	mu   sync.Mutex
	fits []sdk.FitRequest
}

func (*replicaFake) Info() sdk.Info {
	return sdk.Info{ID: "posterior.replica", Version: "1", Finite: true, Replicates: true}
}

func (*replicaFake) Check(sdk.Config, int) error { return nil }

func (f *replicaFake) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	f.mu.Lock()
	f.fits = append(f.fits, req)
	f.mu.Unlock()
	return sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{"r": {float32(req.Replicate), float32(req.Seed % (1 << 20))}}}, nil
}

func (*replicaFake) Sample(context.Context, sdk.Artifact, sdk.SampleRequest) ([]nn.Params, error) {
	return nil, fmt.Errorf("not sampled in these tests")
}

func (f *replicaFake) recorded() []sdk.FitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.fits
	f.fits = nil
	return r
}

func replicaPosteriors(t *testing.T, f *replicaFake) map[string]sdk.Posterior {
	t.Helper()
	local, err := LocalPosterior(f)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]sdk.Posterior{"remote": serveTest(t, f).(sdk.Posterior), "in-process": local}
}

// TestReplicateTravels: a fit request's Replicate reaches the plugin as
// it was sent, in process and over the wire, and Info.Replicates reaches
// the host (false for a plugin that does not set it).
func TestReplicateTravels(t *testing.T) {
	f := &replicaFake{}
	for name, p := range replicaPosteriors(t, f) {
		if !p.Info().Replicates {
			t.Errorf("%s: Info.Replicates is false; the plugin sets it", name)
		}
		for _, r := range []int{0, 1, 2, 7, 1 << 40} {
			req := sdk.FitRequest{Arch: fakeArch(4), Seed: uint64(1000 + r), Replicate: r}
			a, err := p.Fit(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: replicate %d: %v", name, r, err)
			}
			got := f.recorded()
			if len(got) != 1 || got[0].Replicate != r || got[0].Seed != req.Seed {
				t.Errorf("%s: sent replicate %d (seed %d); the plugin got %+v", name, r, req.Seed, got)
			}
			if tv := a.Tensors["r"]; len(tv) != 2 || tv[0] != float32(r) {
				t.Errorf("%s: replicate %d: artifact %v", name, r, a.Tensors)
			}
		}
	}
	if serveTest(t, &partedFake{}).(sdk.Posterior).Info().Replicates {
		t.Error("a plugin that does not set Info.Replicates reports it set over the wire")
	}
}

// TestNegativeReplicateRefused: a negative replicate is refused before
// it leaves the host, with an error naming the field and what is accepted.
func TestNegativeReplicateRefused(t *testing.T) {
	f := &replicaFake{}
	for name, p := range replicaPosteriors(t, f) {
		for _, r := range []int{-1, -1 << 40} {
			_, err := p.Fit(context.Background(), sdk.FitRequest{Arch: fakeArch(4), Replicate: r})
			want := fmt.Sprintf("posterior.replica: Fit: bad request: replicate = %d (accepted: 0 for the run without replicates", r)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s: replicate %d: %v, want %q", name, r, err, want)
			}
			if got := f.recorded(); len(got) != 0 {
				t.Errorf("%s: replicate %d reached the plugin: %+v", name, r, got)
			}
		}
	}
}

// TestPluginChecksReplicate: a raw message with a negative replicate,
// which bypasses the host's checks, is refused by sdk.Serve's side too.
func TestPluginChecksReplicate(t *testing.T) {
	f := &replicaFake{}
	c := serveTest(t, f).(*posteriorClient)
	r, err := encodeFitRequest(sdk.FitRequest{Arch: fakeArch(4)})
	if err != nil {
		t.Fatal(err)
	}
	r.Replicate = -3
	stream, err := c.rpc.Fit(context.Background(), r)
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "bad request: replicate = -3 (accepted: 0 for the run without replicates") {
		t.Errorf("a raw replicate -3: %v, want InvalidArgument naming the field", err)
	}
	if got := f.recorded(); len(got) != 0 {
		t.Errorf("replicate -3 reached the plugin: %+v", got)
	}
}
