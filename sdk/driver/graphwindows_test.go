package driver

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestModelServiceGraphWindows: the service answers Windows on a graph
// network (nn.GraphModel) by the model's receptive-field path (its Path
// counts the copies), with the probabilities of forward passes of the
// occluded copies up to float32 rounding, and p(x) by the same
// computation (PlainProbs: the model's Probs runs the folded pass, which
// folds the batchnorm here), so that a window where x already is the
// baseline gets exactly p(x).
func TestModelServiceGraphWindows(t *testing.T) {
	n := func(name, op string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Attrs: attrs}
	}
	net, err := graph.Compile(graph.Spec{Name: "svc", InChannels: 2, InLen: 40, Nodes: []graph.Node{
		n("c1", "conv1d", map[string]any{"out": 4, "kernel": 5, "padding": []int64{1, 3}}),
		n("bn", "batchnorm1d", nil),
		n("r1", "relu", nil),
		n("c2", "conv1d", map[string]any{"out": 4, "kernel": 3, "stride": 2, "dilation": 2}),
		n("gap", "globalavgpool", nil),
		n("fc", "linear", map[string]any{"out": 3}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range net.Theta {
		net.Theta[i] = float32(math.Sin(float64(7*i + 1)))
	}
	for _, p := range net.Params() {
		if p.Name == "bn.running_var" {
			for i := p.Offset; i < p.Offset+p.Len; i++ {
				net.Theta[i] = 1.5 + net.Theta[i]
			}
		}
	}
	m := nn.NewGraphModel(net)
	_, rpc, h := dialService(t, m)
	N, k, T := m.InputLen(), m.Classes(), 40
	x, z := inputs(2, N, 3), inputs(2, N, 4)
	for b := range 2 { // samples 20..23 of x are the baseline already
		for c := range 2 {
			for i := 20; i < 24; i++ {
				x[b*N+c*T+i] = -1
			}
		}
	}
	targets := []int{1, 2}
	starts := []int{0, 9, 20, 36}
	for _, signal := range []bool{false, true} {
		before := m.Path()
		req := &pb.WindowsRequest{Handle: h, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets), Starts: wire.Int64s(starts), Width: 4, Baseline: -1}
		if signal {
			req.BaselineX = wire.Float32Bytes(z)
		}
		w, err := rpc.Windows(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if p := m.Path(); p.Incremental-before.Incremental != 2*len(starts) {
			t.Errorf("signal %v: path %v: want %d more incremental copies", signal, p, 2*len(starts))
		}
		got, p0 := f32(t, w.GetProbs()), f32(t, w.GetUnperturbed())
		for b := range 2 {
			p := make([]float32, k)
			if err := m.PlainProbs(context.Background(), p, x[b*N:(b+1)*N]); err != nil {
				t.Fatal(err)
			}
			if p0[b] != p[targets[b]] {
				t.Errorf("signal %v input %d: unperturbed %v, PlainProbs %v", signal, b, p0[b], p[targets[b]])
			}
			if !signal && got[b*len(starts)+2] != p0[b] {
				t.Errorf("input %d: the window where x is the baseline: %v, unperturbed %v; want equal", b, got[b*len(starts)+2], p0[b])
			}
			if err := m.Probs(context.Background(), p, x[b*N:(b+1)*N]); err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(float64(p0[b] - p[targets[b]])); d > 1e-6 {
				t.Errorf("signal %v input %d: unperturbed %v, Probs %v", signal, b, p0[b], p[targets[b]])
			}
			for j, s := range starts {
				row := slices.Clone(x[b*N : (b+1)*N])
				for c := range 2 {
					for i := c*T + s; i < c*T+s+4; i++ {
						row[i] = -1
						if signal {
							row[i] = z[b*N+i]
						}
					}
				}
				if err := m.Probs(context.Background(), p, row); err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(float64(got[b*len(starts)+j] - p[targets[b]])); d > 1e-6 {
					t.Errorf("signal %v input %d start %d: %v, forward pass %v", signal, b, s, got[b*len(starts)+j], p[targets[b]])
				}
			}
		}
	}
}
