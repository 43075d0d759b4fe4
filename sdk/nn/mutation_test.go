package nn

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// The package's own tests never ran Train (mutation testing found all of
// train.go NOT COVERED; the ensemble plugin's tests train, but only check
// members against Train itself). These tests check Train against its doc
// comment: the loop body against one Adam step computed from the gradient,
// the batching against identical rows, the schedule, the checkpoint rule
// and the seeded initialisation, and the errors.

// plainArch has no batchnorm and no dropout, so train and eval mode compute
// the same function.
func plainArch() Arch {
	return Arch{Name: "plain", InChannels: 2, InLen: 8, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d1", Out: 4},
	}}
}

func plainData(n int, seed uint64, same bool) Data {
	r := rng.For(seed, "test", "train-data", -1, -1)
	d := Data{N: n, Len: 16, X: make([]float32, n*16), Y: make([]int, n)}
	for i := range n {
		d.Y[i] = i % 4
		for j := range 16 {
			d.X[i*16+j] = float32(r.NormFloat64() + 0.3*float64(d.Y[i]))
		}
		if same && i > 0 {
			copy(d.X[i*16:(i+1)*16], d.X[:16])
			d.Y[i] = d.Y[0]
		}
	}
	return d
}

func plainCfg() TrainConfig {
	return TrainConfig{Epochs: 1, Batch: 4, LR: 0.01, WeightDecay: 1e-3, StepEvery: 1, StepGamma: 0.5, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

func initParams(t *testing.T, a Arch, seed uint64) (Pass, []float32) {
	t.Helper()
	net, err := NewPass(a, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, net.Layout().Size)
	Init(net.Layout(), p, rng.For(seed, "test", "init", -1, -1))
	return net, p
}

// lossGrad is the mean cross-entropy of rows of d (in the given order) at
// p, and its gradient: the quantity one training step descends.
func lossGrad(net Pass, p []float32, d Data, rows []int) (float64, []float32) {
	x := make([]float32, 0, len(rows)*d.Len)
	y := make([]int, 0, len(rows))
	for _, r := range rows {
		x = append(x, d.X[r*d.Len:(r+1)*d.Len]...)
		y = append(y, d.Y[r])
	}
	z := net.Forward(p, x, true, nil)
	dz := make([]float32, len(rows)*net.Classes())
	loss := CrossEntropy(dz, z, y, net.Classes())
	g := make([]float32, len(p))
	net.Backward(p, dz, g)
	return loss, g
}

func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i])-float64(want[i])) > tol {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestTrainOneFullBatch: with a batch larger than the training set, one
// epoch is one Adam step on the gradient of the mean loss over all rows
// (in whatever order the shuffle put them), and its TrainLoss is the loss
// at the starting parameters.
func TestTrainOneFullBatch(t *testing.T) {
	a := plainArch()
	net, p0 := initParams(t, a, 1)
	d := plainData(9, 2, false)
	cfg := plainCfg()
	cfg.Batch = 12
	res, err := Train(context.Background(), a, d, Data{}, cfg, 5, TrainOptions{Init: p0})
	if err != nil {
		t.Fatal(err)
	}
	loss, g := lossGrad(net, p0, d, []int{0, 1, 2, 3, 4, 5, 6, 7, 8})
	if got := res.History[0].TrainLoss; math.Abs(got-loss) > 1e-6*loss {
		t.Errorf("TrainLoss = %v, loss at the start %v", got, loss)
	}
	want := slices.Clone(p0)
	NewAdam(net.Layout(), cfg).Step(want, g)
	closeTo(t, "parameters after one full-batch epoch", res.Params.Data, want, 1e-6)
}

// TestTrainBatches: on N identical rows the shuffle cannot matter, and an
// epoch is ceil(N/batch) Adam steps on batches of batch rows, the last one
// partial; the learning rate of epoch e is lr * gamma^floor(e/step_every),
// and TrainLoss is the mean of the batch losses.
func TestTrainBatches(t *testing.T) {
	a := plainArch()
	net, p0 := initParams(t, a, 3)
	d := plainData(10, 4, true)
	cfg := plainCfg()
	cfg.Epochs, cfg.Batch, cfg.StepEvery = 3, 4, 2
	res, err := Train(context.Background(), a, d, Data{}, cfg, 6, TrainOptions{Init: p0})
	if err != nil {
		t.Fatal(err)
	}
	p := slices.Clone(p0)
	adam := NewAdam(net.Layout(), cfg)
	for e := range cfg.Epochs {
		adam.LR = cfg.LR * math.Pow(cfg.StepGamma, math.Floor(float64(e)/float64(cfg.StepEvery)))
		var sum float64
		for _, n := range []int{4, 4, 2} {
			loss, g := lossGrad(net, p, d, make([]int, n)) // n copies of row 0
			adam.Step(p, g)
			sum += loss
		}
		h := res.History[e]
		if h.Epoch != e+1 || h.Epochs != cfg.Epochs || h.LR != adam.LR {
			t.Errorf("epoch %d: report %+v, want Epoch %d of %d at lr %v", e, h, e+1, cfg.Epochs, adam.LR)
		}
		if math.Abs(h.TrainLoss-sum/3) > 1e-6*sum {
			t.Errorf("epoch %d: TrainLoss %v, mean batch loss %v", e, h.TrainLoss, sum/3)
		}
		if !math.IsNaN(h.ValLoss) || !math.IsNaN(h.ValAcc) || !h.Best {
			t.Errorf("epoch %d without validation data: ValLoss %v, ValAcc %v, Best %v; want NaN, NaN, true", e, h.ValLoss, h.ValAcc, h.Best)
		}
	}
	if len(res.History) != cfg.Epochs || res.BestEpoch != cfg.Epochs {
		t.Errorf("%d reports, best epoch %d; want %d, the last", len(res.History), res.BestEpoch, cfg.Epochs)
	}
	closeTo(t, "parameters after 3 epochs of 3 batches", res.Params.Data, p, 1e-5)
}

// TestTrainCheckpoint: with validation data the result is the checkpoint
// of lowest validation loss: its Evaluate is the minimum of the reported
// ValLoss, Best marks each new minimum, BestEpoch the first epoch reaching
// it; Progress sees the reports in order. The same seed gives the same
// parameters for any number of workers, and without Init the parameters
// start from Init on the stream (seed, "init").
func TestTrainCheckpoint(t *testing.T) {
	a := plainArch()
	train, val := plainData(24, 7, false), plainData(10, 8, false)
	cfg := plainCfg()
	cfg.Epochs, cfg.LR, cfg.StepEvery = 8, 0.2, 3
	var seen []EpochReport
	res, err := Train(context.Background(), a, train, val, cfg, 11, TrainOptions{Workers: 1, Progress: func(r EpochReport) { seen = append(seen, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != cfg.Epochs || !slices.Equal(seen, res.History) {
		t.Errorf("Progress saw %d reports, History has %d, or they differ", len(seen), len(res.History))
	}
	best, bestAt := math.Inf(1), 0
	for e, h := range res.History {
		if h.ValAcc < 0 || h.ValAcc > 1 || math.IsNaN(h.ValLoss) {
			t.Errorf("epoch %d: ValLoss %v, ValAcc %v", e+1, h.ValLoss, h.ValAcc)
		}
		if h.Best != (h.ValLoss < best) {
			t.Errorf("epoch %d: Best = %v with ValLoss %v after a best of %v", e+1, h.Best, h.ValLoss, best)
		}
		if h.ValLoss < best {
			best, bestAt = h.ValLoss, e+1
		}
		if e > 0 && h.Elapsed < res.History[e-1].Elapsed {
			t.Errorf("epoch %d: Elapsed went back", e+1)
		}
	}
	if res.BestEpoch != bestAt {
		t.Errorf("BestEpoch = %d, lowest validation loss at epoch %d", res.BestEpoch, bestAt)
	}
	net, _ := NewPass(a, cfg.Batch, 1)
	if l, acc := EvaluatePass(net, cfg.Batch, res.Params.Data, val); math.Abs(l-best) > 1e-9*best || acc != res.History[bestAt-1].ValAcc {
		t.Errorf("Evaluate(checkpoint) = %v, %v; want the best epoch's %v, %v", l, acc, best, res.History[bestAt-1].ValAcc)
	}
	if res.BestEpoch == cfg.Epochs {
		t.Log("the last epoch is the best: the checkpoint rule is only partly exercised")
	}

	// Workers do not change the result; the seed's init stream is Init's.
	for _, w := range []int{3, 0} {
		r2, err := Train(context.Background(), a, train, val, cfg, 11, TrainOptions{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r2.Params.Data, res.Params.Data) {
			t.Errorf("Workers %d: parameters differ from Workers 1", w)
		}
	}
	p0 := make([]float32, net.Layout().Size)
	Init(net.Layout(), p0, rng.For(11, "init", "", -1, -1))
	r3, err := Train(context.Background(), a, train, val, cfg, 11, TrainOptions{Init: p0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r3.Params.Data, res.Params.Data) {
		t.Error("Train from Init on the (seed, \"init\") stream differs from Train without Init")
	}
}

// TestTrainErrors: every documented refusal, at the edge of what is
// accepted.
func TestTrainErrors(t *testing.T) {
	a := plainArch()
	good := plainData(6, 1, false)
	for _, c := range []struct {
		name string
		edit func(*TrainConfig)
		want string // "" accepted
	}{
		{"epochs 0", func(c *TrainConfig) { c.Epochs = 0 }, "epochs"},
		{"batch 0", func(c *TrainConfig) { c.Batch = 0 }, "batch"},
		{"batch 1", func(c *TrainConfig) { c.Batch = 1 }, ""},
		{"lr 0", func(c *TrainConfig) { c.LR = 0 }, "lr"},
		{"lr NaN", func(c *TrainConfig) { c.LR = math.NaN() }, "lr"},
		{"weight decay < 0", func(c *TrainConfig) { c.WeightDecay = -1e-300 }, "weight_decay"},
		{"weight decay 0", func(c *TrainConfig) { c.WeightDecay = 0 }, ""},
		{"step_every 0", func(c *TrainConfig) { c.StepEvery = 0 }, "step_every"},
		{"gamma 0", func(c *TrainConfig) { c.StepGamma = 0 }, "step_gamma"},
		{"gamma 1", func(c *TrainConfig) { c.StepGamma = 1 }, ""},
		{"gamma > 1", func(c *TrainConfig) { c.StepGamma = math.Nextafter(1, 2) }, "step_gamma"},
		{"beta1 1", func(c *TrainConfig) { c.Beta1 = 1 }, "beta1"},
		{"beta1 < 0", func(c *TrainConfig) { c.Beta1 = -1e-300 }, "beta1"},
		{"beta1 0", func(c *TrainConfig) { c.Beta1 = 0 }, ""},
		{"beta2 1", func(c *TrainConfig) { c.Beta2 = 1 }, "beta2"},
		{"beta2 < 0", func(c *TrainConfig) { c.Beta2 = -1e-300 }, "beta2"},
		{"beta2 0", func(c *TrainConfig) { c.Beta2 = 0 }, ""},
		{"eps 0", func(c *TrainConfig) { c.Eps = 0 }, "eps"},
	} {
		cfg := plainCfg()
		c.edit(&cfg)
		_, err := Train(context.Background(), a, good, Data{}, cfg, 1, TrainOptions{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}

	bad := func(edit func(*Data)) Data {
		d := plainData(6, 1, false)
		d.X, d.Y = slices.Clone(d.X), slices.Clone(d.Y)
		edit(&d)
		return d
	}
	for _, c := range []struct {
		name       string
		train, val Data
		opt        TrainOptions
		want       string
	}{
		{"empty", Data{Len: 16}, Data{}, TrainOptions{}, "empty"},
		{"row length", bad(func(d *Data) { d.Len = 15 }), Data{}, TrainOptions{}, "needs 16"},
		{"short X", bad(func(d *Data) { d.X = d.X[:len(d.X)-1] }), Data{}, TrainOptions{}, "labels"},
		{"short Y", bad(func(d *Data) { d.Y = d.Y[:5] }), Data{}, TrainOptions{}, "labels"},
		{"label 4", bad(func(d *Data) { d.Y[2] = 4 }), Data{}, TrainOptions{}, "row 2 has label 4, want 0..3"},
		{"label -1", bad(func(d *Data) { d.Y[3] = -1 }), Data{}, TrainOptions{}, "row 3 has label -1"},
		{"NaN", bad(func(d *Data) { d.X[16*4+5] = float32(math.NaN()) }), Data{}, TrainOptions{}, "row 4 value 5"},
		{"Inf", bad(func(d *Data) { d.X[7] = float32(math.Inf(-1)) }), Data{}, TrainOptions{}, "row 0 value 7"},
		{"validation", good, bad(func(d *Data) { d.Y[1] = 9 }), TrainOptions{}, "validation set: row 1"},
		{"init length", good, Data{}, TrainOptions{Init: make([]float32, 3)}, "initial parameters have 3 values"},
		{"diverged", bad(func(d *Data) {
			for i := range d.X {
				d.X[i] = 3e38 * float32(1-2*(i%2))
			}
		}), Data{}, TrainOptions{}, "epoch 1 batch 0: the loss is"},
	} {
		_, err := Train(context.Background(), a, c.train, c.val, plainCfg(), 1, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Train(ctx, a, good, Data{}, plainCfg(), 1, TrainOptions{}); err != context.Canceled {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestTrainCheckpointTie: a step too small to move a float32 parameter
// leaves every epoch's validation loss equal; the checkpoint stays the
// first epoch's (a later epoch must do strictly better to replace it).
func TestTrainCheckpointTie(t *testing.T) {
	a := plainArch()
	cfg := plainCfg()
	cfg.Epochs, cfg.LR, cfg.WeightDecay = 3, 1e-30, 0
	res, err := Train(context.Background(), a, plainData(8, 1, false), plainData(5, 2, false), cfg, 3, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for e, h := range res.History {
		if h.ValLoss != res.History[0].ValLoss || h.Best != (e == 0) {
			t.Errorf("epoch %d: ValLoss %v (epoch 1: %v), Best %v", e+1, h.ValLoss, res.History[0].ValLoss, h.Best)
		}
	}
	if res.BestEpoch != 1 {
		t.Errorf("BestEpoch = %d on equal validation losses, want 1", res.BestEpoch)
	}
}

// TestEvaluate: EvaluatePass walks d in chunks of its batch
// (4, 4 and 2 rows; 5 and 5; ...); its loss is the mean cross-entropy over all rows
// at once and its accuracy the fraction of rows whose largest logit is the
// label.
func TestEvaluate(t *testing.T) {
	a := plainArch()
	net, p := initParams(t, a, 9)
	d := plainData(10, 3, false)
	rows := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	want, _ := lossGrad(net, p, d, rows)
	z, k := slices.Clone(net.Forward(p, d.X, false, nil)), net.Classes()
	correct := 0
	for r := range rows {
		zr := z[r*k : (r+1)*k]
		if slices.Index(zr, slices.Max(zr)) == d.Y[r] {
			correct++
		}
	}
	for _, c := range []int{4, 5, 10, 16} { // partial last chunk, whole chunks, one, more than N
		loss, acc := EvaluatePass(net, c, p, d)
		if !(math.Abs(loss-want) <= 1e-6*want) || acc != float64(correct)/10 {
			t.Errorf("capacity %d: Evaluate = %v, %v; want %v, %v", c, loss, acc, want, float64(correct)/10)
		}
	}
	if correct == 0 || correct == 10 {
		t.Logf("accuracy %d/10 does not test the count", correct)
	}
}
