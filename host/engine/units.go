package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/rng"
)

// This file splits a run into units of work. A unit is a posterior's fit,
// or a block of consecutive records of one test split under one
// (posterior, explainer) pair: their predictions, maps, summaries, scores
// and analysis. A unit's output is a payload that a UnitStore keeps (a
// file of the run directory, host/rundir). RunUnits does the units of one
// shard; Merge reads every unit and builds the Results. Units are cut at
// the same batches as a run in one piece, and every random stream is keyed
// by (seed, purpose, split, record, draw), so the merged results are the
// same bytes for any number of shards, run in any order, on any machines,
// and however often they were interrupted and resumed.

// Unit kinds.
const (
	FitUnit     = "fit"
	ExplainUnit = "explain"
)

// DefaultUnitRecords is the records of an explain unit when
// Plan.UnitRecords is 0.
const DefaultUnitRecords = 256

// Unit is one unit of a plan's work.
type Unit struct {
	Name  string // fit-PP, explain-PP-EE-SS-BBBB
	Kind  string // FitUnit or ExplainUnit
	Index int    // position among the plan's units of its kind
	Post  int    // the posterior (index into Plan.Posteriors)
	Part  int    // fit units of a parted posterior: the part; else -1
	Exp   int    // explain units: the explainer
	Split int    // explain units: the test split
	B0    int    // explain units: records B0..B1-1 of the split
	B1    int
}

// UnitStore keeps the payloads of finished units (host/rundir.Dir).
type UnitStore interface {
	// Save stores a unit's payload atomically.
	Save(name string, payload []byte) error
	// Load returns a unit's payload; false when it has none; an error
	// when what it has does not read back whole.
	Load(name string) ([]byte, bool, error)
	// Has reports whether the unit has a payload, without reading it.
	Has(name string) bool
	// SetAside moves a payload that does not read back whole out of the
	// way, so that the unit is done again, and returns where it went.
	SetAside(name string) (string, error)
	// Lock takes the unit's lock, waiting while another process holds
	// it; onWait is called once if it does.
	Lock(ctx context.Context, name string, onWait func()) (func(), error)
}

// Shard selects units: those of Kind ("" for every kind) whose index
// (among the units of Kind, or in the whole list for "") is I mod N.
type Shard struct {
	I, N int
	Kind string
}

// String is "i/n", with the kind when there is one.
func (s Shard) String() string {
	if s.Kind == "" {
		return fmt.Sprintf("%d/%d", s.I, s.N)
	}
	return fmt.Sprintf("%s %d/%d", s.Kind, s.I, s.N)
}

// Units lists the plan's units in the order they are done: one fit a
// posterior, then for every posterior, explainer and split, blocks of
// UnitRecords records (a multiple of Batch, so that unit boundaries fall
// on batch boundaries).
func Units(p Plan) []Unit {
	p.defaults()
	var out []Unit
	nf := 0
	for pi := range p.Posteriors {
		if k := p.parts(pi); k > 1 {
			for part := range k {
				out = append(out, Unit{Name: partName(pi, part), Kind: FitUnit, Index: nf, Post: pi, Part: part})
				nf++
			}
			continue
		}
		out = append(out, Unit{Name: fitName(pi), Kind: FitUnit, Index: nf, Post: pi, Part: -1})
		nf++
	}
	n := 0
	for pi := range p.Posteriors {
		for ei := range p.Explainers {
			for si, ts := range p.testsOf(p.Posteriors[pi]) {
				for b, b0 := 0, 0; b0 < ts.Data.N; b, b0 = b+1, b0+p.UnitRecords {
					out = append(out, Unit{Name: fmt.Sprintf("explain-%02d-%02d-%02d-%04d", pi, ei, si, b), Kind: ExplainUnit, Index: n,
						Post: pi, Part: -1, Exp: ei, Split: si, B0: b0, B1: min(b0+p.UnitRecords, ts.Data.N)})
					n++
				}
			}
		}
	}
	return out
}

