package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/rng"
)

// exec is the state of one process's work on a plan's units.
type exec struct {
	p          *Plan
	res        Plugins
	store      UnitStore
	obs        Observer
	tim        Timings
	posts      []sdk.Posterior
	explainers []driver.Explainer
	summaries  []sdk.Summary
	fits       *fitter
	arts       map[int]sdk.Artifact
	draws      map[int][]sdk.Draw
	models     map[int][]*driver.DrawModel // the draws as the host predicts with them
	checks     map[int]*posteriorCheck     // each posterior's check of itself (selfcheck.go)
	cur        *block                      // the loaded pair
	curKey     [2]int
	costs      map[string]float64
}

// resolve resolves the plan's plugins.
func resolve(ctx context.Context, p *Plan, res Plugins, withExplainers bool) (*exec, error) {
	e := &exec{p: p, res: res, arts: map[int]sdk.Artifact{}, draws: map[int][]sdk.Draw{}, models: map[int][]*driver.DrawModel{}, checks: map[int]*posteriorCheck{}, costs: map[string]float64{}}
	if withExplainers {
		for _, s := range p.Explainers {
			ex, err := res.Explainer(ctx, s.ID)
			if err != nil {
				return nil, err
			}
			e.explainers = append(e.explainers, ex)
		}
		for _, ps := range p.Posteriors {
			post, err := res.Posterior(ctx, ps.ID)
			if err != nil {
				return nil, err
			}
			e.posts = append(e.posts, post)
		}
	}
	for _, s := range p.Summaries {
		sm, err := res.Summary(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		e.summaries = append(e.summaries, sm)
	}
	return e, nil
}

func checkPlan(ctx context.Context, p *Plan, res Plugins) error {
	p.defaults()
	if p.Parts == nil {
		if err := FitParts(ctx, p, res); err != nil {
			return err
		}
	}
	for _, ts := range p.Tests {
		if ts.Unlabelled != p.Tests[0].Unlabelled {
			return fmt.Errorf("engine: test splits %s and %s: one is labelled and one is not", p.Tests[0].Name, ts.Name)
		}
	}
	// The per-channel scores need one C and one set of channel names over
	// a posterior's splits, and inputs of C rows of equal length.
	for _, ps := range append([]Step{{}}, p.Posteriors...) {
		tests := p.testsOf(ps)
		if _, _, err := channelsOf(tests); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		for _, ts := range tests {
			if C := ts.NumChannels(); ts.Data.Len%C != 0 {
				return fmt.Errorf("engine: test split %s: inputs of %d values are not %d channels of equal length", ts.Name, ts.Data.Len, C)
			}
		}
	}
	return nil
}

// RunUnits does the units of one shard that are not done yet, storing
// each in store. A unit already done (by this shard earlier, or by
// another) is skipped; one whose payload does not read back whole is set
// aside, reported and done again. An explain unit whose posterior is not
// fitted yet fits it first, under the fit unit's lock: a fit that another
// process is doing is waited for, never done twice. It returns the wall
// times, and the wall time of every unit it did, by name.
func RunUnits(ctx context.Context, p Plan, res Plugins, cache Cache, store UnitStore, shard Shard, obs Observer) (_ Timings, _ map[string]float64, err error) {
	if obs == nil {
		obs = NopObserver{}
	}
	if err := checkPlan(ctx, &p, res); err != nil {
		return nil, nil, err
	}
	units, err := shard.Select(Units(p))
	if err != nil {
		return nil, nil, err
	}
	if len(p.Explainers) == 0 {
		return nil, nil, fmt.Errorf("engine: a plan needs an explainer")
	}
	e, err := resolve(ctx, &p, res, true)
	if err != nil {
		return nil, nil, err
	}
	e.store, e.obs, e.tim = store, obs, Timings{}
	if e.fits, err = newFitter(ctx, &p, res, cache, obs, e.tim, e.posts); err != nil {
		return e.tim, nil, err
	}
	defer func() {
		if cerr := e.closePair(); err == nil && cerr != nil {
			err = cerr
		}
		e.closeDraws()
	}()
	for i, u := range units {
		if err := ctx.Err(); err != nil {
			return e.tim, e.costs, err
		}
		switch u.Kind {
		case FitUnit:
			_, err = e.doFit(ctx, u)
		default:
			err = e.explainUnit(ctx, u, units[i:])
		}
		if err != nil {
			return e.tim, e.costs, err
		}
	}
	return e.tim, e.costs, nil
}

// load returns unit u's payload decoded into v (whose fingerprint and
// identity are *fingerprint and *id): false when the unit is not done. A
// payload that does not read back whole, or that is another unit's (a
// file copied onto this unit's name), is set aside, reported, and the
// unit is done again. A payload of another run is an error.
func (e *exec) load(u UnitID, v any, fingerprint *string, id *UnitID) (bool, error) {
	name := u.Name
	b, ok, err := e.store.Load(name)
	if err == nil && ok {
		if derr := gob.NewDecoder(bytes.NewReader(b)).Decode(v); derr != nil {
			err = fmt.Errorf("unit %s: decoding: %w", name, derr)
		} else if *fingerprint == e.p.Fingerprint && *id != u {
			err = fmt.Errorf("unit %s: its payload is unit %s's output, not %s's", name, *id, u)
		}
	}
	if err != nil {
		where, aerr := e.store.SetAside(name)
		if aerr != nil {
			return false, fmt.Errorf("%w (and setting it aside: %v)", err, aerr)
		}
		e.obs.Note(fmt.Sprintf("%v: set aside as %s; doing the unit again", err, where))
		return false, nil
	}
	if ok && *fingerprint != e.p.Fingerprint {
		return false, fmt.Errorf("unit %s belongs to another run (fingerprint %.12s, this run's is %.12s): accepted: a run directory of one recipe", name, *fingerprint, e.p.Fingerprint)
	}
	return ok, nil
}

// fitUnit returns posterior pi's artifact: kept in this process, read
// from its unit, or fitted (under the unit's lock) and stored. A parted
// posterior's artifact is joined from its parts' units (each fitted the
// same way if it is not done).
func (e *exec) fitUnit(ctx context.Context, pi int) (sdk.Artifact, error) {
	if a, ok := e.arts[pi]; ok {
		return a, nil
	}
	k := e.p.parts(pi)
	if k <= 1 {
		a, err := e.fitOrLoad(ctx, pi, -1)
		if err == nil {
			e.arts[pi] = a
		}
		return a, err
	}
	parts := make([]sdk.Artifact, k)
	for part := range parts {
		var err error
		if parts[part], err = e.fitOrLoad(ctx, pi, part); err != nil {
			return sdk.Artifact{}, err
		}
	}
	a, err := JoinParts(parts)
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("posterior %s: joining its %d parts: %w", e.p.Posteriors[pi].Name(), k, err)
	}
	e.arts[pi] = a
	return a, nil
}

