package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/metric"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// The metric step: with Plan.Metrics, every explained batch's maps are
// scored by each metric before the batch reaches the Analysis:
//
//   - draw s's map of a record under draw s's own network (Batch.DrawScores),
//     so that a record's S scores are the metric's distribution over the
//     posterior;
//   - a map summary's map under the posterior predictive, the network
//     whose probabilities are the mean of the S draws' (Batch.SummaryScores;
//     its logits, for a metric that reads them, log p; with one draw, the
//     draw's network itself): the summary explains the S draws together.
//     A metric that explains perturbed inputs again gets the summary of
//     the S draws' maps of them; one that re-initialises a network's
//     layers (Needs.Params: MPRT) has no predictive network to
//     re-initialise, and its summary scores (S > 1) are undefined, saying
//     so.
//
// The maps are scored as [output] maps stores them, rounded to float32
// (asStored).
//
// Every random draw of a metric for record r of split sp is keyed by
// (seed, "metric", sp, r, 0), the same for every draw's map and every
// summary's: common random numbers, so that a record's spread over the
// draws and a summary's gain over them are the maps' and the networks',
// not the noise's, and a summary of one draw scores as the draw does.
// Scores are therefore the same bytes for any workers, shards and
// resumes. The perturbed copies a metric explains of a batch are records
// 0, 1, ... (in the order the metric asks for them, fixed by the batch)
// of split sp "/metric/" k "/" (the batch's first record), for the
// draws' maps and the summaries' alike, so a stochastic explainer gives
// a summary's copies the seeds of its draws' copies.

// MetricPurpose keys the metrics' random draws: record r of split sp gets
// rng.Key(seed, MetricPurpose, sp, r, 0). uaxai evaluate uses it too.
const MetricPurpose = "metric"

// paramsModel is a network that gives its parameters (what MPRT
// re-initialises).
type paramsModel interface{ Params() nn.Params }

// metricScores sets ab.DrawScores and ab.SummaryScores; x holds the
// batch's inputs one after another.
func (b *block) metricScores(ctx context.Context, ab *Batch, x []float32, models []*driver.DrawModel, ts TestSplit) error {
	ms := b.p.Metrics
	n, S := len(ab.Records), len(models)
	L := len(x) / n
	C := ts.NumChannels()
	in := metric.Input{N: n, C: C, T: L / C, X: x, Targets: ab.Targets, Maps: make([]float64, n*L), Keys: make([]uint64, n)}
	if !ts.Unlabelled {
		in.Masks = make([]bool, 0, n*L)
		for _, m := range ab.Masks {
			in.Masks = append(in.Masks, m...)
		}
	}
	where := func(what string) string {
		return fmt.Sprintf("%s / %s, split %s records %d..%d, %s", b.ps.Name(), b.es.Label, ts.Name, ab.Records[0], ab.Records[n-1], what)
	}
	ab.DrawScores = make([][][]metric.Score, len(ms))
	for k := range ms {
		ab.DrawScores[k] = make([][]metric.Score, n)
		for j := range n {
			ab.DrawScores[k][j] = make([]metric.Score, S)
		}
	}
	for j := range n { // common to every draw's map and every summary's
		in.Keys[j] = rng.Key(b.p.Seed, MetricPurpose, ts.Name, ab.Records[j], 0)
	}
	dst := make([]metric.Score, n)
	for s, dm := range models {
		for j := range n {
			asStored(in.Maps[j*L:(j+1)*L], ab.Maps[j][s])
		}
		re := &Reexplainer{Step: &b.step, Explainer: b.ex, ExplainerID: b.es.ID}
		err := dm.Call(ctx, func(model nn.Model) error {
			in.Model = model
			for k, m := range ms {
				re.Split, re.Next = metricSplit(ts, k, ab), 0
				in.Explain = re.Func(s, model)
				if err := scoreOrUndefined(ctx, m, &in, dst); err != nil {
					return err
				}
				for j := range n {
					ab.DrawScores[k][j][s] = dst[j]
				}
			}
			return nil
		})
		if err = errors.Join(err, re.Close()); err != nil {
			return fmt.Errorf("%s, draw %d: %w", where("metrics"), s, err)
		}
	}
	ab.SummaryScores = make([][][]metric.Score, len(ms))
	for k := range ms {
		ab.SummaryScores[k] = make([][]metric.Score, len(ab.Summaries))
	}
	score := func(model nn.Model) error {
		in.Model = model
		for i, sm := range ab.Summaries {
			if sm == nil {
				continue
			}
			if b.p.Stored != nil { // the summary's maps as stored, not made again from the stored draws'
				var err error
				if sm, err = b.p.Stored.Summary(b.ps, b.es, i, ab.Split, ab.Records); err != nil {
					return fmt.Errorf("%s: stored maps: %w", where(b.p.Summaries[i].Label+" maps"), err)
				}
			}
			for j := range n {
				asStored(in.Maps[j*L:(j+1)*L], sm[j])
			}
			for k, m := range ms {
				scores := make([]metric.Score, n)
				ab.SummaryScores[k][i] = scores
				if m.Info().Needs.Params && S > 1 {
					for j := range scores {
						scores[j] = metric.Score{Value: math.NaN(), Undefined: m.Info().ID + " re-initialises one network's layers; a summary map explains the S draws together"}
					}
					continue
				}
				var one *Reexplainer
				if S == 1 {
					one = &Reexplainer{Step: &b.step, Explainer: b.ex, ExplainerID: b.es.ID, Split: metricSplit(ts, k, ab)}
				}
				in.Explain = b.summaryExplain(i, model, metricSplit(ts, k, ab), one)
				err := scoreOrUndefined(ctx, m, &in, scores)
				if one != nil {
					err = errors.Join(err, one.Close())
				}
				if err != nil {
					return fmt.Errorf("%s: %w", where(b.p.Summaries[i].Label+" maps, metrics"), err)
				}
			}
		}
		return nil
	}
	if S == 1 {
		// the posterior predictive is the one network
		return models[0].Call(ctx, score)
	}
	return score(&meanModel{models: models, arch: b.p.Arch})
}