func fitName(pi int) string        { return fmt.Sprintf("fit-%02d", pi) }
func partName(pi, part int) string { return fmt.Sprintf("fit-%02d-%02d", pi, part) }

// parts is the number of parts of posterior pi's fit (1: not parted).
func (p *Plan) parts(pi int) int {
	if pi < len(p.Parts) {
		return max(p.Parts[pi], 1)
	}
	return 1
}

// Parted is a posterior whose fit is made of parts fitted on their own
// (sdk.Parted: a deep ensemble's members): each part is a fit unit.
type Parted interface {
	Parts(cfg sdk.Config) (int, error)
}

// FitParts sets p.Parts: the number of parts of each posterior's fit, as
// its plugin says (1 for a posterior that is not parted, or that is
// fitted post hoc on a base).
func FitParts(ctx context.Context, p *Plan, res Plugins) error {
	p.Parts = make([]int, len(p.Posteriors))
	for pi, ps := range p.Posteriors {
		p.Parts[pi] = 1
		post, err := res.Posterior(ctx, ps.ID)
		if err != nil {
			return err
		}
		pp, ok := post.(Parted)
		if !ok || post.Info().Base != "" {
			continue
		}
		k, err := pp.Parts(ps.Config)
		if err != nil {
			return fmt.Errorf("posterior %s: %w", ps.Name(), err)
		}
		p.Parts[pi] = max(k, 1)
	}
	return nil
}

// JoinParts is the artifact of a parted fit: the union of its parts'
// tensors (which must be disjoint) and Meta (which must agree where
// keys are shared), under their common architecture.
func JoinParts(parts []sdk.Artifact) (sdk.Artifact, error) {
	if len(parts) == 0 {
		return sdk.Artifact{}, errors.New("no parts to join")
	}
	a := sdk.Artifact{Arch: parts[0].Arch, Tensors: map[string][]float32{}, Meta: map[string]string{}}
	for k, pa := range parts {
		if !pa.Arch.Same(a.Arch) {
			return sdk.Artifact{}, fmt.Errorf("part %d has architecture %q, part 0 %q", k, pa.Arch.Name, a.Arch.Name)
		}
		for name, t := range pa.Tensors {
			if _, dup := a.Tensors[name]; dup {
				return sdk.Artifact{}, fmt.Errorf("part %d has tensor %q, which an earlier part has too (parts must be disjoint)", k, name)
			}
			a.Tensors[name] = t
		}
		for key, v := range pa.Meta {
			if old, dup := a.Meta[key]; dup && old != v {
				return sdk.Artifact{}, fmt.Errorf("part %d has meta %s = %q, an earlier part %q (parts must agree)", k, key, v, old)
			}
			a.Meta[key] = v
		}
	}
	return a, nil
}

// Select returns the units of the shard.
func (s Shard) Select(units []Unit) ([]Unit, error) {
	if s.N <= 0 {
		s.N = 1
	}
	if s.I < 0 || s.I >= s.N {
		return nil, fmt.Errorf("shard %d/%d: accepted: 0 <= i < n", s.I, s.N)
	}
	if s.Kind != "" && s.Kind != FitUnit && s.Kind != ExplainUnit {
		return nil, fmt.Errorf("unit kind %q (accepted: %s, %s, or all)", s.Kind, FitUnit, ExplainUnit)
	}
	var out []Unit
	for i, u := range units {
		idx := i
		if s.Kind != "" {
			if u.Kind != s.Kind {
				continue
			}
			idx = u.Index
		}
		if idx%s.N == s.I {
			out = append(out, u)
		}
	}
	return out, nil
}

// UnitSize is the records of the plan's explain units: UnitRecords (or
// DefaultUnitRecords) rounded up to a multiple of Batch.
func UnitSize(p Plan) int {
	p.defaults()
	return p.UnitRecords
}

