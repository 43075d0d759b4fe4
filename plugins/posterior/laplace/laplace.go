package laplace

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ID is the plugin's ID.
const ID = "posterior.laplace"

// Version is the plugin's version.
const Version = "1.0.0"

// Base is the posterior the approximation is fitted around, and the
// name of its network in its artifact.
const (
	Base       = "posterior.deterministic"
	baseTensor = "member.0"
)

// Defaults.
const (
	DefaultDelta            = 100.0
	DefaultCalibrationDraws = 20
	DefaultScaleMin         = 1e-4
	DefaultScaleMax         = 1e4
)

// Calibration: bisection stops when the mean confidence is within
// ConfTol of the target, or after MaxBisections halvings of the bracket.
const (
	ConfTol       = 1e-3
	MaxBisections = 40
)

// chunk is the number of training records whose squared gradients one
// task sums; chunk sums are added in chunk order, so the Fisher diagonal
// is the same bytes for any number of workers.
const chunk = 32

// Posterior is the diagonal Laplace approximation.
type Posterior struct{}

// New returns the Laplace posterior.
func New() *Posterior { return &Posterior{} }

// Info describes the plugin.
func (*Posterior) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: Version, Summary: "diagonal Laplace around the deterministic network, empirical Fisher, calibrated scale (seed, delta, scale)",
		Base: Base, BaseKeys: []string{"seed"}, Replicates: true}
}

type config struct {
	delta      float64
	scale      float64 // 0: calibrate
	draws      int
	smin, smax float64
}

func parse(cfg sdk.Config) (config, error) {
	fail := func(err error) (config, error) { return config{}, fmt.Errorf("%s: %w", ID, err) }
	if err := cfg.Only("seed", "delta", "scale", "calibration_draws", "scale_min", "scale_max"); err != nil {
		return fail(err)
	}
	if _, ok := cfg["seed"]; ok {
		if s, err := cfg.Int("seed", 0); err != nil || s < 0 {
			return fail(fmt.Errorf("key %q: want a nonnegative integer, got %v", "seed", cfg["seed"]))
		}
	}
	positive := func(key string, def float64) (float64, error) {
		v, err := cfg.Float(key, def)
		if err != nil {
			return 0, err
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("key %q: %v is out of range (accepted: a finite number > 0)", key, v)
		}
		return v, nil
	}
	var c config
	var err error
	if c.delta, err = positive("delta", DefaultDelta); err != nil {
		return fail(err)
	}
	if _, ok := cfg["scale"]; ok {
		if c.scale, err = positive("scale", 1); err != nil {
			return fail(err)
		}
		for _, k := range []string{"calibration_draws", "scale_min", "scale_max"} {
			if _, ok := cfg[k]; ok {
				return fail(fmt.Errorf("key %q: only used to calibrate the scale, and scale is given (accepted: either scale, or calibration keys without it)", k))
			}
		}
		return c, nil
	}
	if c.draws, err = cfg.IntRange("calibration_draws", DefaultCalibrationDraws, 1, 1000); err != nil {
		return fail(err)
	}
	if c.smin, err = positive("scale_min", DefaultScaleMin); err != nil {
		return fail(err)
	}
	if c.smax, err = positive("scale_max", DefaultScaleMax); err != nil {
		return fail(err)
	}
	if !(c.smin < c.smax) {
		key := "scale_max"
		if _, ok := cfg[key]; !ok {
			key = "scale_min"
		}
		return fail(fmt.Errorf("key %q: scale_min %v must be below scale_max %v (accepted: 0 < scale_min < scale_max)", key, c.smin, c.smax))
	}
	return c, nil
}

// Check validates the table (see the package documentation); any number
// of draws >= 1 is accepted.
func (*Posterior) Check(cfg sdk.Config, draws int) error {
	if _, err := parse(cfg); err != nil {
		return err
	}
	return sdk.CheckDraws(ID, draws)
}

