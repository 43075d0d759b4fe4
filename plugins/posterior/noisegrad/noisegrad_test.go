package noisegrad

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// base is the paper network with random parameters and batchnorm
// statistics, as posterior.deterministic's artifact holds it.
func base(t *testing.T) *sdk.Artifact {
	t.Helper()
	a := nn.PaperArch()
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	r := rand.New(rand.NewPCG(1, 2))
	for j := range p {
		p[j] = float32(r.NormFloat64())
	}
	return &sdk.Artifact{Arch: a, Tensors: map[string][]float32{baseTensor: p}}
}

func sample(t *testing.T, cfg sdk.Config, seeds []uint64) (theta []float32, draws []nn.Params, mask []bool) {
	t.Helper()
	p := New()
	b := base(t)
	art, err := p.Fit(context.Background(), sdk.FitRequest{Base: b, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	draws, err = p.Sample(context.Background(), art, sdk.SampleRequest{Seeds: seeds, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	lay, _ := nn.NewLayout(b.Arch)
	return b.Tensors[baseTensor], draws, lay.TrainableMask()
}

// TestNoiseIsTheStatedGaussian: each draw's trainable parameters are the
// base's times 1 + sigma eps with eps of mean 0 and standard deviation 1
// (within 4 standard errors over the paper network's parameters), its
// batchnorm statistics the base's bits; with sigma 0 every draw is the
// base.
func TestNoiseIsTheStatedGaussian(t *testing.T) {
	const sigma = 0.2
	theta, draws, mask := sample(t, sdk.Config{"sigma": sigma}, []uint64{3, 4})
	for s, d := range draws {
		var n, sum, sq float64
		buffers := 0
		for j, v := range d.Data {
			if !mask[j] {
				buffers++
				if v != theta[j] {
					t.Fatalf("draw %d: buffer %d is %g, the base's %g", s, j, v, theta[j])
				}
				continue
			}
			if math.Abs(float64(theta[j])) < 1e-3 {
				continue
			}
			eps := (float64(v)/float64(theta[j]) - 1) / sigma
			n++
			sum += eps
			sq += eps * eps
		}
		mean := sum / n
		sd := math.Sqrt(sq/n - mean*mean)
		if buffers == 0 || math.Abs(mean) > 4/math.Sqrt(n) || math.Abs(sd-1) > 4/math.Sqrt(2*n) {
			t.Errorf("draw %d: eps of mean %.4f, sd %.4f over %.0f parameters (%d buffers); want 0 and 1", s, mean, sd, n, buffers)
		}
	}
	theta, draws, _ = sample(t, sdk.Config{"sigma": 0.0}, []uint64{3})
	for j, v := range draws[0].Data {
		if v != theta[j] {
			t.Fatalf("sigma 0: parameter %d is %g, the base's %g", j, v, theta[j])
		}
	}
}

// TestDrawsKeyedBySeed: a draw is the same network whatever the other
// draws of the request, and another seed gives another.
func TestDrawsKeyedBySeed(t *testing.T) {
	_, two, _ := sample(t, sdk.Config{}, []uint64{10, 11})
	_, one, _ := sample(t, sdk.Config{}, []uint64{11})
	differ := false
	for j := range one[0].Data {
		if one[0].Data[j] != two[1].Data[j] {
			t.Fatalf("parameter %d: alone %g, second of two %g", j, one[0].Data[j], two[1].Data[j])
		}
		differ = differ || two[0].Data[j] != two[1].Data[j]
	}
	if !differ {
		t.Error("seeds 10 and 11 give the same network")
	}
}

// TestErrors: a bad table or a missing base is an error naming it.
func TestErrors(t *testing.T) {
	p := New()
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"sigma": -0.1}, "0 <= sigma <= 10"},
		{sdk.Config{"sigma": "big"}, `"sigma"`},
		{sdk.Config{"p": 0.2}, `"p"`},
	} {
		if err := p.Check(c.cfg, 4); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want an error with %q", c.cfg, err, c.want)
		}
	}
	if err := p.Check(sdk.Config{}, 0); err == nil {
		t.Error("0 draws: no error")
	}
	if _, err := p.Fit(context.Background(), sdk.FitRequest{}); err == nil || !strings.Contains(err.Error(), Base) {
		t.Errorf("no base: %v", err)
	}
	b := base(t)
	b.Tensors = map[string][]float32{"other": {1}}
	if _, err := p.Fit(context.Background(), sdk.FitRequest{Base: b}); err == nil || !strings.Contains(err.Error(), baseTensor) {
		t.Errorf("a base without its network: %v", err)
	}
}