// asStored writes into dst the map m as [output] maps stores it, each
// value rounded to float32, so that uaxai evaluate RUN_DIR, which scores
// the stored maps, gives the same scores to the bit.
func asStored(dst, m []float64) {
	for i, v := range m {
		dst[i] = float64(float32(v))
	}
}

// metricSplit names the split of the perturbed copies that metric k
// explains of the batch: the draws' and the summaries' alike, so that a
// summary's copies get the seeds its draws' copies get.
func metricSplit(ts TestSplit, k int, ab *Batch) string {
	return ts.Name + "/metric/" + strconv.Itoa(k) + "/" + strconv.Itoa(ab.Records[0])
}

// scoreOrUndefined is m.Score, except that a localisation metric on
// records without masks (an unlabelled recording), or a metric that
// re-initialises a network's layers asked of one that does not give its
// parameters (a served draw), gives every record an undefined score
// saying so.
func scoreOrUndefined(ctx context.Context, m metric.Metric, in *metric.Input, dst []metric.Score) error {
	if m.Info().Needs.Mask && in.Masks == nil {
		for j := range dst {
			dst[j] = metric.Score{Value: math.NaN(), Undefined: m.Info().ID + " needs a ground-truth mask, and the records have none (a recording)"}
		}
		return nil
	}
	if m.Info().Needs.Params {
		if _, ok := in.Model.(paramsModel); !ok {
			for j := range dst {
				dst[j] = metric.Score{Value: math.NaN(), Undefined: fmt.Sprintf("%s re-initialises the network's layers: this draw's network (%T) does not give its parameters", m.Info().ID, in.Model)}
			}
			return nil
		}
	}
	return m.Score(ctx, in, dst)
}

// summaryExplain is the ExplainFunc of summary i's maps under the
// predictive pred: the perturbed inputs explained under every draw,
// summarised as the summary does. With one draw (one, not nil: the draw's
// own Reexplainer), another network (MPRT's re-initialised copies) is
// explained through one.
func (b *block) summaryExplain(i int, pred nn.Model, split string, one *Reexplainer) metric.ExplainFunc {
	next := 0
	var oneFn metric.ExplainFunc
	if one != nil {
		oneFn = one.Func(0, pred)
	}
	return func(ctx context.Context, model nn.Model, x []float32, targets []int, dst []float64) error {
		B := len(targets)
		maps := newMaps(B, len(b.step.Models))
		switch {
		case model == pred:
			records := make([]int, B)
			for j := range records {
				records[j] = next
				next++
			}
			in := Inputs{Split: split, Records: records, X: x, Targets: targets, Where: fmt.Sprintf("perturbed copies %d..%d of split %s", records[0], records[B-1], split)}
			if err := b.step.Explain(ctx, maps, in); err != nil {
				return err
			}
		case one != nil:
			if err := oneFn(ctx, model, x, targets, dst); err != nil {
				return err
			}
			L := len(dst) / B
			for j := range maps {
				maps[j][0] = append([]float64(nil), dst[j*L:(j+1)*L]...)
			}
		default:
			return fmt.Errorf("a summary map's metric asked to explain with another network (%T) than the posterior predictive", model)
		}
		res, err := b.sums[i].Summarise(ctx, maps, b.p.Summaries[i].Config)
		if err != nil {
			return fmt.Errorf("%s on perturbed copies: %w", b.sums[i].Info().ID, err)
		}
		if len(res) != B {
			return fmt.Errorf("%s gave %d results for %d perturbed copies", b.sums[i].Info().ID, len(res), B)
		}
		L := len(dst) / B
		for j, r := range res {
			if len(r.Map) != L {
				return fmt.Errorf("%s gave a map of %d values for a perturbed copy of %d", b.sums[i].Info().ID, len(r.Map), L)
			}
			copy(dst[j*L:(j+1)*L], r.Map)
		}
		return nil
	}
}