func (p *Plan) defaults() {
	if p.Batch <= 0 {
		p.Batch = 32
	}
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	if p.UnitRecords <= 0 {
		p.UnitRecords = DefaultUnitRecords
	}
	p.UnitRecords = (p.UnitRecords + p.Batch - 1) / p.Batch * p.Batch
}

// UnitID is what a unit is: everything that its name stands for
// (kind, posterior, part, explainer, split and records). Every payload
// carries the UnitID of the unit that wrote it, and a payload read under
// a unit's name must carry that unit's UnitID: a unit file copied or
// renamed onto another unit's name is not that unit's output.
type UnitID struct {
	Name, Kind             string
	Post, Part, Exp, Split int
	B0, B1                 int
}

// ID is the unit's identity (its position among the plan's units aside,
// which these fields determine).
func (u Unit) ID() UnitID {
	return UnitID{Name: u.Name, Kind: u.Kind, Post: u.Post, Part: u.Part, Exp: u.Exp, Split: u.Split, B0: u.B0, B1: u.B1}
}

// String names the unit and what it is.
func (id UnitID) String() string {
	switch {
	case id.Kind == ExplainUnit:
		return fmt.Sprintf("%s (explain unit: posterior %d, explainer %d, split %d, records %d..%d)", id.Name, id.Post, id.Exp, id.Split, id.B0, id.B1-1)
	case id.Kind == FitUnit && id.Part >= 0:
		return fmt.Sprintf("%s (fit unit: posterior %d, part %d)", id.Name, id.Post, id.Part)
	case id.Kind == FitUnit:
		return fmt.Sprintf("%s (fit unit: posterior %d)", id.Name, id.Post)
	}
	return fmt.Sprintf("%q (kind %q)", id.Name, id.Kind)
}

// fitPayload is a fit unit's output.
type fitPayload struct {
	Fingerprint string
	ID          UnitID
	Artifact    sdk.Artifact
	Seconds     float64 // the unit's wall time (not part of any result)
}

// explainPayload is an explain unit's output: for records B0..B1-1,
// the predictive mean's class and probabilities (row major), every
// summary's scores and set or band results, and the analysis's results.
type explainPayload struct {
	Fingerprint string
	ID          UnitID
	Preds       []int
	Probs       []float64
	MeanEntropy []float64        // the draws' mean entropy of each record (Prediction)
	Agree       []float64        // the share of draws voting for the predicted class
	Recs        [][]Record       // summary -> record - B0 (a summary not scored: empty)
	Outs        [][]OutputRecord // summary -> the explained records' results
	Analysis    []byte
	Seconds     float64
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

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
	cur        *block                      // the loaded pair
	curKey     [2]int
	costs      map[string]float64
}

