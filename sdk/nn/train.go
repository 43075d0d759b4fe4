package nn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/uaxai/uaxai/sdk/rng"
)

// Data is a labelled training set: N rows of Len float32 values.
type Data struct {
	X   []float32
	Y   []int
	N   int
	Len int
}

// Row returns waveform i.
func (d Data) Row(i int) []float32 { return d.X[i*d.Len : (i+1)*d.Len : (i+1)*d.Len] }

// Check reports whether d is consistent with an architecture.
func (d Data) Check(what string, inLen, classes int) error {
	if d.Len != inLen {
		return fmt.Errorf("%s: rows of %d values, the architecture needs %d", what, d.Len, inLen)
	}
	if len(d.X) != d.N*d.Len || len(d.Y) != d.N {
		return fmt.Errorf("%s: %d values and %d labels for %d rows of %d", what, len(d.X), len(d.Y), d.N, d.Len)
	}
	for i, y := range d.Y {
		if y < 0 || y >= classes {
			return fmt.Errorf("%s: row %d has label %d, want 0..%d", what, i, y, classes-1)
		}
	}
	for i, v := range d.X {
		if v-v != 0 { // NaN or ±Inf
			return fmt.Errorf("%s: row %d value %d is %v, want a finite number", what, i/d.Len, i%d.Len, v)
		}
	}
	return nil
}

// EpochReport is what Train reports after each epoch.
type EpochReport struct {
	Epoch, Epochs int
	LR            float64
	TrainLoss     float64 // mean over the epoch's batches (train mode)
	ValLoss       float64 // eval mode, NaN without a validation set
	ValAcc        float64
	Best          bool // this epoch's parameters are the new checkpoint
	Elapsed       time.Duration
}

// TrainOptions are the non-protocol settings of a training run.
type TrainOptions struct {
	Workers  int               // goroutines (0: GOMAXPROCS); results do not depend on it
	Progress func(EpochReport) // called after every epoch, may be nil
	Init     []float32         // starting parameters; nil: Init from the seed
}

// TrainResult is the outcome of Train.
type TrainResult struct {
	Params    Params // the checkpoint with the lowest validation loss (the last epoch without validation data)
	BestEpoch int
	History   []EpochReport
}

// Train fits arch a on train with the protocol cfg: seeded initialisation
// (rng stream (seed, "init")), a seeded shuffle per epoch ((seed,
// "shuffle", epoch)), Adam, step decay lr_e = lr * gamma^floor(e/step_every),
// and the checkpoint with the lowest validation loss. The same seed gives
// the same parameters for any number of workers.
func Train(ctx context.Context, a Arch, train, val Data, cfg TrainConfig, seed uint64, opt TrainOptions) (TrainResult, error) {
	net, err := NewPass(a, cfg.Batch, opt.Workers)
	if err != nil {
		return TrainResult{}, err
	}
	if err := checkTrainConfig(cfg); err != nil {
		return TrainResult{}, err
	}
	if err := train.Check("training set", net.InputLen(), net.Classes()); err != nil {
		return TrainResult{}, err
	}
	if train.N == 0 {
		return TrainResult{}, fmt.Errorf("training set is empty")
	}
	if val.N > 0 {
		if err := val.Check("validation set", net.InputLen(), net.Classes()); err != nil {
			return TrainResult{}, err
		}
	}
	lay := net.Layout()
	p := make([]float32, lay.Size)
	if opt.Init != nil {
		if len(opt.Init) != lay.Size {
			return TrainResult{}, fmt.Errorf("initial parameters have %d values, want %d", len(opt.Init), lay.Size)
		}
		copy(p, opt.Init)
	} else {
		Init(lay, p, rng.For(seed, "init", "", -1, -1))
	}
	adam := NewAdam(lay, cfg)
	grad := make([]float32, lay.Size)
	dz := make([]float32, cfg.Batch*net.Classes())
	xb := make([]float32, cfg.Batch*train.Len)
	yb := make([]int, cfg.Batch)
	order := make([]int, train.N)
	for i := range order {
		order[i] = i
	}
	res := TrainResult{BestEpoch: -1}
	best := math.Inf(1)
	bestP := make([]float32, lay.Size)
	start := time.Now()
	for e := 0; e < cfg.Epochs; e++ {
		if err := ctx.Err(); err != nil {
			return TrainResult{}, err
		}
		adam.LR = cfg.LR * math.Pow(cfg.StepGamma, float64(e/cfg.StepEvery))
		r := rng.For(seed, "shuffle", "", e, -1)
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		dropRnd := rng.For(seed, "dropout", "", e, -1)
		var sum float64
		var nb int
		for b0 := 0; b0 < train.N; b0 += cfg.Batch {
			b1 := min(b0+cfg.Batch, train.N)
			n := b1 - b0
			for k := 0; k < n; k++ {
				copy(xb[k*train.Len:(k+1)*train.Len], train.X[order[b0+k]*train.Len:])
				yb[k] = train.Y[order[b0+k]]
			}
			z := net.Forward(p, xb[:n*train.Len], true, dropRnd)
			loss := CrossEntropy(dz[:n*net.Classes()], z, yb[:n], net.Classes())
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return TrainResult{}, fmt.Errorf("epoch %d batch %d: the loss is %v (diverged; lower lr)", e+1, b0/cfg.Batch, loss)
			}
			clear(grad)
			net.Backward(p, dz[:n*net.Classes()], grad)
			adam.Step(p, grad)
			sum += loss
			nb++
		}
		rep := EpochReport{Epoch: e + 1, Epochs: cfg.Epochs, LR: adam.LR, TrainLoss: sum / float64(nb), ValLoss: math.NaN(), ValAcc: math.NaN()}
		if val.N > 0 {
			rep.ValLoss, rep.ValAcc = evaluate(net, cfg.Batch, p, val)
			if rep.ValLoss < best {
				best = rep.ValLoss
				copy(bestP, p)
				rep.Best = true
				res.BestEpoch = e + 1
			}
		} else {
			copy(bestP, p)
			rep.Best = true
			res.BestEpoch = e + 1
		}
		rep.Elapsed = time.Since(start)
		res.History = append(res.History, rep)
		if opt.Progress != nil {
			opt.Progress(rep)
		}
	}
	if res.BestEpoch < 0 && cfg.Epochs > 0 {
		// Every validation loss was NaN or +Inf: no epoch can be chosen,
		// and the zero vector in bestP is no network.
		return TrainResult{}, fmt.Errorf("the validation loss was never finite in %d epochs (last: %v): check the validation set for extreme or non-finite values", cfg.Epochs, res.History[len(res.History)-1].ValLoss)
	}
	res.Params = Params{Arch: a, Data: bestP}
	return res, nil
}