// Reexplainer gives the metrics of one draw's maps their ExplainFunc: the
// explainer's maps of perturbed inputs under the draw's network, as
// records Next, Next+1, ... of split Split (a stochastic explainer's seeds
// do not repeat the maps'). Another network (MPRT's re-initialised
// copies, which uaxai computes) is loaded into the explainer for as long
// as it is asked for; Close releases it.
type Reexplainer struct {
	Step        *Explaining      // the explainer with the draws loaded
	Explainer   driver.Explainer // loads other networks
	ExplainerID string
	Split       string
	Next        int

	other     nn.Model
	otherStep Explaining
}

// Func is the ExplainFunc of draw s, whose network is own.
func (r *Reexplainer) Func(s int, own nn.Model) metric.ExplainFunc {
	return func(ctx context.Context, model nn.Model, x []float32, targets []int, dst []float64) error {
		step, draw := r.Step, s
		if model != own {
			if model != r.other {
				pm, ok := model.(paramsModel)
				if !ok {
					return fmt.Errorf("a network of type %T cannot be loaded into the explainer %s (accepted: a network uaxai computes)", model, r.ExplainerID)
				}
				if err := r.Close(); err != nil {
					return err
				}
				dm, err := r.Explainer.Load(ctx, sdk.Draw{Params: pm.Params()})
				if err != nil {
					return fmt.Errorf("%s: load a re-initialised network: %w", r.ExplainerID, err)
				}
				r.other = model
				r.otherStep = Explaining{ID: r.Step.ID, Config: r.Step.Config, Stochastic: r.Step.Stochastic, Seed: r.Step.Seed, Models: []driver.Model{dm}}
			}
			step, draw = &r.otherStep, 0
		}
		B := len(targets)
		records := make([]int, B)
		for j := range records {
			records[j] = r.Next
			r.Next++
		}
		out := newMaps(B, len(step.Models))
		in := Inputs{Split: r.Split, Records: records, X: x, Targets: targets, Where: fmt.Sprintf("perturbed copies %d..%d of split %s", records[0], records[B-1], r.Split)}
		if err := step.Explain(ctx, out, in, draw); err != nil {
			return err
		}
		L := len(dst) / B
		for j := range B {
			copy(dst[j*L:(j+1)*L], out[j][draw])
		}
		return nil
	}
}

// Close releases the other network loaded, if any.
func (r *Reexplainer) Close() error {
	var err error
	for _, m := range r.otherStep.Models {
		err = errors.Join(err, m.Close())
	}
	r.otherStep.Models, r.other = nil, nil
	return err
}

// meanModel is the posterior predictive as a network: its probabilities
// are the mean of the draws', p(c | x) = (1/S) sum_s p(c | x, theta_s),
// and so is their gradient; its logits are log p(c | x) (whose softmax is
// p), for the metrics that read logits. It has no layers of its own.
type meanModel struct {
	models []*driver.DrawModel
	arch   nn.Arch
}

func (m *meanModel) Arch() nn.Arch  { return m.arch }
func (m *meanModel) InputLen() int  { return m.arch.InChannels * m.arch.InLen }
func (m *meanModel) Classes() int   { return m.arch.Classes() }
func (m *meanModel) String() string { return fmt.Sprintf("the mean of %d draws", len(m.models)) }

func (m *meanModel) Probs(ctx context.Context, dst, x []float32) error {
	return m.mean(ctx, dst, func(nm nn.Model, d []float32) error { return nm.Probs(ctx, d, x) })
}

// Logits writes log p(c | x), p at least the least positive float32 (so
// that a class no draw gives any probability has a finite logit).
func (m *meanModel) Logits(ctx context.Context, dst, x []float32) error {
	if err := m.Probs(ctx, dst, x); err != nil {
		return err
	}
	logOf(dst)
	return nil
}

// logOf replaces each probability p of dst by log p, p at least the least
// positive float32.
func logOf(dst []float32) {
	for j, p := range dst {
		dst[j] = float32(math.Log(math.Max(float64(p), math.SmallestNonzeroFloat32)))
	}
}