// fitOrLoad returns the artifact of fit unit (pi, part) (part -1: the
// whole fit): read from its unit, or fitted under its lock and stored.
func (e *exec) fitOrLoad(ctx context.Context, pi, part int) (sdk.Artifact, error) {
	name := fitName(pi)
	if part >= 0 {
		name = partName(pi, part)
	}
	id := Unit{Name: name, Kind: FitUnit, Post: pi, Part: part}.ID()
	ps := e.p.Posteriors[pi]
	var fp fitPayload
	if ok, err := e.load(id, &fp, &fp.Fingerprint, &fp.ID); ok || err != nil {
		return fp.Artifact, err
	}
	unlock, err := e.store.Lock(ctx, name, func() {
		e.obs.Note(fmt.Sprintf("%s: another process is fitting it (unit %s): waiting", ps.Name(), name))
	})
	if err != nil {
		return sdk.Artifact{}, err
	}
	defer unlock()
	if ok, err := e.load(id, &fp, &fp.Fingerprint, &fp.ID); ok || err != nil {
		return fp.Artifact, err
	}
	t0 := time.Now()
	var art sdk.Artifact
	if part < 0 {
		art, err = e.fits.fit(ctx, ps, e.posts[pi])
	} else {
		art, err = e.fits.fitPart(ctx, ps, e.posts[pi], part, e.p.parts(pi))
	}
	if err != nil {
		return sdk.Artifact{}, err
	}
	sec := time.Since(t0).Seconds()
	e.tim["fit "+ps.Name()] += time.Since(t0)
	b, err := encode(fitPayload{Fingerprint: e.p.Fingerprint, ID: id, Artifact: art, Seconds: sec})
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("unit %s: %w", name, err)
	}
	if err := e.store.Save(name, b); err != nil {
		return sdk.Artifact{}, err
	}
	e.costs[name] = sec
	return art, nil
}

