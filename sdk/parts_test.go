package sdk

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"

	"github.com/uaxai/uaxai/sdk/internal/pb"
)

// partedFake is a fakePosterior that is parted: Parts is the test's
// function.
type partedFake struct {
	fakePosterior
	parts func(cfg Config) (int, error)
}

func (p *partedFake) Parts(cfg Config) (int, error) { return p.parts(cfg) }

func TestPartsRPC(t *testing.T) {
	var got Config
	p := &partedFake{parts: func(cfg Config) (int, error) {
		got = cfg
		n, err := cfg.Int("members", 0)
		if n < 0 {
			panic("negative members")
		}
		if n == 0 {
			return 0, errors.New(`key "members" is missing`)
		}
		return int(n), err
	}}
	s := &posteriorServer{impl: p, info: Info{ID: "posterior.parted"}, log: hclog.NewNullLogger()}
	ctx := context.Background()
	r, err := s.Parts(ctx, &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"members": int64(7)}), Draws: 2})
	if err != nil || r.GetParts() != 7 {
		t.Fatalf("Parts = %v, %v; want 7", r, err)
	}
	if n, _ := got.Int("members", 0); n != 7 {
		t.Errorf("the plugin got the table %v", got)
	}
	_, err = s.Parts(ctx, &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{})})
	wantStatus(t, "a plugin's error", err, codes.InvalidArgument, `key "members" is missing`)
	_, err = s.Parts(ctx, &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"members": int64(-1)})})
	wantStatus(t, "a panic", err, codes.Internal, "panic: negative members")
	got = nil
	_, err = s.Parts(ctx, &pb.CheckRequest{ConfigJson: []byte(`{"members":`)})
	wantStatus(t, "a table that is not JSON", err, codes.InvalidArgument, "decoding config")
	if got != nil {
		t.Error("the plugin ran on a table that could not be decoded")
	}

	// A posterior that is not parted has 0 parts, whatever the table.
	plain := &posteriorServer{impl: &fakePosterior{}, info: Info{ID: "posterior.plain"}, log: hclog.NewNullLogger()}
	for _, cfg := range [][]byte{mustConfig(t, map[string]any{"members": int64(7)}), []byte(`{"members":`)} {
		if r, err := plain.Parts(ctx, &pb.CheckRequest{ConfigJson: cfg}); err != nil || r.GetParts() != 0 {
			t.Errorf("not parted, table %s: Parts = %v, %v; want 0", cfg, r, err)
		}
	}
}

// TestFitPart: a request's part and parts reach a parted plugin; a part
// out of range, or asked of a posterior that is not parted, is refused
// before the plugin runs.
func TestFitPart(t *testing.T) {
	art := tinyArtifact(t)
	var got []FitRequest
	fit := func(_ context.Context, req FitRequest) (Artifact, error) {
		got = append(got, req)
		return art, nil
	}
	parted := &partedFake{fakePosterior: fakePosterior{fit: fit}}
	plain := &fakePosterior{fit: fit}
	for _, c := range []struct {
		name        string
		impl        Posterior
		part, parts int64
		want        string // "" accepted
	}{
		{"whole, parted", parted, 0, 0, ""},
		{"part 2 of 3", parted, 2, 3, ""},
		{"part 0 of 1", parted, 0, 1, ""},
		{"last of the most", parted, 99999, 100000, ""},
		{"part 3 of 3", parted, 3, 3, "part = 3 of 3 parts (accepted: 0..2)"},
		{"part -1 of 3", parted, -1, 3, "part = -1 of 3 parts"},
		{"negative parts", parted, 0, -2, "parts = -2 (accepted: 0 for a whole fit, or 1..100000)"},
		{"too many parts", parted, 0, 100001, "parts = 100001"},
		{"a part of a whole fit", parted, 1, 0, "part = 1 of a whole fit"},
		{"whole, not parted", plain, 0, 0, ""},
		{"a part, not parted", plain, 0, 2, "part 0 of 2 parts asked of a posterior whose fit is not parted"},
	} {
		got = nil
		r, _ := goodFitRequest(t)
		r.Part, r.Parts = c.part, c.parts
		err := (&posteriorServer{impl: c.impl, info: Info{ID: "posterior.p"}, log: hclog.NewNullLogger()}).Fit(r, &fitStream{ctx: context.Background()})
		if c.want != "" {
			wantStatus(t, c.name, err, codes.InvalidArgument, c.want)
			if len(got) != 0 {
				t.Errorf("%s: the plugin ran", c.name)
			}
			continue
		}
		if err != nil || len(got) != 1 || int64(got[0].Part) != c.part || int64(got[0].Parts) != c.parts {
			t.Errorf("%s: Fit error %v, the plugin got %+v", c.name, err, got)
		}
	}
}