// ChainOutputs computes the chains' outputs as Probs and Logits compute
// a copy's: each draw's chains of probabilities (nn.Chained: the draw's
// own path where it has one), their mean, and its log for logits.
func (m *meanModel) ChainOutputs(ctx context.Context, req nn.Chain, dst []float32) (bool, error) {
	r := req
	r.Logits = false
	if err := m.mean(ctx, dst, func(nm nn.Model, d []float32) error { return nn.Chained(ctx, nm, r, d) }); err != nil {
		return false, err
	}
	if req.Logits {
		logOf(dst)
	}
	return true, nil
}

func (m *meanModel) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	if probs != nil {
		if err := m.Probs(ctx, probs, x); err != nil {
			return err
		}
	}
	return m.mean(ctx, dst, func(nm nn.Model, d []float32) error { return nm.InputGrad(ctx, d, nil, x, target) })
}

func (m *meanModel) LayerShape(context.Context, string) (nn.Shape, error) {
	return nn.Shape{}, errors.New("the posterior predictive (the mean of the draws) has no layers of its own")
}

func (m *meanModel) LayerGrad(context.Context, []float32, []float32, []float32, []int, string) error {
	return errors.New("the posterior predictive (the mean of the draws) has no layers of its own")
}

// mean writes into dst the mean over the draws of what f writes, summed
// in float64 in draw order.
func (m *meanModel) mean(ctx context.Context, dst []float32, f func(nn.Model, []float32) error) error {
	sum := make([]float64, len(dst))
	for s, dm := range m.models {
		if err := dm.Call(ctx, func(nm nn.Model) error { return f(nm, dst) }); err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		for j, v := range dst {
			sum[j] += float64(v)
		}
	}
	for j, v := range sum {
		dst[j] = float32(v / float64(len(m.models)))
	}
	return nil
}

// randomisedW1 sets ab.RandomisedW1: every draw's network re-initialised
// in every layer (metric.Reinitialise, PyTorch's reset_parameters; draw
// s's draws keyed by (seed, "randomise", "", s, 0)), the batch explained
// again under each, and per record the mean over samples of the
// 1-Wasserstein distance between the S maps and the S maps of the
// re-initialised draws (eval.CoordW1, on |R| when the run scores |R|):
// does re-initialising the model move the whole explanation
// distribution? A draw that does not give its parameters (a served
// network) leaves the records undefined (NaN), with the reason in
// ab.RandomisedWhy.
func (b *block) randomisedW1(ctx context.Context, ab *Batch, x []float32, models []*driver.DrawModel, ts TestSplit) error {
	n, S := len(ab.Records), len(models)
	L := len(x) / n
	rand := newMaps(n, S)
	for s, dm := range models {
		re := &Reexplainer{Step: &b.step, Explainer: b.ex, ExplainerID: b.es.ID, Split: ts.Name + "/randomised/" + strconv.Itoa(ab.Records[0])}
		why := ""
		err := dm.Call(ctx, func(own nn.Model) error {
			pm, ok := own.(paramsModel)
			if !ok {
				why = fmt.Sprintf("re-initialising the draws needs their parameters: this draw's network (%T) does not give them", own)
				return nil
			}
			p := pm.Params()
			lay, err := nn.NewLayout(p.Arch)
			if err != nil {
				return err
			}
			data := slices.Clone(p.Data)
			seed := rng.Key(b.p.Seed, "randomise", "", s, 0)
			for _, layer := range metric.Layers(lay) {
				metric.Reinitialise(data, lay, layer, seed)
			}
			rm, err := nn.Open(nn.Params{Arch: p.Arch, Data: data})
			if err != nil {
				return fmt.Errorf("the re-initialised network: %w", err)
			}
			dst := make([]float64, n*L)
			if err := re.Func(s, own)(ctx, rm, x, ab.Targets, dst); err != nil {
				return err
			}
			for j := range n {
				rand[j][s] = dst[j*L : (j+1)*L]
			}
			return nil
		})
		if err = errors.Join(err, re.Close()); err != nil {
			return fmt.Errorf("%s / %s, split %s records %d..%d, draw %d re-initialised: %w", b.ps.Name(), b.es.Label, ts.Name, ab.Records[0], ab.Records[n-1], s, err)
		}
		if why != "" {
			ab.RandomisedW1, ab.RandomisedWhy = nil, why
			return nil
		}
	}
	ab.RandomisedW1 = make([]float64, n)
	scratch := make([]float64, 2*S)
	for j := range n {
		ab.RandomisedW1[j] = eval.CoordW1(eval.AbsMaps(ab.Maps[j], b.p.Abs), eval.AbsMaps(rand[j], b.p.Abs), scratch)
	}
	return nil
}
