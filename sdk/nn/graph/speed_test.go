package graph

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// benchNet compiles a golden network with PyTorch's weights.
func benchNet(b *testing.B, name string) *Net {
	b.Helper()
	for _, a := range golden.TorchArchs {
		if a.Name != name {
			continue
		}
		spec, err := ReadSpecFile(filepath.Join(golden.RepoRoot(b), "recipes", "archs", name+".toml"))
		if err != nil {
			b.Fatal(err)
		}
		net, err := Compile(spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := net.LoadSafetensors(golden.File(b, "archs", name+"/model.safetensors")); err != nil {
			b.Fatal(err)
		}
		return net
	}
	b.Fatalf("no golden network %q", name)
	return nil
}

// macs counts the multiply-adds of one input's pass through the conv and
// linear nodes: a conv's weights times its output length, a linear's
// weights.
func macs(b *testing.B, net *Net) float64 {
	var f float64
	for _, p := range net.Params() {
		node, ok := strings.CutSuffix(p.Name, ".weight")
		if !ok || len(p.Shape) < 2 {
			continue // batchnorm weights are vectors
		}
		l, err := net.Layer(node)
		if err != nil {
			b.Fatal(err)
		}
		f += float64(p.Len * l.Shape.T)
	}
	return f
}

var speedNets = []string{"fcn", "resnet1d", "inceptiontime"}

// BenchmarkForward64: Net.Forward of a batch of 64 inputs; GFLOP/s counts
// 2 x the multiply-adds of the conv and linear layers.
func BenchmarkForward64(b *testing.B) {
	for _, name := range speedNets {
		b.Run(name, func(b *testing.B) {
			net := benchNet(b, name)
			const B = 64
			r := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, B*net.InShape().Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			p := make([]float32, B*net.Classes())
			flops := 2 * B * macs(b, net)
			for b.Loop() {
				if err := net.Forward(p, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGrad64: Net.Grad (input and parameter gradients) of a batch of
// 64 inputs; GFLOP/s counts 3 passes' conv and linear work (forward, dx,
// dw).
func BenchmarkGrad64(b *testing.B) {
	for _, name := range speedNets {
		b.Run(name, func(b *testing.B) {
			net := benchNet(b, name)
			const B = 64
			r := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, B*net.InShape().Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			tg := make([]int, B)
			dx, dp := make([]float32, len(x)), make([]float32, net.NumParams())
			flops := 3 * 2 * B * macs(b, net)
			for b.Loop() {
				if err := net.Grad(x, GradRequest{Targets: tg, Input: dx, Params: dp}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
