package driver

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// BenchmarkModelService: the cost of the model service on the paper's
// network, against the same computation in process. "probs-1" is the
// round trip of one waveform; "probs-64" and "inputgrad-64" a batch of 64
// (records/s); "windows-581" the 581 occluded copies of one occlusion map
// (window 60, stride 1), by the incremental path.
//
//	go test ./sdk/driver -run XXX -bench ModelService
func BenchmarkModelService(b *testing.B) {
	arch := nn.PaperArch()
	lay, err := nn.NewLayout(arch)
	if err != nil {
		b.Fatal(err)
	}
	p := nn.Params{Arch: arch, Data: make([]float32, lay.Size)}
	nn.Init(lay, p.Data, rand.New(rand.NewPCG(1, 2)))
	m, err := nn.NewModel(p)
	if err != nil {
		b.Fatal(err)
	}
	_, rpc, h := dialService(b, m)
	n, k := m.InputLen(), m.Classes()
	x := inputs(64, n, 9)
	targets := make([]int, 64)
	for i := range targets {
		targets[i] = i % k
	}
	starts := make([]int64, 581)
	for i := range starts {
		starts[i] = int64(i)
	}
	istarts := make([]int, len(starts))
	for i := range istarts {
		istarts[i] = i
	}
	ctx := context.Background()
	probs := make([]float32, 64*k)
	grad := make([]float32, 64*n)
	win := make([]float32, len(starts))
	for _, c := range []struct {
		name    string
		records int
		local   func()
		remote  func() error
	}{
		{"probs-1", 1, func() { m.Probs(ctx, probs[:k], x[:n]) }, func() error {
			_, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(x[:n])})
			return err
		}},
		{"probs-64", 64, func() { m.Probs(ctx, probs, x) }, func() error {
			_, err := rpc.Probs(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(x)})
			return err
		}},
		{"inputgrad-64", 64, func() { m.InputGrad(ctx, grad, nil, x, targets) }, func() error {
			_, err := rpc.InputGrad(ctx, &pb.ModelBatch{Handle: h, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets)})
			return err
		}},
		{"windows-581", 1, func() {
			nn.Perturbed(ctx, m, nn.Perturbation{X: x[:n], Class: 3, Starts: istarts, Width: 60, Channel: nn.AllChannels}, win)
		}, func() error {
			_, err := rpc.Windows(ctx, &pb.WindowsRequest{Handle: h, X: wire.Float32Bytes(x[:n]), Targets: []int64{3}, Starts: starts, Width: 60})
			return err
		}},
	} {
		b.Run(c.name+"/local", func(b *testing.B) {
			for b.Loop() {
				c.local()
			}
			b.ReportMetric(float64(c.records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
		b.Run(c.name+"/service", func(b *testing.B) {
			for b.Loop() {
				if err := c.remote(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