// EvaluatePass returns the eval-mode mean cross-entropy and accuracy of
// p on d, computed by a Pass, in batches of batch
// (at most the batch the Pass was made for).
func EvaluatePass(net Pass, batch int, p []float32, d Data) (loss, acc float64) {
	return evaluate(net, batch, p, d)
}

// evaluate is Evaluate in batches of batch on any network.
func evaluate(net Pass, batch int, p []float32, d Data) (loss, acc float64) {
	k := net.Classes()
	var correct int
	for b0 := 0; b0 < d.N; b0 += batch {
		b1 := min(b0+batch, d.N)
		z := net.Forward(p, d.X[b0*d.Len:b1*d.Len], false, nil)
		loss += CrossEntropy(nil, z, d.Y[b0:b1], k) * float64(b1-b0)
		for r := 0; r < b1-b0; r++ {
			if argmax(z[r*k:(r+1)*k]) == d.Y[b0+r] {
				correct++
			}
		}
	}
	return loss / float64(d.N), float64(correct) / float64(d.N)
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func checkTrainConfig(c TrainConfig) error {
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("train: epochs must be >= 1, got %d", c.Epochs)
	case c.Batch < 1:
		return fmt.Errorf("train: batch must be >= 1, got %d", c.Batch)
	case !(c.LR > 0):
		return fmt.Errorf("train: lr must be > 0, got %g", c.LR)
	case c.WeightDecay < 0:
		return fmt.Errorf("train: weight_decay must be >= 0, got %g", c.WeightDecay)
	case c.StepEvery < 1:
		return fmt.Errorf("train: step_every must be >= 1, got %d", c.StepEvery)
	case !(c.StepGamma > 0 && c.StepGamma <= 1):
		return fmt.Errorf("train: step_gamma must be in (0, 1], got %g", c.StepGamma)
	case !(c.Beta1 >= 0 && c.Beta1 < 1 && c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("train: beta1 and beta2 must be in [0, 1), got %g and %g", c.Beta1, c.Beta2)
	case !(c.Eps > 0):
		return fmt.Errorf("train: eps must be > 0, got %g", c.Eps)
	}
	return nil
}

// Pass computes a network's logits and parameter gradients under a
// parameter vector given with each call, in batches of up to the batch
// it was made for: what Train, EvaluatePass and a posterior's own passes
// (Laplace's Fisher) compute with. A Pass is not safe for concurrent use: make one a goroutine.
type Pass interface {
	InputLen() int
	Classes() int
	Layout() *Layout
	// Forward runs a batch x under parameters p, in training mode if
	// train (batch statistics, and running statistics updated in p;
	// dropout masks from rnd), and returns its logits (B x Classes),
	// valid until the next call.
	Forward(p, x []float32, train bool, rnd *rand.Rand) []float32
	// Backward adds to grad d L / d p of the last Forward, given dz =
	// d L / d logits.
	Backward(p, dz, grad []float32)
}

// NewPass returns a Pass of a (a compiled graph) for batches of up to
// batch inputs; workers is the graph's goroutines (graph.Net.Workers),
// which results do not depend on.
func NewPass(a Arch, batch, workers int) (Pass, error) {
	return newGraphTrainNet(a, workers)
}