// Fit computes the Fisher diagonal at the base's network and the scale.
func (*Posterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	c, err := parse(req.Config)
	if err != nil {
		return sdk.Artifact{}, err
	}
	arch, lay, theta, err := sdk.BaseNetwork(ID, Base, baseTensor, req)
	if err != nil {
		return sdk.Artifact{}, err
	}
	if c.scale == 0 && req.Val.N == 0 {
		return sdk.Artifact{}, fmt.Errorf("%s: calibrating the scale needs a validation set, and it is empty (accepted: a validation set, or key \"scale\")", ID)
	}
	theta = append([]float32(nil), theta...)
	workers := req.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var mu sync.Mutex // progress reports one at a time
	report := func(done, total int, msg string) {
		if req.Progress != nil {
			mu.Lock()
			defer mu.Unlock()
			req.Progress(sdk.Progress{Done: done, Total: total, Message: msg})
		}
	}
	F, err := Fisher(ctx, arch, theta, req.Train, workers, func(done int) {
		report(done, req.Train.N, fmt.Sprintf("Fisher diagonal: %d/%d training records", done, req.Train.N))
	})
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", ID, err)
	}
	f32 := make([]float32, len(F))
	for i, v := range F {
		f32[i] = float32(v)
	}
	meta := map[string]string{
		"delta":          fmtF(c.delta),
		"fisher_records": strconv.Itoa(req.Train.N),
	}
	if s, ok := req.Base.Meta["seed.0"]; ok {
		meta["base_seed"] = s
	}
	cal := &calibration{lay: lay, theta: theta, fisher: f32, delta: c.delta, val: req.Val, draws: c.draws, seed: sdk.ReplicateSeed(req.Seed, req), workers: workers}
	if _, err = nn.NewPass(arch, 1, 1); err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", ID, err)
	}
	cal.arch = arch
	s := c.scale
	if s > 0 {
		meta["calibrated"], meta["calibration"] = "false", "scale given"
		cal.draws = DefaultCalibrationDraws // to describe the predictive at s
	} else {
		meta["calibrated"] = "true"
		meta["scale_min"], meta["scale_max"], meta["calibration_draws"] = fmtF(c.smin), fmtF(c.smax), strconv.Itoa(c.draws)
	}
	meta["scale"] = fmtF(s)
	if req.Val.N > 0 {
		mconf, macc, err := cal.mapAccuracy(ctx)
		if err != nil {
			return sdk.Artifact{}, fmt.Errorf("%s: %w", ID, err)
		}
		var p point
		if s > 0 {
			p, err = cal.predictive(ctx, s)
		} else {
			p, err = cal.calibrate(ctx, c.smin, c.smax, mconf, macc, ConfTol, MaxBisections, meta, func(done int, msg string) { report(done, MaxBisections+2, msg) })
		}
		if err != nil {
			return sdk.Artifact{}, fmt.Errorf("%s: %w", ID, err)
		}
		meta["scale"] = fmtF(p.s)
		meta["map_accuracy"], meta["map_confidence"] = fmtF(round(macc)), fmtF(round(mconf))
		meta["confidence"], meta["predictive_accuracy"] = fmtF(round(p.conf)), fmtF(round(p.acc))
	}
	return sdk.Artifact{Arch: arch, Tensors: map[string][]float32{"map": theta, "fisher": f32}, Meta: meta}, nil
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Fisher returns the empirical Fisher diagonal of the network (arch,
// theta) over d: the sum over records of the squared gradient of log
// p(y | x, theta), in eval mode; zero on buffers. Records are taken in
// chunks of a fixed size on up to workers goroutines (0: GOMAXPROCS),
// each chunk summed in record order and the chunks in chunk order.
// progress, if not nil, gets the number of records done after each chunk,
// in increasing order.
func Fisher(ctx context.Context, arch nn.Arch, theta []float32, d sdk.Dataset, workers int, progress func(done int)) ([]float64, error) {
	net, err := nn.NewPass(arch, 1, 1) // one goroutine a chunk, one Pass a goroutine
	if err != nil {
		return nil, err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	lay := net.Layout()
	if len(theta) != lay.Size {
		return nil, fmt.Errorf("%d parameters, arch %q needs %d", len(theta), arch.Name, lay.Size)
	}
	if err := d.Check("training set", net.InputLen(), net.Classes()); err != nil {
		return nil, err
	}
	if d.N == 0 {
		return nil, fmt.Errorf("the training set is empty: no Fisher information")
	}
	k := net.Classes()
	nch := (d.N + chunk - 1) / chunk
	total := make([]float64, lay.Size)
	var (
		mu      sync.Mutex
		pending = map[int][]float64{}
		free    [][]float64
		next    int // the next chunk to add to total
		done    int
	)
	// finish adds every finished chunk that is next in order.
	finish := func(c int, part []float64, n int) {
		mu.Lock()
		defer mu.Unlock()
		pending[c] = part
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			for i, v := range p {
				total[i] += v
			}
			delete(pending, next)
			free = append(free, p)
			next++
		}
		done += n
		if progress != nil {
			progress(done)
		}
	}
	buffer := func() []float64 {
		mu.Lock()
		defer mu.Unlock()
		if n := len(free); n > 0 {
			p := free[n-1]
			free = free[:n-1]
			clear(p)
			return p
		}
		return make([]float64, lay.Size)
	}
	var cnext sync.Mutex
	ci := 0
	var wg sync.WaitGroup
	for range min(workers, nch) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			net, _ := nn.NewPass(arch, 1, 1) // arch built above
			grad := make([]float32, lay.Size)
			dz := make([]float32, k)
			for {
				cnext.Lock()
				c := ci
				ci++
				cnext.Unlock()
				if c >= nch || ctx.Err() != nil {
					return
				}
				part := buffer()
				r1 := min((c+1)*chunk, d.N)
				for r := c * chunk; r < r1; r++ {
					nn.CrossEntropy(dz, net.Forward(theta, d.Row(r), false, nil), d.Y[r:r+1], k)
					clear(grad)
					net.Backward(theta, dz, grad)
					for i, g := range grad {
						part[i] += float64(g) * float64(g)
					}
				}
				finish(c, part, r1-c*chunk)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return total, nil
}

// Precision returns the standard deviation of every parameter under the
// precision s F + delta: 1/sqrt(s F_i + delta) on trainable entries, 0 on
// buffers.
func Precision(lay *nn.Layout, fisher []float32, s, delta float64) []float64 {
	sd := make([]float64, lay.Size)
	for i, t := range lay.TrainableMask() {
		if t {
			sd[i] = 1 / math.Sqrt(s*float64(fisher[i])+delta)
		}
	}
	return sd
}

// Perturb writes theta + sd * eps into dst, eps[i] the next standard
// normal of r for each entry with sd[i] > 0, in index order (entries with
// sd 0, the buffers, keep theta and take no number).
func Perturb(dst, theta []float32, sd []float64, r *rand.Rand) {
	for i, v := range theta {
		if sd[i] > 0 {
			v = float32(float64(v) + sd[i]*r.NormFloat64())
		}
		dst[i] = v
	}
}

// DrawKey is the stream of the draw with seed seed.
func DrawKey(seed uint64) uint64 { return rng.Key(seed, "laplace-draw", "", -1, -1) }

// CalibrationKey is the stream of calibration draw k of a fit with seed
// seed: the same for every scale tried (common random numbers).
func CalibrationKey(seed uint64, k int) uint64 {
	return rng.Key(seed, "laplace-calibration", "", -1, k)
}

// Sample draws theta_MAP + (s F + delta)^(-1/2) eps, eps from the stream
// of each seed (DrawKey); s and delta are the artifact's.
func (*Posterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	theta, ok := a.Tensors["map"]
	if !ok {
		return nil, fmt.Errorf("%s: the artifact has no tensor \"map\"", ID)
	}
	fisher, ok := a.Tensors["fisher"]
	if !ok {
		return nil, fmt.Errorf("%s: the artifact has no tensor \"fisher\"", ID)
	}
	lay, err := nn.NewLayout(a.Arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	if len(theta) != lay.Size || len(fisher) != lay.Size {
		return nil, fmt.Errorf("%s: artifact tensors map and fisher have %d and %d values, arch %q needs %d", ID, len(theta), len(fisher), a.Arch.Name, lay.Size)
	}
	s, err1 := strconv.ParseFloat(a.Meta["scale"], 64)
	delta, err2 := strconv.ParseFloat(a.Meta["delta"], 64)
	if err1 != nil || err2 != nil || !(s > 0) || !(delta > 0) {
		return nil, fmt.Errorf("%s: artifact meta scale %q and delta %q: want numbers > 0", ID, a.Meta["scale"], a.Meta["delta"])
	}
	sd := Precision(lay, fisher, s, delta)
	out := make([]nn.Params, len(req.Seeds))
	for i, seed := range req.Seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := make([]float32, lay.Size)
		Perturb(d, theta, sd, rng.New(DrawKey(seed)))
		out[i] = nn.Params{Arch: a.Arch, Data: d}
	}
	return out, nil
}

// calibration evaluates the sampled predictive on the validation set.
type calibration struct {
	arch    nn.Arch
	lay     *nn.Layout
	theta   []float32
	fisher  []float32
	delta   float64
	val     sdk.Dataset
	draws   int
	seed    uint64
	workers int
}

// point is the sampled predictive at one scale: its mean confidence and
// accuracy on the validation set.
type point struct{ s, conf, acc float64 }

// predictive returns the mean confidence and the accuracy on the
// validation set of the mean of softmax over the calibration draws at
// scale s (the draws' normals are the same for every s).
func (c *calibration) predictive(ctx context.Context, s float64) (point, error) {
	sd := Precision(c.lay, c.fisher, s, c.delta)
	probs, err := c.probs(ctx, c.draws, func(k int, dst []float32) {
		Perturb(dst, c.theta, sd, rng.New(CalibrationKey(c.seed, k)))
	})
	if err != nil {
		return point{}, err
	}
	conf, acc := confAcc(probs, c.val.Y)
	return point{s: s, conf: conf, acc: acc}, nil
}

// probs returns the mean over n networks (params(k, dst) writes network
// k) of their class probabilities on the validation set, added in network
// order; the networks run on up to c.workers goroutines.
func (c *calibration) probs(ctx context.Context, n int, params func(k int, dst []float32)) ([]float64, error) {
	K := c.arch.Classes()
	v := c.val
	per := make([][]float32, n)
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range min(c.workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := min(64, v.N)
			net, err := nn.NewPass(c.arch, batch, 1) // one goroutine a calibration draw
			if err != nil {
				panic(err) // Fit built it
			}
			p := make([]float32, c.lay.Size)
			for {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= n || ctx.Err() != nil {
					return
				}
				params(k, p)
				out := make([]float32, v.N*K)
				for b0 := 0; b0 < v.N; b0 += batch {
					b1 := min(b0+batch, v.N)
					nn.Softmax(out[b0*K:b1*K], net.Forward(p, v.X[b0*v.Len:b1*v.Len], false, nil), K)
				}
				per[k] = out
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mean := make([]float64, v.N*K)
	for _, out := range per {
		for j, x := range out {
			mean[j] += float64(x)
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	return mean, nil
}

// confAcc returns the mean largest probability and the accuracy of the
// argmax (ties: the lower class) of rows of probabilities.
func confAcc(probs []float64, y []int) (conf, acc float64) {
	K := len(probs) / len(y)
	correct := 0
	for r, label := range y {
		row := probs[r*K : (r+1)*K]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		conf += row[best]
		if best == label {
			correct++
		}
	}
	return conf / float64(len(y)), float64(correct) / float64(len(y))
}

// mapAccuracy is the validation accuracy (and mean confidence) of the
// MAP network.
func (c *calibration) mapAccuracy(ctx context.Context) (conf, acc float64, err error) {
	probs, err := c.probs(ctx, 1, func(_ int, dst []float32) { copy(dst, c.theta) })
	if err != nil {
		return 0, 0, err
	}
	conf, acc = confAcc(probs, c.val.Y)
	return conf, acc, nil
}

// calibrate finds s in [smin, smax] whose sampled predictive's mean
// confidence on the validation set is within tol of target (the MAP's
// accuracy; mapConf is the MAP's mean confidence), by bisection on log s
// of at most maxIter halvings, and returns the predictive at s. It
// records how in meta: "calibration", the confidences at the bracket's
// ends, and a "note" if the bracket holds no root.
func (c *calibration) calibrate(ctx context.Context, smin, smax, mapConf, target, tol float64, maxIter int, meta map[string]string, progress func(done int, msg string)) (point, error) {
	step := 0
	eval := func(s float64) (point, error) {
		p, err := c.predictive(ctx, s)
		if err != nil {
			return point{}, err
		}
		step++
		progress(step, fmt.Sprintf("calibrating the scale: s %.4g, mean confidence %.4f, target (MAP accuracy) %.4f", p.s, p.conf, target))
		return p, nil
	}
	lo, err := eval(smin)
	if err != nil {
		return point{}, err
	}
	hi, err := eval(smax)
	if err != nil {
		return point{}, err
	}
	meta["confidence_scale_min"], meta["confidence_scale_max"] = fmtF(round(lo.conf)), fmtF(round(hi.conf))
	below := lo.conf < target // the side of the target scale_min is on
	if below == (hi.conf < target) {
		// No sign change. A wider posterior is the less confident one (as
		// a rule), so the end towards the target is taken: the narrowest
		// posterior (scale_max) when even it is less confident than the
		// target, the widest (scale_min) when even it is more confident.
		// (The end whose confidence is nearer could be a network drowned
		// in noise whose few draws still agree by chance.)
		name, p := "scale_max", hi
		why := "less confident than the MAP is accurate at both ends (a higher scale_max, or a higher delta, which bounds every variance by 1/delta, narrows the posterior)"
		if mapConf < target {
			why = fmt.Sprintf("less confident than the MAP is accurate at both ends, and so is the MAP network itself (mean confidence %.4f): no width of the posterior reaches the target", mapConf)
		}
		if !below {
			name, p = "scale_min", lo
			why = "more confident than the MAP is accurate at both ends (a lower scale_min, or a lower delta, which bounds every variance by 1/delta, widens the posterior)"
		}
		meta["calibration"] = "no root in the bracket: " + name + " taken"
		meta["note"] = fmt.Sprintf("calibration found no scale in [%s, %s] whose mean validation confidence equals the MAP's validation accuracy %.4f: the sampled predictive is %s; took %s = %s, the end towards the target (confidence %.4f)",
			fmtF(smin), fmtF(smax), target, why, name, fmtF(p.s), p.conf)
		return p, nil
	}
	a, b := math.Log(smin), math.Log(smax)
	var m point
	for i := range maxIter {
		mid := (a + b) / 2
		if m, err = eval(math.Exp(mid)); err != nil {
			return point{}, err
		}
		if math.Abs(m.conf-target) <= tol {
			meta["calibration"] = fmt.Sprintf("root found by bisection (%d halvings)", i+1)
			return m, nil
		}
		if (m.conf < target) == below {
			a = mid
		} else {
			b = mid
		}
	}
	meta["calibration"] = fmt.Sprintf("bisection stopped after %d halvings, %.4g from the target", maxIter, math.Abs(m.conf-target))
	return m, nil
}

// round keeps 6 decimals, for metadata that people read.
func round(v float64) float64 { return math.Round(v*1e6) / 1e6 }
