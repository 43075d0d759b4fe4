package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

func archNet(tb testing.TB, name string) *graph.Net {
	tb.Helper()
	net, err := LoadArch(golden.RepoRoot(tb), name)
	if err != nil {
		tb.Fatal(err)
	}
	return net
}

// TestArchFLOPs: the count of the golden FCN from its layers in
// testdata/golden/archs/archs.py, 640 steps kept by every 'same' conv:
// conv1 1->16 k8, conv2 16->32 k5, conv3 32->16 k3, fc 16->16, each
// multiply-add two operations. archs_bench.py's hooks count 5407232 per
// input too (346062848 for its batch of 64).
func TestArchFLOPs(t *testing.T) {
	want := 2.0 * (16*1*8*640 + 32*16*5*640 + 16*32*3*640 + 16*16)
	got, err := ArchFLOPs(archNet(t, "fcn"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want != 5407232 {
		t.Fatalf("FCN: %g FLOPs an input, want %g", got, want)
	}
}

// TestArchFLOPsTransformer: the golden Transformer's count, from
// testdata/peers/transformer_golden.py's TxNet: the patch convolution 3
// -> 16 of kernel 32 at 20 positions; per encoder layer attention's
// projections (3E x E in, E x E out, E = 16) at L = 20 tokens and its
// two L x L x E products, and the feed-forward 16 -> 32 -> 16 at each
// token; the head 16 -> 16. archs_bench.py's hooks count 276992 too.
func TestArchFLOPsTransformer(t *testing.T) {
	const L, E = 20, 16
	layer := L*(3*E*E+E*E) + 2*L*L*E + L*(E*2*E+2*E*E)
	want := 2.0 * float64(16*3*32*L+2*layer+16*16)
	got, err := ArchFLOPs(archNet(t, "transformer"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want || want != 276992 {
		t.Fatalf("Transformer: %g FLOPs an input, want %g", got, want)
	}
}

// TestArchCasesSplit: each case runs on 1, 3 and 9 goroutines (9 leaves
// one idle for the 8 maps) without error, a measurement's best is at most
// its median, and the occlusion case counts 30 windows and the input for
// each of its 8 maps.
func TestArchCasesSplit(t *testing.T) {
	cases, err := ArchCases("fcn", archNet(t, "fcn"), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 || cases[0].Case != "forward64" || cases[1].Case != "occlusion" {
		t.Fatalf("cases %+v", cases)
	}
	for _, c := range cases {
		for _, w := range []int{1, 3, ArchMaps + 1} { // more workers than maps leaves some idle
			r, err := MeasureArch(context.Background(), c, w, 2, 0)
			if err != nil {
				t.Fatalf("%s, %d workers: %v", c.Case, w, err)
			}
			if r.Reps < 2 || !(r.Best > 0) || r.Best > r.Median {
				t.Fatalf("%s, %d workers: %+v", c.Case, w, r)
			}
		}
	}
	if want := ArchMaps * 31 * 5407232.0; cases[1].FLOPs != want {
		t.Fatalf("occlusion FLOPs %g, want %g (30 windows and the input, 8 maps)", cases[1].FLOPs, want)
	}
}

// TestParseArchReference: the harness's lines are read by net and case,
// the environment line gives what torch ran on, other lines are skipped,
// and an output without measurements is an error.
func TestParseArchReference(t *testing.T) {
	out := `{"op": "environment", "torch": "1.13.0a0", "threads": 2, "blas": "openblas (pthread)", "blas_path": "/x/libopenblasp.so", "blas_build": "generic", "mkldnn": true, "glibc_tunables": ""}
not json
{"net": "fcn", "case": "forward64", "ms": 4.8, "median": 5.1, "reps": 10, "flops": 346062848}
{"net": "fcn", "case": "epoch", "ms": 160.5, "median": 170, "reps": 3, "records": 512, "flops": 1}
{"net": "fcn", "case": "occlusion", "ms": 0, "median": 0, "reps": 0}
`
	r, err := ParseArchReference(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Env.Reported || r.Env.BLAS != "openblas (pthread)" || !r.Env.MKLDNN || r.Env.Threads != 2 || r.Torch != "1.13.0a0" {
		t.Fatalf("environment %+v torch %q", r.Env, r.Torch)
	}
	if c, ok := r.lookup("fcn", "forward64"); !ok || c.Ms != 4.8 || c.Median != 5.1 || c.FLOPs != 346062848 {
		t.Fatalf("forward64 %+v", c)
	}
	if c, ok := r.lookup("fcn", "epoch"); !ok || c.Records != 512 {
		t.Fatalf("epoch %+v", c)
	}
	if _, ok := r.lookup("fcn", "occlusion"); ok {
		t.Fatal("a line without a time was kept")
	}
	if _, err := ParseArchReference(strings.NewReader("{\"op\": \"environment\"}\n")); err == nil {
		t.Fatal("no measurements: want an error")
	}
}

// BenchmarkArchs: ms a run of every archs case on one goroutine (go test
// -bench Archs ./host/bench).
func BenchmarkArchs(b *testing.B) {
	for _, name := range ArchNets {
		cases, err := ArchCases(name, archNet(b, name), 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cases {
			b.Run(name+"/"+c.Case, func(b *testing.B) {
				for b.Loop() {
					if err := c.Run(context.Background(), 1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(c.FLOPs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestArchEpochCase: with epochN records the epoch case trains the
// network (the FCN, and the Transformer of three channels with its
// dropout) on 1 and 2 goroutines without error, counts 3 forward passes a
// record, and leaves the network it was made from as it was.
func TestArchEpochCase(t *testing.T) {
	for _, name := range []string{"fcn", "transformer"} {
		net := archNet(t, name)
		fwd, err := ArchFLOPs(net)
		if err != nil {
			t.Fatal(err)
		}
		theta := append([]float32(nil), net.Theta...)
		cases, err := ArchCases(name, net, 1, 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) != 3 || cases[2].Case != "epoch" || cases[2].FLOPs != 3*8*fwd || name == "fcn" && fwd != 5407232 {
			t.Fatalf("%s: cases %+v", name, cases)
		}
		for _, w := range []int{1, 2} {
			if err := cases[2].Run(context.Background(), w); err != nil {
				t.Fatalf("%s, %d workers: %v", name, w, err)
			}
		}
		for i, v := range net.Theta {
			if v != theta[i] {
				t.Fatalf("%s: parameter %d changed from %g to %g", name, i, theta[i], v)
			}
		}
	}
}

// BenchmarkArchEpoch: ms a training epoch of 512 records (the bench
// command's default) of each golden network on 2 goroutines (go test
// -bench ArchEpoch ./host/bench).
func BenchmarkArchEpoch(b *testing.B) {
	for _, name := range ArchNets {
		cases, err := ArchCases(name, archNet(b, name), 1, 512)
		if err != nil {
			b.Fatal(err)
		}
		c := cases[len(cases)-1]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := c.Run(context.Background(), 2); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(c.FLOPs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