// resolve resolves the plan's plugins.
func resolve(ctx context.Context, p *Plan, res Plugins, withExplainers bool) (*exec, error) {
	e := &exec{p: p, res: res, arts: map[int]sdk.Artifact{}, draws: map[int][]sdk.Draw{}, models: map[int][]*driver.DrawModel{}, costs: map[string]float64{}}
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
	if ok, err := e.load(u.ID(), &pl, &pl.Fingerprint, &pl.ID); ok || err != nil {
		return err
	}
	unlock, err := e.store.Lock(ctx, u.Name, func() {
		e.obs.Note(fmt.Sprintf("unit %s: another process is doing it: waiting", u.Name))
	})
	if err != nil {
		return err
	}
	defer unlock()
	if ok, err := e.load(u.ID(), &pl, &pl.Fingerprint, &pl.ID); ok || err != nil {
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
		Recs: make([][]Record, len(b.sums)), Outs: make([][]OutputRecord, len(b.sums))}
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

// Merge reads every unit of the plan from store and builds the run's
// Results, exactly as one uninterrupted run in one process gives them:
// the Sink and the Analysis's Put are called as the run would call
// them. A missing unit, or one that does not read back whole, is an error
// that names it. It also returns the wall time each unit took when it was
// done.
func Merge(ctx context.Context, p Plan, res Plugins, store UnitStore) (*Results, map[string]float64, error) {
	if err := checkPlan(ctx, &p, res); err != nil {
		return nil, nil, err
	}
	e, err := resolve(ctx, &p, res, false)
	if err != nil {
		return nil, nil, err
	}
	units := Units(p)
	var missing []string
	for _, u := range units {
		if !store.Has(u.Name) {
			missing = append(missing, u.Name)
		}
	}
	if len(missing) > 0 {
		shown := missing[:min(len(missing), 8)]
		more := ""
		if len(missing) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(missing)-len(shown))
		}
		return nil, nil, fmt.Errorf("%d of %d units are not done: %s%s (finish them with uaxai run --resume, or the shards that own them)", len(missing), len(units), strings.Join(shown, ", "), more)
	}
	read := func(u Unit, v any, fp *string, id *UnitID) error {
		name := u.Name
		b, _, err := store.Load(name)
		if err != nil {
			return fmt.Errorf("%w: do it again with uaxai run --resume", err)
		}
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
			return fmt.Errorf("unit %s: decoding: %w (set it aside and do it again with uaxai run --resume)", name, err)
		}
		if *fp != p.Fingerprint {
			return fmt.Errorf("unit %s belongs to another run (fingerprint %.12s, this run's is %.12s)", name, *fp, p.Fingerprint)
		}
		if *id != u.ID() {
			return fmt.Errorf("unit %s holds unit %s's output, expected %s's (a unit file copied onto another's name): do it again with uaxai run --resume", name, *id, u.ID())
		}
		return nil
	}
	out := &Results{ClassNames: p.ClassNames}
	costs := map[string]float64{}
	k := p.Arch.Classes()
	for pi, ps := range p.Posteriors {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var parts []sdk.Artifact
		for _, u := range units {
			if u.Kind != FitUnit || u.Post != pi {
				continue
			}
			var fp fitPayload
			if err := read(u, &fp, &fp.Fingerprint, &fp.ID); err != nil {
				return nil, nil, err
			}
			costs[u.Name] = fp.Seconds
			parts = append(parts, fp.Artifact)
		}
		art := parts[0]
		if len(parts) > 1 {
			if art, err = JoinParts(parts); err != nil {
				return nil, nil, fmt.Errorf("posterior %s: joining its %d parts: %w", ps.Name(), len(parts), err)
			}
		}
		if n := art.Meta["note"]; n != "" {
			out.Notes = append(out.Notes, ps.Name()+": "+n)
		}
		var acc []float64
		for ei, es := range p.Explainers {
			b := newBlock(&p, pi, ei, nil, e.summaries)
			notes := b.activate(ps.Draws)
			for _, u := range units {
				if u.Kind != ExplainUnit || u.Post != pi || u.Exp != ei {
					continue
				}
				var pl explainPayload
				if err := read(u, &pl, &pl.Fingerprint, &pl.ID); err != nil {
					return nil, nil, err
				}
				costs[u.Name] = pl.Seconds
				if len(pl.Preds) != u.B1-u.B0 || len(pl.Probs) != (u.B1-u.B0)*k || len(pl.MeanEntropy) != u.B1-u.B0 || len(pl.Agree) != u.B1-u.B0 || len(pl.Recs) != len(b.sums) || len(pl.Outs) != len(b.sums) {
					return nil, nil, fmt.Errorf("unit %s: its payload does not fit the plan (%d predictions for %d records)", u.Name, len(pl.Preds), u.B1-u.B0)
				}
				copy(b.preds[u.Split][u.B0:], pl.Preds)
				copy(b.probs[u.Split][u.B0*k:], pl.Probs)
				copy(b.ment[u.Split][u.B0:], pl.MeanEntropy)
				copy(b.agree[u.Split][u.B0:], pl.Agree)
				for i := range b.sums {
					if b.active[i] {
						if len(pl.Recs[i]) != u.B1-u.B0 {
							return nil, nil, fmt.Errorf("unit %s: summary %d has %d records, want %d", u.Name, i, len(pl.Recs[i]), u.B1-u.B0)
						}
						copy(b.recs[i][u.Split][u.B0:], pl.Recs[i])
					}
					for j := range pl.Outs[i] {
						o := pl.Outs[i][j]
						if o.Index < u.B0 || o.Index >= u.B1 {
							return nil, nil, fmt.Errorf("unit %s: an output of record %d, outside the unit", u.Name, o.Index)
						}
						b.outs[i][u.Split][o.Index] = &o
					}
				}
				if p.Analysis != nil && pl.Analysis != nil {
					if err := p.Analysis.Put(b.ps, b.es, u.Split, pl.Analysis); err != nil {
						return nil, nil, fmt.Errorf("unit %s: analysis: %w", u.Name, err)
					}
				}
			}
			if ei == 0 {
				if acc, err = accuracies(b.tests, b.preds); err != nil {
					return nil, nil, err
				}
				if p.Sink != nil {
					if err := p.Sink.Predicted(ps, Prediction{Probs: b.probs, MeanEntropy: b.ment, Agree: b.agree}); err != nil {
						return nil, nil, fmt.Errorf("%s: predictive quality: %w", ps.Name(), err)
					}
				}
			}
			if firstActive(b.active) < 0 && firstActive(b.output) < 0 && p.Analysis == nil {
				out.Notes = append(out.Notes, notes...) // nothing was explained
				continue
			}
			rows, notes2, err := b.rows()
			if err != nil {
				return nil, nil, err
			}
			outs := b.outputs()
			for i := range outs {
				if p.Sink != nil {
					if err := p.Sink.Output(&outs[i]); err != nil {
						return nil, nil, fmt.Errorf("%s / %s / %s: writing its records: %w", ps.Name(), es.Label, outs[i].SummaryLabel, err)
					}
					outs[i].Records = nil
				}
				out.Outputs = append(out.Outputs, outs[i])
			}
			for i := range rows {
				rows[i].Accuracy = eval.StatOf(acc)
				rows[i].AccuracyBySplit = acc
				rows[i].Fit = fitMeta(art)
				out.Rows = append(out.Rows, rows[i])
			}
			out.Notes = append(out.Notes, append(notes, notes2...)...)
		}
	}
	return out, costs, nil
}