// doFit does fit unit u (the artifact is kept for the process only if
// the unit is the posterior's whole fit).
func (e *exec) doFit(ctx context.Context, u Unit) (sdk.Artifact, error) {
	if u.Part < 0 {
		return e.fitUnit(ctx, u.Post)
	}
	return e.fitOrLoad(ctx, u.Post, u.Part)
}

// drawsOf samples posterior pi's draws (once a process), and opens each
// as the host predicts with it: its network built from its parameters,
// or, for a draw that the posterior serves, a client of the posterior's
// model service (whose input length and classes must be the plan's).
func (e *exec) drawsOf(ctx context.Context, pi int) ([]sdk.Draw, []*driver.DrawModel, error) {
	if d, ok := e.draws[pi]; ok {
		return d, e.models[pi], nil
	}
	art, err := e.fitUnit(ctx, pi)
	if err != nil {
		return nil, nil, err
	}
	ps := e.p.Posteriors[pi]
	seeds := make([]uint64, ps.Draws)
	for s := range seeds {
		seeds[s] = rng.Key(e.p.Seed, "posterior", ps.ID, -1, s)
	}
	draws, err := driver.SampleDraws(ctx, e.posts[pi], art, sdk.SampleRequest{Seeds: seeds, Config: ps.Config})
	if err != nil {
		return nil, nil, fmt.Errorf("posterior %s: sample: %w", ps.ID, err)
	}
	if len(draws) != ps.Draws {
		return nil, nil, fmt.Errorf("posterior %s: asked for %d draws, got %d", ps.ID, ps.Draws, len(draws))
	}
	models := make([]*driver.DrawModel, 0, len(draws))
	closeAll := func() {
		for _, m := range models {
			m.Close()
		}
	}
	n, k := e.p.Arch.InChannels*e.p.Arch.InLen, e.p.Arch.Classes()
	// A served draw's requests have the posterior's limit (model_call):
	// past it its process is killed and the prediction fails, naming it.
	calls := driver.ModelCallsOf(e.posts[pi])
	for s, d := range draws {
		m, err := driver.OpenDraw(ctx, d, calls)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("posterior %s: draw %d: %w", ps.ID, s, err)
		}
		models = append(models, m)
		if d.Served != nil && (m.InputLen() != n || m.Classes() != k) {
			closeAll()
			return nil, nil, fmt.Errorf("posterior %s: draw %d: %v: inputs of %d values and %d classes; the run's model has inputs of %d values (%d x %d) and %d classes",
				ps.ID, s, *d.Served, m.InputLen(), m.Classes(), n, e.p.Arch.InChannels, e.p.Arch.InLen, k)
		}
	}
	e.draws[pi], e.models[pi] = draws, models
	return draws, models, nil
}

// closeDraws closes the draws' models (a served draw's connection).
func (e *exec) closeDraws() {
	for pi, ms := range e.models {
		for _, m := range ms {
			m.Close()
		}
		delete(e.models, pi)
		delete(e.draws, pi)
	}
}

// newBlock is the block of pair (pi, ei) with room for every record.
func newBlock(p *Plan, pi, ei int, ex driver.Explainer, sums []sdk.Summary) *block {
	b := &block{p: p, ps: p.Posteriors[pi], es: p.Explainers[ei], ex: ex, sums: sums, draws: p.Posteriors[pi].Draws, repeats: 1, tests: p.testsOf(p.Posteriors[pi])}
	if p.Analysis != nil {
		b.repeats, b.dists = p.Analysis.Repeats(), p.Analysis.Distortions()
	}
	k := p.Arch.Classes()
	b.preds = make([][]int, len(b.tests))
	b.probs = make([][]float64, len(b.tests))
	b.ment = make([][]float64, len(b.tests))
	b.agree = make([][]float64, len(b.tests))
	b.fscore = make([][]float64, len(b.tests))
	b.recs = make([][][]Record, len(sums))
	b.outs = make([][][]*OutputRecord, len(sums))
	for i := range sums {
		b.recs[i] = make([][]Record, len(b.tests))
		b.outs[i] = make([][]*OutputRecord, len(b.tests))
	}
	for si, ts := range b.tests {
		b.preds[si] = make([]int, ts.Data.N)
		b.probs[si] = make([]float64, ts.Data.N*k)
		b.ment[si] = make([]float64, ts.Data.N)
		b.agree[si] = make([]float64, ts.Data.N)
		b.fscore[si] = make([]float64, ts.Data.N)
		for i := range sums {
			b.recs[i][si] = make([]Record, ts.Data.N)
			b.outs[i][si] = make([]*OutputRecord, ts.Data.N)
		}
	}
	return b
}

