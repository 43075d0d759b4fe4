package laplace

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// bnArch is a small network with every kind of parameter: conv, a
// batchnorm (whose running statistics are buffers), dense layers.
func bnArch() nn.Arch {
	return nn.Arch{Name: "laplace-test", InChannels: 1, InLen: 16, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 4, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindBatchNorm1D, Name: "bn1"},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc1", Out: 6},
		{Kind: nn.KindReLU},
		{Kind: nn.KindDense, Name: "fc2", Out: 3},
	}}
}

// smoothArch has no ReLU or max pooling, whose kinks and argmax a finite
// difference may cross (nn's own tests check their gradients): conv,
// batchnorm over (channel, time), dense, and the softmax of the loss.
func smoothArch() nn.Arch {
	return nn.Arch{Name: "laplace-fd", InChannels: 1, InLen: 16, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 3, Kernel: 3},
		{Kind: nn.KindBatchNorm1D, Name: "bn1"},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
}

// tinyData is n noisy waveforms of 3 classes, class c a sine of amplitude
// c; noise sets how hard they are to tell apart.
func tinyData(n int, seed uint64, noise float64) sdk.Dataset {
	r := rng.New(seed)
	d := sdk.Dataset{N: n, Len: 16, X: make([]float32, n*16), Y: make([]int, n)}
	for i := range n {
		d.Y[i] = i % 3
		for j := range 16 {
			d.X[i*16+j] = float32(noise*r.NormFloat64() + float64(d.Y[i])*math.Sin(float64(j)))
		}
	}
	return d
}