// accuracies is the accuracy of the predictive mean on each split (nil
// for unlabelled splits).
func accuracies(tests []TestSplit, preds [][]int) ([]float64, error) {
	if len(tests) > 0 && tests[0].Unlabelled {
		return nil, nil
	}
	acc := make([]float64, len(tests))
	for si, ts := range tests {
		a, ok := eval.Accuracy(preds[si], ts.Data.Y)
		if !ok {
			return nil, fmt.Errorf("test split %s is empty", ts.Name)
		}
		acc[si] = a
	}
	return acc, nil
}

// parallelRange runs fn over the batches [r0+k*batch, ...) of [r0, r1)
// with up to workers goroutines (r0 a multiple of batch, so the batches
// are those of the whole split). fn gets Parallel's context, which the
// first failing batch cancels: every call a batch makes must take it, so
// that its siblings stop at once instead of running to their deadlines.
func parallelRange(ctx context.Context, r0, r1, batch, workers int, fn func(ctx context.Context, b0, b1 int) error) error {
	nb := (r1 - r0 + batch - 1) / batch
	return Parallel(ctx, nb, workers, func(ctx context.Context, b int) error {
		return fn(ctx, r0+b*batch, min(r0+(b+1)*batch, r1))
	})
}

// memStore keeps payloads in memory: Run's store, for a run in one
// process.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Save(name string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[name] = slices.Clone(b)
	return nil
}

func (s *memStore) Load(name string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[name]
	return b, ok, nil
}

func (s *memStore) Has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[name]
	return ok
}

func (s *memStore) SetAside(name string) (string, error) {
	return "", errors.New("a run in memory has nothing to set aside")
}

func (s *memStore) Lock(context.Context, string, func()) (func(), error) { return func() {}, nil }