// pair returns the block of pair (pi, ei) with its draws loaded into the
// explainer (the previous pair's are released first).
func (e *exec) pair(ctx context.Context, u Unit, rest []Unit) (*block, error) {
	key := [2]int{u.Post, u.Exp}
	if e.cur != nil && e.curKey == key {
		return e.cur, nil
	}
	if err := e.closePair(); err != nil {
		return nil, err
	}
	draws, _, err := e.drawsOf(ctx, u.Post)
	if err != nil {
		return nil, err
	}
	b := newBlock(e.p, u.Post, u.Exp, e.explainers[u.Exp], e.summaries)
	b.activate(len(draws))
	b.step = Explaining{ID: b.es.ID, Config: b.es.Config, Stochastic: b.ex.Info().Stochastic, Seed: e.p.Seed}
	for s, d := range draws {
		m, err := b.ex.Load(ctx, d)
		if err != nil {
			b.close()
			// A served draw's Describe past model_call: its posterior
			// is stopped too.
			err = driver.ModelCallsOf(e.posts[u.Post]).Expire(err)
			return nil, fmt.Errorf("%s: draw %d of %s: %w", b.es.ID, s, b.ps.Name(), err)
		}
		b.step.Models = append(b.step.Models, m)
	}
	total := 0
	for _, v := range rest {
		if v.Kind == ExplainUnit && v.Post == u.Post && v.Exp == u.Exp {
			total += v.B1 - v.B0
		}
	}
	e.obs.Stage(fmt.Sprintf("explain %s / %s", b.ps.Name(), b.es.Label), total)
	b.done = &atomic.Int64{}
	e.cur, e.curKey = b, key
	return b, nil
}

func (e *exec) closePair() error {
	if e.cur == nil {
		return nil
	}
	e.cur.notePaths(e.obs)
	err := e.cur.close()
	e.cur = nil
	return err
}