func training(epochs int) nn.TrainConfig {
	return nn.TrainConfig{Epochs: epochs, Batch: 8, LR: 0.01, WeightDecay: 1e-4, StepEvery: 10, StepGamma: 0.5, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// randomParams are parameters with nontrivial batchnorm running
// statistics (mean in [-0.5, 0.5], variance in [0.5, 1.5]).
func randomParams(t testing.TB, a nn.Arch, seed uint64) []float32 {
	t.Helper()
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	nn.Init(lay, p, rng.New(seed))
	r := rng.New(seed + 1)
	for _, ti := range lay.Tensors {
		v := p[ti.Offset : ti.Offset+ti.Size]
		for i := range v {
			switch {
			case strings.HasSuffix(ti.Name, "running_mean"):
				v[i] = float32(r.Float64() - 0.5)
			case strings.HasSuffix(ti.Name, "running_var"):
				v[i] = float32(0.5 + r.Float64())
			case strings.HasPrefix(ti.Name, "bn1."):
				v[i] += float32(0.3 * r.NormFloat64())
			}
		}
	}
	return p
}

// trained trains the base network, as posterior.deterministic would,
// and returns its artifact: an overconfident MAP, its last layer scaled
// by 4 (a temperature of 1/4), so that calibration has a root. (The
// tiny network with the checkpoint of the lowest validation loss is as
// confident as it is accurate, or less.)
var trained = sync.OnceValue(func() sdk.Artifact {
	res, err := nn.Train(context.Background(), bnArch(), tinyData(60, 1, 0.8), tinyData(30, 2, 0.8), training(30), 5, nn.TrainOptions{Workers: 1})
	if err != nil {
		panic(err)
	}
	lay, _ := nn.NewLayout(bnArch())
	for _, name := range []string{"fc2.weight", "fc2.bias"} {
		v := lay.View(res.Params.Data, name)
		for i := range v {
			v[i] *= 4
		}
	}
	return sdk.Artifact{Arch: bnArch(), Tensors: map[string][]float32{"member.0": res.Params.Data}, Meta: map[string]string{"members": "1", "seed.0": "5"}}
})

func fitRequest(cfg sdk.Config) sdk.FitRequest {
	base := trained()
	return sdk.FitRequest{Arch: bnArch(), Train: tinyData(60, 1, 0.8), Val: tinyData(70, 2, 0.8), Training: training(30), Config: cfg, Seed: 9, Workers: 2, Base: &base}
}

// logLik is log p(y | x, theta) of one record in float64 from the
// float32 eval-mode logits.
func logLik(net nn.Pass, theta, x []float32, y int) float64 {
	return -nn.CrossEntropy(nil, net.Forward(theta, x, false, nil), []int{y}, net.Classes())
}

// TestFisherFiniteDifferences: F_i is the sum over records of the square
// of a central finite difference of log p(y | x, theta) in theta_i, in
// eval mode (batchnorm by its running statistics), for every trainable
// parameter; buffers get exactly 0.
func TestFisherFiniteDifferences(t *testing.T) {
	a := smoothArch()
	theta := randomParams(t, a, 3)
	d := tinyData(5, 4, 0.5)
	F, err := Fisher(context.Background(), a, theta, d, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	net, err := nn.NewPass(a, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	lay := net.Layout()
	mask := lay.TrainableMask()
	// float32 logits carry ~1e-7 relative error; with h = 1e-2 the
	// difference quotient errs by ~1e-5 from rounding and by O(h^2)
	// relative from truncation (they agree to 1e-4 here): 0.1% on F is
	// ample, and a Fisher of means, of unsquared or of train-mode
	// gradients misses it by far.
	const h = 1e-2
	p := slices.Clone(theta)
	for i := range theta {
		if !mask[i] {
			if F[i] != 0 {
				t.Errorf("buffer %d: F = %v, want 0", i, F[i])
			}
			continue
		}
		var want float64
		for r := range d.N {
			p[i] = theta[i] + h
			up := logLik(net, p, d.Row(r), d.Y[r])
			p[i] = theta[i] - h
			down := logLik(net, p, d.Row(r), d.Y[r])
			p[i] = theta[i]
			g := (up - down) / (2 * h)
			want += g * g
		}
		if math.Abs(F[i]-want) > 1e-3*want+1e-7 {
			t.Errorf("parameter %d: F = %.6g, finite differences %.6g", i, F[i], want)
		}
	}
}

// TestFisherLogistic: for softmax regression (one dense layer) the
// per-record gradient of log p(y|x) is (e_y - p) x^T for the weights and
// e_y - p for the bias, so F has a closed form.
func TestFisherLogistic(t *testing.T) {
	const D, K, N = 5, 3, 2*chunk + 7 // three chunks
	a := nn.Arch{Name: "logistic", InChannels: D, InLen: 1, Layers: []nn.Layer{{Kind: nn.KindDense, Name: "fc", Out: K}}}
	r := rng.New(7)
	theta := make([]float32, K*D+K)
	for i := range theta {
		theta[i] = float32(r.NormFloat64())
	}
	d := sdk.Dataset{N: N, Len: D, X: make([]float32, N*D), Y: make([]int, N)}
	for i := range d.X {
		d.X[i] = float32(r.NormFloat64())
	}
	for n := range N {
		d.Y[n] = n % K
	}
	want := make([]float64, len(theta))
	for n := range N {
		x := d.Row(n)
		z := make([]float64, K)
		for o := range K {
			z[o] = float64(theta[K*D+o])
			for i := range D {
				z[o] += float64(theta[o*D+i]) * float64(x[i])
			}
		}
		m := slices.Max(z)
		var s float64
		for o := range K {
			s += math.Exp(z[o] - m)
		}
		for o := range K {
			e := -math.Exp(z[o]-m) / s
			if o == d.Y[n] {
				e++
			}
			for i := range D {
				g := e * float64(x[i])
				want[o*D+i] += g * g
			}
			want[K*D+o] += e * e
		}
	}
	F, err := Fisher(context.Background(), a, theta, d, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(F[i]-want[i]) > 1e-5*want[i]+1e-9 {
			t.Errorf("parameter %d: F = %.8g, closed form %.8g", i, F[i], want[i])
		}
	}
}

// TestFisherWorkers: the Fisher diagonal is the same bytes for any number
// of workers, over a set that is not a whole number of chunks; progress
// counts the records up to all of them.
func TestFisherWorkers(t *testing.T) {
	a := bnArch()
	theta := randomParams(t, a, 5)
	for _, n := range []int{3*chunk + 5, 2 * chunk} {
		d := tinyData(n, 6, 0.5)
		chunks := (n + chunk - 1) / chunk
		var ref []float64
		for _, w := range []int{1, 2, 3, 8, 0} {
			var seen []int
			var mu sync.Mutex
			F, err := Fisher(context.Background(), a, theta, d, w, func(done int) {
				mu.Lock()
				seen = append(seen, done)
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(seen) || len(seen) != chunks || seen[chunks-1] != n {
				t.Errorf("%d records, %d workers: progress %v, want %d increasing counts up to %d", n, w, seen, chunks, n)
			}
			if ref == nil {
				ref = F
				continue
			}
			for i := range F {
				if math.Float64bits(F[i]) != math.Float64bits(ref[i]) {
					t.Fatalf("%d records, %d workers: F[%d] = %v, with 1 worker %v", n, w, i, F[i], ref[i])
				}
			}
		}
	}
	d := tinyData(10, 6, 0.5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Fisher(ctx, a, theta, d, 2, nil); err == nil {
		t.Error("a cancelled Fisher returned no error")
	}
	if _, err := Fisher(context.Background(), a, theta[1:], d, 1, nil); err == nil || !strings.Contains(err.Error(), "parameters, arch") {
		t.Errorf("short theta: %v", err)
	}
	if _, err := Fisher(context.Background(), a, theta, sdk.Dataset{Len: 16}, 1, nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty set: %v", err)
	}
}

// handArtifact is an artifact with a known theta and Fisher diagonal
// spanning four orders of magnitude.
func handArtifact(t testing.TB, s, delta float64) sdk.Artifact {
	a := bnArch()
	theta := randomParams(t, a, 8)
	lay, _ := nn.NewLayout(a)
	fisher := make([]float32, lay.Size)
	mask := lay.TrainableMask()
	for i := range fisher {
		if mask[i] {
			fisher[i] = float32(math.Pow(10, float64(i%5)-1)) * 50 // 5 .. 5e4
		}
	}
	return sdk.Artifact{Arch: a, Tensors: map[string][]float32{"map": theta, "fisher": fisher},
		Meta: map[string]string{"scale": strconv.FormatFloat(s, 'g', -1, 64), "delta": strconv.FormatFloat(delta, 'g', -1, 64)}}
}

// TestDrawVariance: over many draws, every trainable parameter has mean
// theta_MAP and variance 1/(s F + delta); batchnorm running statistics are
// theta_MAP's in every draw.
func TestDrawVariance(t *testing.T) {
	const S, s, delta = 4000, 0.5, 20.0
	art := handArtifact(t, s, delta)
	seeds := make([]uint64, S)
	for i := range seeds {
		seeds[i] = rng.Key(1, "test", "", i, -1)
	}
	draws, err := New().Sample(context.Background(), art, sdk.SampleRequest{Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	lay, _ := nn.NewLayout(art.Arch)
	mask := lay.TrainableMask()
	theta, fisher := art.Tensors["map"], art.Tensors["fisher"]
	// The sample variance of S normal draws has relative standard
	// deviation sqrt(2/(S-1)) (2.2% at S = 4000) and the sample mean
	// standard deviation sd/sqrt(S); with ~100 parameters, 5 standard
	// deviations bound every one of them but with probability ~1e-4.
	tolVar := 5 * math.Sqrt(2.0/(S-1))
	for i := range theta {
		if !mask[i] {
			for k, d := range draws {
				if d.Data[i] != theta[i] {
					t.Fatalf("draw %d: buffer %d is %v, the MAP's %v", k, i, d.Data[i], theta[i])
				}
			}
			continue
		}
		want := 1 / (s*float64(fisher[i]) + delta)
		var m, v float64
		for _, d := range draws {
			m += float64(d.Data[i])
		}
		m /= S
		for _, d := range draws {
			v += (float64(d.Data[i]) - m) * (float64(d.Data[i]) - m)
		}
		v /= S - 1
		if math.Abs(v/want-1) > tolVar {
			t.Errorf("parameter %d (F %v): variance %.4g, want %.4g (±%.0f%%)", i, fisher[i], v, want, 100*tolVar)
		}
		if math.Abs(m-float64(theta[i])) > 5*math.Sqrt(want/S) {
			t.Errorf("parameter %d: mean %.6g, MAP %.6g", i, m, theta[i])
		}
	}
}

// TestDrawSeeds: draw k depends on Seeds[k] alone, and is theta_MAP plus
// the standard normals of the stream DrawKey(seed), taken in parameter
// order over the trainable entries, times 1/sqrt(s F + delta).
func TestDrawSeeds(t *testing.T) {
	art := handArtifact(t, 2, 100)
	seeds := []uint64{11, 12, 13}
	all, err := New().Sample(context.Background(), art, sdk.SampleRequest{Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	last, err := New().Sample(context.Background(), art, sdk.SampleRequest{Seeds: seeds[2:]})
	if err != nil || !reflect.DeepEqual(last[0], all[2]) {
		t.Errorf("draw of seed 13 alone differs from the third of three (%v)", err)
	}
	if reflect.DeepEqual(all[0].Data, all[1].Data) {
		t.Error("two seeds gave one draw")
	}
	lay, _ := nn.NewLayout(art.Arch)
	mask := lay.TrainableMask()
	r := rng.New(rng.Key(12, "laplace-draw", "", -1, -1))
	for i, th := range art.Tensors["map"] {
		want := th
		if mask[i] {
			want = float32(float64(th) + r.NormFloat64()/math.Sqrt(2*float64(art.Tensors["fisher"][i])+100))
		}
		if all[1].Data[i] != want {
			t.Fatalf("draw of seed 12, parameter %d: %v, want %v", i, all[1].Data[i], want)
		}
	}
	if !reflect.DeepEqual(all[0].Arch, art.Arch) {
		t.Errorf("draw arch %+v", all[0].Arch)
	}
}

// TestCalibration: on a small trained network, the calibrated scale's
// sampled predictive has a mean validation confidence within ConfTol of
// the MAP's validation accuracy, recomputed here through the folded
// inference model; the metadata records it.
func TestCalibration(t *testing.T) {
	req := fitRequest(sdk.Config{"delta": 1.0, "calibration_draws": int64(8)})
	var steps []sdk.Progress
	req.Progress = func(p sdk.Progress) { steps = append(steps, p) }
	art, err := New().Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m := art.Meta
	if m["calibrated"] != "true" || !strings.HasPrefix(m["calibration"], "root found by bisection (") || m["note"] != "" {
		t.Fatalf("meta %v, want a root", m)
	}
	s, _ := strconv.ParseFloat(m["scale"], 64)
	target := accuracy(t, art.Tensors["map"], req.Val)
	if got, _ := strconv.ParseFloat(m["map_accuracy"], 64); math.Abs(got-target) > 1e-6 {
		t.Errorf("meta map_accuracy %v, recomputed %v", got, target)
	}
	lay, _ := nn.NewLayout(art.Arch)
	sd := make([]float64, lay.Size)
	for i, tr := range lay.TrainableMask() {
		if tr {
			sd[i] = 1 / math.Sqrt(s*float64(art.Tensors["fisher"][i])+1)
		}
	}
	mean := make([]float64, req.Val.N*3)
	for k := range 8 {
		p := make([]float32, lay.Size)
		Perturb(p, art.Tensors["map"], sd, rng.New(rng.Key(9, "laplace-calibration", "", -1, k)))
		for j, v := range probs(t, p, req.Val) {
			mean[j] += v / 8
		}
	}
	conf, _ := confAcc(mean, req.Val.Y)
	if math.Abs(conf-target) > ConfTol+1e-5 {
		t.Errorf("scale %v: mean confidence %.5f, target (MAP accuracy) %.5f; want within %v", s, conf, target, ConfTol)
	}
	if got, _ := strconv.ParseFloat(m["confidence"], 64); math.Abs(got-conf) > 1e-5 {
		t.Errorf("meta confidence %v, recomputed %v", got, conf)
	}
	if mc, _ := strconv.ParseFloat(m["map_confidence"], 64); !(mc > target) {
		t.Errorf("the MAP's confidence %v is not above its accuracy %v: the case does not test the calibration", mc, target)
	}
	// Progress: the Fisher diagonal's records, then the calibration's
	// evaluations of at most 2 + MaxBisections.
	var cal []int
	for _, p := range steps {
		if strings.HasPrefix(p.Message, "calibrating the scale: s ") {
			if p.Total != MaxBisections+2 {
				t.Errorf("calibration progress %+v, want a total of %d", p, MaxBisections+2)
			}
			cal = append(cal, p.Done)
		} else if p.Total != req.Train.N || !strings.HasPrefix(p.Message, "Fisher diagonal: ") {
			t.Errorf("progress %+v, want the Fisher diagonal's of %d records", p, req.Train.N)
		}
	}
	if len(cal) < 3 || !slices.IsSorted(cal) || cal[0] != 1 || cal[len(cal)-1] != len(cal) {
		t.Errorf("calibration progress %v, want 1, 2, ... (the ends, then halvings)", cal)
	}
	// The same request gives the same scale.
	again, err := New().Fit(context.Background(), fitRequest(sdk.Config{"delta": 1.0, "calibration_draws": int64(8)}))
	if err != nil || again.Meta["scale"] != m["scale"] {
		t.Errorf("second fit: scale %v, first %v (%v)", again.Meta["scale"], m["scale"], err)
	}
}

// accuracy is the eval-mode validation accuracy of a network.
func accuracy(t *testing.T, p []float32, d sdk.Dataset) float64 {
	_, acc := confAcc(probs(t, p, d), d.Y)
	return acc
}

// probs are a network's class probabilities through nn.NewModel (folded
// batchnorm), in float64.
func probs(t *testing.T, p []float32, d sdk.Dataset) []float64 {
	t.Helper()
	m, err := nn.NewModel(nn.Params{Arch: bnArch(), Data: p})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, d.N*3)
	if err := m.Probs(context.Background(), out, d.X); err != nil {
		t.Fatal(err)
	}
	o := make([]float64, len(out))
	for i, v := range out {
		o[i] = float64(v)
	}
	return o
}

// TestNoRoot: when the mean confidence minus the MAP's accuracy has one
// sign at both ends of the bracket, the end towards the target is taken
// (scale_max when the predictive is less confident at both, scale_min
// when more), and the metadata and its note say why. A prior precision so
// large that every draw is the MAP to within rounding keeps the
// confidence at the MAP's: above the target for the overconfident
// (sharpened) MAP, below it for the trained network as it is (which is
// underconfident). With a wide posterior around the latter, the noisiest
// end has the confidence nearer the target, of draws that agree by chance
// (accuracy near a third): scale_max is still taken. A tiny prior
// precision with tiny scales drowns the network in noise.
func TestNoRoot(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   sdk.Config
		plain bool // the base network unsharpened
		end   string
		in    string
	}{
		{"overconfident MAP", sdk.Config{"delta": 1e12, "scale_min": 1.0, "scale_max": 2.0}, false, "scale_min", "more confident than the MAP is accurate at both ends (a lower scale_min"},
		{"underconfident MAP", sdk.Config{"delta": 1e12, "scale_min": 1.0, "scale_max": 2.0}, true, "scale_max", "and so is the MAP network itself (mean confidence 0."},
		{"underconfident MAP, wide posterior", sdk.Config{"delta": 1.0}, true, "scale_max", "and so is the MAP network itself (mean confidence 0."},
		{"too wide", sdk.Config{"delta": 1e-2, "scale_min": 1e-6, "scale_max": 1e-5}, false, "scale_max", "less confident than the MAP is accurate at both ends (a higher scale_max"},
	} {
		c.cfg["calibration_draws"] = int64(4)
		req := fitRequest(c.cfg)
		if c.plain {
			base := plainBase()
			req.Base = &base
		}
		art, err := New().Fit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		m := art.Meta
		lo, _ := strconv.ParseFloat(m["confidence_scale_min"], 64)
		hi, _ := strconv.ParseFloat(m["confidence_scale_max"], 64)
		target, _ := strconv.ParseFloat(m["map_accuracy"], 64)
		if (lo < target) != (hi < target) || (c.end == "scale_max") != (hi < target) || m["confidence"] != m["confidence_"+c.end] {
			t.Errorf("%s: took %s (confidence %s); the confidences at the ends are %v and %v for a target %v", c.name, c.end, m["confidence"], lo, hi, target)
		}
		if m["calibration"] != "no root in the bracket: "+c.end+" taken" || m["scale"] != m[c.end] || m["calibrated"] != "true" ||
			!strings.Contains(m["note"], "calibration found no scale in ["+m["scale_min"]+", "+m["scale_max"]+"]") || !strings.Contains(m["note"], c.in) ||
			!strings.Contains(m["note"], "took "+c.end+" = "+m["scale"]+", the end towards the target") {
			t.Errorf("%s: meta %v", c.name, m)
		}
	}
}

// plainBase is the trained base network without the sharpening.
func plainBase() sdk.Artifact {
	res, err := nn.Train(context.Background(), bnArch(), tinyData(60, 1, 0.8), tinyData(30, 2, 0.8), training(30), 5, nn.TrainOptions{Workers: 1})
	if err != nil {
		panic(err)
	}
	return sdk.Artifact{Arch: bnArch(), Tensors: map[string][]float32{"member.0": res.Params.Data}}
}

// TestScaleGiven: a given scale is used as it is; the artifact is the
// base's network and its Fisher diagonal, and records the scale, delta
// and the validation figures.
func TestScaleGiven(t *testing.T) {
	req := fitRequest(sdk.Config{"scale": 3.5, "delta": 50.0, "seed": int64(5)})
	art, err := New().Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m := art.Meta
	for k, v := range map[string]string{"scale": "3.5", "delta": "50", "calibrated": "false", "calibration": "scale given", "base_seed": "5", "fisher_records": "60"} {
		if m[k] != v {
			t.Errorf("meta %s = %q, want %q", k, m[k], v)
		}
	}
	for _, k := range []string{"map_accuracy", "map_confidence", "confidence", "predictive_accuracy"} {
		if _, err := strconv.ParseFloat(m[k], 64); err != nil {
			t.Errorf("meta %s = %q, want a number", k, m[k])
		}
	}
	if _, ok := m["scale_min"]; ok {
		t.Errorf("meta %v has calibration keys for a given scale", m)
	}
	if !reflect.DeepEqual(art.Tensors["map"], req.Base.Tensors["member.0"]) {
		t.Error("artifact map is not the base network")
	}
	F, err := Fisher(context.Background(), req.Base.Arch, req.Base.Tensors["member.0"], req.Train, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range F {
		if art.Tensors["fisher"][i] != float32(v) {
			t.Fatalf("artifact fisher[%d] = %v, Fisher %v", i, art.Tensors["fisher"][i], v)
		}
	}
	// Without a validation set a given scale still fits, without figures.
	req.Val = sdk.Dataset{}
	art, err = New().Fit(context.Background(), req)
	if err != nil || art.Meta["scale"] != "3.5" || art.Meta["confidence"] != "" {
		t.Errorf("no validation set: meta %v, %v", art.Meta, err)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		cfg   sdk.Config
		draws int
		want  string
	}{
		{sdk.Config{}, 20, ""},
		{sdk.Config{"seed": int64(0), "delta": int64(10), "scale": 1e-3}, 1, ""},
		{sdk.Config{"calibration_draws": int64(1), "scale_min": 1e-8, "scale_max": int64(5)}, 1, ""},
		{sdk.Config{"seed": int64(-1)}, 1, `key "seed": want a nonnegative integer`},
		{sdk.Config{"seed": "x"}, 1, `key "seed": want a nonnegative integer`},
		{sdk.Config{"delta": 0.0}, 1, `key "delta": 0 is out of range (accepted: a finite number > 0)`},
		{sdk.Config{"delta": -1.0}, 1, `key "delta": -1 is out of range`},
		{sdk.Config{"delta": "big"}, 1, `key "delta": want a number`},
		{sdk.Config{"scale": 0.0}, 1, `key "scale": 0 is out of range`},
		{sdk.Config{"scale": math.Inf(1)}, 1, `key "scale"`},
		{sdk.Config{"scale": 1.0, "calibration_draws": int64(5)}, 1, `key "calibration_draws": only used to calibrate the scale, and scale is given`},
		{sdk.Config{"scale": 1.0, "scale_max": 5.0}, 1, `key "scale_max": only used to calibrate`},
		{sdk.Config{"scale": 1.0, "scale_min": 5.0}, 1, `key "scale_min": only used to calibrate`},
		{sdk.Config{"calibration_draws": int64(0)}, 1, `key "calibration_draws": 0 is out of range (accepted: 1..1000)`},
		{sdk.Config{"calibration_draws": int64(1001)}, 1, `key "calibration_draws": 1001 is out of range`},
		{sdk.Config{"scale_min": 0.0}, 1, `key "scale_min": 0 is out of range`},
		{sdk.Config{"scale_max": -2.0}, 1, `key "scale_max": -2 is out of range`},
		{sdk.Config{"scale_min": 5.0, "scale_max": 5.0}, 1, `key "scale_max": scale_min 5 must be below scale_max 5 (accepted: 0 < scale_min < scale_max)`},
		{sdk.Config{"scale_min": 1e5}, 1, `key "scale_min": scale_min 100000 must be below scale_max 10000`},
		{sdk.Config{"scale_max": 1e-5}, 1, `key "scale_max": scale_min 0.0001 must be below scale_max 1e-05`},
		{sdk.Config{"members": int64(3)}, 1, `unknown key "members"`},
		{sdk.Config{}, 0, `key "draws": 0 (accepted: >= 1)`},
	} {
		err := New().Check(c.cfg, c.draws)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ID+": ")) {
			t.Errorf("Check(%v, %d): %v, want %q", c.cfg, c.draws, err, c.want)
		}
	}
}

// TestFitErrors: Fit needs its base's network, and a validation set to
// calibrate on; Sample needs the artifact Fit makes.
func TestFitErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		edit func(*sdk.FitRequest)
		want string
	}{
		{"no base", func(r *sdk.FitRequest) { r.Base = nil }, "no base artifact (the host fits posterior.deterministic first"},
		{"ensemble base", func(r *sdk.FitRequest) {
			r.Base = &sdk.Artifact{Arch: bnArch(), Tensors: map[string][]float32{"member.1": r.Base.Tensors["member.0"]}}
		}, `the base artifact has no network "member.0" of`},
		{"short base", func(r *sdk.FitRequest) {
			r.Base = &sdk.Artifact{Arch: bnArch(), Tensors: map[string][]float32{"member.0": r.Base.Tensors["member.0"][1:]}}
		}, `has no network "member.0" of`},
		{"bad arch", func(r *sdk.FitRequest) { r.Base = &sdk.Artifact{Arch: nn.Arch{Name: "x"}} }, "base artifact: arch"},
		{"no validation set", func(r *sdk.FitRequest) { r.Val = sdk.Dataset{} }, `calibrating the scale needs a validation set`},
		{"bad config", func(r *sdk.FitRequest) { r.Config = sdk.Config{"delta": -1.0} }, `key "delta"`},
		{"bad training set", func(r *sdk.FitRequest) { r.Train.Y[0] = 7 }, "training set: row 0 has label 7"},
	} {
		req := fitRequest(sdk.Config{"calibration_draws": int64(2)})
		req.Train.Y = slices.Clone(req.Train.Y)
		c.edit(&req)
		if _, err := New().Fit(ctx, req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := New().Fit(ctx2, fitRequest(sdk.Config{})); err == nil {
		t.Error("a cancelled Fit returned no error")
	}

	art := handArtifact(t, 1, 100)
	for _, c := range []struct {
		name string
		edit func(*sdk.Artifact)
		want string
	}{
		{"no map", func(a *sdk.Artifact) { delete(a.Tensors, "map") }, `no tensor "map"`},
		{"no fisher", func(a *sdk.Artifact) { delete(a.Tensors, "fisher") }, `no tensor "fisher"`},
		{"short fisher", func(a *sdk.Artifact) { a.Tensors["fisher"] = a.Tensors["fisher"][1:] }, "tensors map and fisher have"},
		{"short map", func(a *sdk.Artifact) { a.Tensors["map"] = a.Tensors["map"][1:] }, "tensors map and fisher have"},
		{"bad arch", func(a *sdk.Artifact) { a.Arch = nn.Arch{Name: "x"} }, "arch"},
		{"no scale", func(a *sdk.Artifact) { delete(a.Meta, "scale") }, `artifact meta scale "" and delta "100"`},
		{"zero delta", func(a *sdk.Artifact) { a.Meta["delta"] = "0" }, `want numbers > 0`},
		{"negative scale", func(a *sdk.Artifact) { a.Meta["scale"] = "-1" }, `want numbers > 0`},
		{"zero scale", func(a *sdk.Artifact) { a.Meta["scale"] = "0" }, `want numbers > 0`},
	} {
		a := handArtifact(t, 1, 100)
		c.edit(&a)
		if _, err := New().Sample(ctx, a, sdk.SampleRequest{Seeds: []uint64{1}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Sample, %s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := New().Sample(ctx2, art, sdk.SampleRequest{Seeds: []uint64{1}}); err == nil {
		t.Error("a cancelled Sample returned no error")
	}
}

func TestInfo(t *testing.T) {
	info := New().Info()
	if info.ID != ID || info.Base != "posterior.deterministic" || !reflect.DeepEqual(info.BaseKeys, []string{"seed"}) || info.Finite {
		t.Errorf("Info %+v", info)
	}
	if k, _, err := sdk.Describe(New()); err != nil || k != sdk.KindPosterior {
		t.Errorf("Describe: %v %v", k, err)
	}
}

func TestConformance(t *testing.T) {
	req := fitRequest(sdk.Config{"calibration_draws": int64(3), "delta": 2.0})
	sdktest.Posterior(t, New(), sdktest.PosteriorCase{Arch: req.Arch, Train: req.Train, Val: req.Val, Training: req.Training, Config: req.Config, Seed: 3, Draws: 4, Base: req.Base})
}

// TestBisectionStops: a bisection that does not reach the tolerance
// stops after its halvings and says how far it is; one that does says
// after how many.
func TestBisectionStops(t *testing.T) {
	req := fitRequest(sdk.Config{})
	lay, _ := nn.NewLayout(bnArch())
	theta := req.Base.Tensors["member.0"]
	F, err := Fisher(context.Background(), bnArch(), theta, req.Train, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	f32 := make([]float32, len(F))
	for i, v := range F {
		f32[i] = float32(v)
	}
	c := &calibration{arch: bnArch(), lay: lay, theta: theta, fisher: f32, delta: 1, val: req.Val, draws: 8, seed: 9, workers: 2}
	mconf, macc, err := c.mapAccuracy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	meta := map[string]string{}
	p, err := c.calibrate(context.Background(), 1e-4, 1e4, mconf, macc, 0, 3, meta, func(done int, _ string) { steps = append(steps, done) })
	if err != nil {
		t.Fatal(err)
	}
	if meta["calibration"] != fmt.Sprintf("bisection stopped after 3 halvings, %.4g from the target", math.Abs(p.conf-macc)) || !slices.Equal(steps, []int{1, 2, 3, 4, 5}) {
		t.Errorf("meta %v, steps %v; want 3 halvings after the 2 ends", meta, steps)
	}
	// The midpoints of [1e-4, 1e4] in log s are 1, then 1e-2 or 1e2, then
	// 1e-3, 1e-1, 10 or 1e3.
	if !slices.ContainsFunc([]float64{1e-3, 1e-1, 10, 1e3}, func(v float64) bool { return math.Abs(p.s/v-1) < 1e-9 }) {
		t.Errorf("third midpoint s = %v", p.s)
	}
	meta = map[string]string{}
	if _, err := c.calibrate(context.Background(), 1e-4, 1e4, mconf, macc, 1, 3, meta, func(int, string) {}); err != nil || meta["calibration"] != "root found by bisection (1 halvings)" {
		t.Errorf("a tolerance of 1: meta %v, %v", meta, err)
	}
}

// TestConfAcc: the confidence is the largest probability, the prediction
// its class, the lower class on a tie.
func TestConfAcc(t *testing.T) {
	conf, acc := confAcc([]float64{0.4, 0.4, 0.2, 0.1, 0.3, 0.6}, []int{0, 1})
	if math.Abs(conf-0.5) > 1e-12 || acc != 0.5 {
		t.Errorf("confAcc = %v, %v; want 0.5 (0.4 and 0.6), 0.5 (class 0 of the tie right, class 2 wrong)", conf, acc)
	}
}

// TestWorkers: the artifact is the same bytes for 1 worker and for all
// cores (Workers 0).
func TestWorkers(t *testing.T) {
	var arts []sdk.Artifact
	for _, w := range []int{1, 0} {
		req := fitRequest(sdk.Config{"calibration_draws": int64(3), "delta": 1.0})
		req.Workers = w
		req.Val = tinyData(64, 2, 0.8) // one whole workspace of 64
		a, err := New().Fit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		arts = append(arts, a)
	}
	if !reflect.DeepEqual(arts[0], arts[1]) {
		t.Errorf("workers 1 and 0 give different artifacts:\n%v\n%v", arts[0].Meta, arts[1].Meta)
	}
}
