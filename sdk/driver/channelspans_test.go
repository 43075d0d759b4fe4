package driver

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// channelRequest encodes perturbations of channel spans as a SpansRequest.
func channelRequest(h uint64, x []float32, target int, spans [][]nn.ChannelSpan, baseline float32) *pb.SpansRequest {
	var bounds, ends, channels []int64
	for _, sp := range spans {
		for _, s := range sp {
			bounds = append(bounds, int64(s.Lo), int64(s.Hi))
			channels = append(channels, int64(s.Ch))
		}
		ends = append(ends, int64(len(bounds)/2))
	}
	return &pb.SpansRequest{Handle: h, X: wire.Float32Bytes(x), Target: int64(target), Bounds: bounds, Ends: ends, Baseline: baseline, Channels: channels}
}

// TestModelServiceChannelSpans: Spans with channels gives the local
// ChannelSpanProbs bit for bit and, for a model without the incremental
// path, forward passes of the perturbed inputs built here (which the
// local one equals within 1e-6); spans out of order and overlapping are
// accepted; a bad channel is an error naming what is accepted.
func TestModelServiceChannelSpans(t *testing.T) {
	_, m := convModel(t, 3)
	n, k, C, T := m.InputLen(), m.Classes(), m.Arch().InChannels, m.Arch().InLen
	x := inputs(1, n, 7)
	spans := [][]nn.ChannelSpan{{}, {{Ch: 1, Lo: 0, Hi: 8}}, {{Ch: 0, Lo: 10, Hi: 24}, {Ch: 1, Lo: 2, Hi: 5}, {Ch: 1, Lo: 4, Hi: 12}},
		{{Ch: nn.AllChannels, Lo: 0, Hi: 24}}, {{Ch: 0, Lo: 0, Hi: 12}, {Ch: 1, Lo: 12, Hi: 24}}}
	want := make([]float32, len(spans))
	if err := nn.Perturbed(context.Background(), m, nn.Perturbation{X: x, Class: 2, Baseline: -0.5, Spans: spans, Channel: nn.AllChannels}, want); err != nil {
		t.Fatal(err)
	}
	row, p := make([]float32, n), make([]float32, k)
	forward := make([]float32, len(spans))
	for j, sp := range spans {
		copy(row, x)
		for _, s := range sp {
			for c := range C {
				if s.Ch == c || s.Ch == nn.AllChannels {
					for i := c*T + s.Lo; i < c*T+s.Hi; i++ {
						row[i] = -0.5
					}
				}
			}
		}
		if err := m.Probs(context.Background(), p, row); err != nil {
			t.Fatal(err)
		}
		forward[j] = p[2]
		if d := math.Abs(float64(want[j] - p[2])); d > 1e-6 {
			t.Errorf("perturbation %d: local %v, forward pass %v", j, want[j], p[2])
		}
	}
	for _, tc := range []struct {
		name string
		m    nn.Model
		want []float32
	}{{"incremental", m, want}, {"plain", plain{m}, forward}} {
		_, rpc, h := dialService(t, tc.m)
		r, err := rpc.Spans(context.Background(), channelRequest(h, x, 2, spans, -0.5))
		if err != nil {
			t.Fatal(err)
		}
		if got := f32(t, r.GetProbs()); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Spans %v, want %v", tc.name, got, tc.want)
		}
		for _, bad := range []struct {
			mod  func(*pb.SpansRequest)
			want string
		}{
			{func(r *pb.SpansRequest) { r.Channels[0] = 2 }, "span [0, 8) of channel 2; want -1 (every channel) or 0..1"},
			{func(r *pb.SpansRequest) { r.Channels[0] = -2 }, "of channel -2"},
			{func(r *pb.SpansRequest) { r.Channels = r.Channels[1:] }, "6 channels for 7 (lo, hi) pairs; want one a pair, or none"},
			{func(r *pb.SpansRequest) { r.Bounds[1] = 25 }, "perturbation 1: span [0, 25); want 0 <= lo < hi <= 24"},
			{func(r *pb.SpansRequest) { r.Ends = r.Ends[:2] }, "the last end is 1; want the number of (lo, hi) pairs, 7"},
		} {
			req := channelRequest(h, x, 2, spans, -0.5)
			bad.mod(req)
			_, err := rpc.Spans(context.Background(), req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: %v, want InvalidArgument %q", tc.name, err, bad.want)
			}
		}
	}
}