// explainUnit does one explain unit (rest: it and the shard's units after
// it, for the progress of its pair).
func (e *exec) explainUnit(ctx context.Context, u Unit, rest []Unit) error {
	var pl explainPayload
	// A payload of an older uaxai (without the posterior's check) is done
	// again.
	if ok, err := e.load(u.ID(), &pl, &pl.Fingerprint, &pl.ID); ok && pl.Checked || err != nil {
		return err
	}
	unlock, err := e.store.Lock(ctx, u.Name, func() {
		e.obs.Note(fmt.Sprintf("unit %s: another process is doing it: waiting", u.Name))
	})
	if err != nil {
		return err
	}
	defer unlock()
	pl = explainPayload{}
	if ok, err := e.load(u.ID(), &pl, &pl.Fingerprint, &pl.ID); ok && pl.Checked || err != nil {
		return err
	}
	b, err := e.pair(ctx, u, rest)
	if err != nil {
		return err
	}
	t0 := time.Now()
	_, models, err := e.drawsOf(ctx, u.Post)
	if err != nil {
		return err
	}
	p := e.p
	k := p.Arch.Classes()
	si := u.Split
	d := b.tests[si].Data
	err = parallelRange(ctx, u.B0, u.B1, p.Batch, p.Workers, func(ctx context.Context, b0, b1 int) error {
		pb := b.probs[si][b0*k : b1*k]
		ent, votes := b.ment[si][b0:b1], make([]int32, (b1-b0)*k)
		if err := sumDrawProbs(ctx, pb, models, d.X[b0*d.Len:b1*d.Len], ent, votes); err != nil {
			return fmt.Errorf("posterior %s: predicting records %d..%d of split %s: %w", b.ps.ID, b0, b1-1, b.tests[si].Name, err)
		}
		argmaxRows(b.preds[si][b0:b1], pb, k) // on the sums, as PredictMean
		S := float64(len(models))
		scale(pb, 1/S)
		scale(ent, 1/S)
		for i, c := range b.preds[si][b0:b1] {
			b.agree[si][b0+i] = float64(votes[i*k+c]) / S
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unit %s: %w", u.Name, err)
	}
	// The first explainer's units check the records (selfcheck.go), after
	// the predictions: the check is fitted on the first such unit.
	var check *posteriorCheck
	if u.Exp == 0 {
		if check, err = e.checkOf(ctx, u.Post); err != nil {
			return fmt.Errorf("unit %s: %w", u.Name, err)
		}
	}
	if check != nil && check.draws != nil {
		err = parallelRange(ctx, u.B0, u.B1, p.Batch, p.Workers, func(ctx context.Context, b0, b1 int) error {
			// one goroutine a batch already: the features run in it
			feats := e.drawFeatures(ctx, models, check.draws.D)
			if err := check.draws.Score(b.fscore[si][b0:b1], feats, d.X[b0*d.Len:b1*d.Len]); err != nil {
				return fmt.Errorf("posterior %s: the feature check of records %d..%d of split %s: %w", b.ps.ID, b0, b1-1, b.tests[si].Name, driver.ModelCallsOf(e.posts[u.Post]).Expire(err))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("unit %s: %w", u.Name, err)
		}
	}
	if firstActive(b.active) >= 0 || firstActive(b.output) >= 0 || p.Analysis != nil {
		err = parallelRange(ctx, u.B0, u.B1, p.Batch, p.Workers, func(ctx context.Context, b0, b1 int) error {
			idx, maps, err := b.explainBatch(ctx, si, b0, b1)
			if err != nil {
				// An explainer's request to a served draw past
				// model_call: its posterior is stopped too.
				return driver.ModelCallsOf(e.posts[u.Post]).Expire(err)
			}
			sumMaps, err := b.scoreBatch(ctx, si, b0, b1, idx, maps)
			if err != nil {
				return err
			}
			if err := b.analyse(ctx, si, idx, maps, sumMaps, models); err != nil {
				return err
			}
			e.obs.Advance(int(b.done.Add(int64(b1-b0))), "")
			return nil
		})
		if err != nil {
			return fmt.Errorf("unit %s: %w", u.Name, err)
		}
	}
	pl = explainPayload{Fingerprint: p.Fingerprint, ID: u.ID(), Preds: b.preds[si][u.B0:u.B1], Probs: b.probs[si][u.B0*k : u.B1*k],
		MeanEntropy: b.ment[si][u.B0:u.B1], Agree: b.agree[si][u.B0:u.B1],
		Recs: make([][]Record, len(b.sums)), Outs: make([][]OutputRecord, len(b.sums)), Checked: true}
	if c := check; c != nil {
		if c.draws != nil {
			pl.FeatureOOD = b.fscore[si][u.B0:u.B1]
		}
		if si == 0 && u.B0 == 0 {
			pl.Check = &checkPayload{Feature: c.Feature, Note: c.Note, HeldOut: c.HeldOut}
		}
	}
	for i := range b.sums {
		if b.active[i] {
			pl.Recs[i] = b.recs[i][si][u.B0:u.B1]
		}
		for _, o := range b.outs[i][si][u.B0:u.B1] {
			if o != nil {
				pl.Outs[i] = append(pl.Outs[i], *o)
			}
		}
	}
	if p.Analysis != nil {
		if pl.Analysis, err = p.Analysis.Take(b.ps, b.es, si, u.B0, u.B1); err != nil {
			return fmt.Errorf("unit %s: analysis: %w", u.Name, err)
		}
	}
	pl.Seconds = time.Since(t0).Seconds()
	raw, err := encode(pl)
	if err != nil {
		return fmt.Errorf("unit %s: %w", u.Name, err)
	}
	if err := e.store.Save(u.Name, raw); err != nil {
		return err
	}
	e.costs[u.Name] = pl.Seconds
	e.tim["explain "+b.ps.Name()+" / "+b.es.Label] += time.Since(t0)
	return nil
}
