package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/metric"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// EvaluateRun scores the maps a finished run stored ([output] maps: the
// maps/ folder of the run directory dir) with explanation metrics,
// without explaining again: dir's recipe.toml is run again as a new run
// (named "<name>-evaluate", under opt.Out, by default beside dir), in
// which every map is the stored one. The metrics are metrics when given
// (each with its configuration), else the recipe's [evaluate] metrics.
// The new run's metrics.csv is the same bytes as a run of the recipe with
// those metrics would write: the recipe route scores the maps as it
// stores them (float32), its random draws and the perturbed copies'
// explainer seeds are keyed by the records, and the networks are the
// run's (from the cache, or fitted again to the same bytes). Only the
// metrics that explain perturbed inputs again call the explainer.
func EvaluateRun(ctx context.Context, dir string, metrics []MetricSpec, opt Options) (*Outcome, error) {
	r, err := recipe.Load(filepath.Join(dir, "recipe.toml"))
	if err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", dir, err)
	}
	if len(metrics) > 0 {
		r.Evaluate.Metrics = nil
		reg := metric.Builtin()
		for _, m := range metrics {
			id := metric.FullID(m.ID)
			if _, err := reg.New(id, m.Config); err != nil {
				return nil, fmt.Errorf("evaluate %s: --metric %s: %w", dir, m.ID, err)
			}
			if slices.ContainsFunc(r.Evaluate.Metrics, func(x recipe.MetricRef) bool { return x.ID == id }) {
				return nil, fmt.Errorf("evaluate %s: --metric %s is given twice", dir, m.ID)
			}
			cfg := sdk.Config{}
			for k, v := range m.Config {
				cfg[k] = v
			}
			r.Evaluate.Metrics = append(r.Evaluate.Metrics, recipe.MetricRef{ID: id, Config: cfg})
		}
	}
	if len(r.Evaluate.Metrics) == 0 {
		return nil, fmt.Errorf("evaluate %s: its recipe has no [evaluate] metrics: name them with --metric (accepted: %s)", dir, strings.Join(metric.Builtin().IDs(), ", "))
	}
	var sums []string
	for _, s := range r.Summaries {
		sums = append(sums, s.Label)
	}
	st, err := loadStoredMaps(filepath.Join(dir, "maps"), sums)
	if err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", dir, err)
	}
	r.Name += "-evaluate"
	r.Analysis.Output.Maps = false // the stored ones are the maps
	if opt.Out == "" {
		opt.Out = filepath.Dir(filepath.Clean(dir))
	}
	opt.RunDir, opt.Shard, opt.stored = "", nil, st
	return Run(ctx, r, opt)
}

// storedPair is one (posterior, replicate, explainer) pair's stored maps.
type storedPair struct {
	file  string
	rows  map[[2]int]int // (split, record) -> row
	draws int
	n     int // values a map
	maps  []float32
	sums  map[string]*storedSum // by the summary's label
}

type storedSum struct {
	file string
	rows map[[2]int]int
	maps []float32
}

// storedMaps are a run directory's maps/ files (host/analysis mapFiles):
// engine.StoredMaps.
type storedMaps struct {
	dir   string
	sums  []string                  // the recipe's summary labels, in order
	pairs map[[3]string]*storedPair // (posterior, replicate, explainer)
}

// loadStoredMaps reads every maps/*.safetensors of a run: a file of the
// draws' maps per pair (tensor "maps"), one per map summary ("map"); the
// k-th file of a (posterior, explainer) in name order is replicate k.
func loadStoredMaps(dir string, sums []string) (*storedMaps, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no stored maps (%s): run the recipe with [output] maps = true", dir)
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".safetensors") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	s := &storedMaps{dir: dir, sums: sums, pairs: map[[3]string]*storedPair{}}
	reps := map[[2]string]int{}      // (posterior, explainer) -> replicates seen
	prefix := map[string][3]string{} // a pair file's number prefix -> its key
	var sumFiles []string
	for _, name := range names {
		path := filepath.Join(dir, name)
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if f.Meta["format"] != "uaxai-maps-1" {
			return nil, fmt.Errorf("%s: metadata format %q, want \"uaxai-maps-1\" (a file [output] maps writes)", path, f.Meta["format"])
		}
		if f.Meta["summary"] != "" {
			sumFiles = append(sumFiles, name)
			continue
		}
		p, err := readStored(path, f, "maps", 2)
		if err != nil {
			return nil, err
		}
		pe := [2]string{f.Meta["posterior"], f.Meta["explainer"]}
		key := [3]string{pe[0], fmt.Sprint(reps[pe]), pe[1]}
		reps[pe]++
		prefix[strings.SplitN(name, "-", 2)[0]] = key
		p.sums = map[string]*storedSum{}
		s.pairs[key] = p
	}
	for _, name := range sumFiles {
		path := filepath.Join(dir, name)
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, err
		}
		key, ok := prefix[strings.SplitN(name, "-", 2)[0]]
		if !ok {
			return nil, fmt.Errorf("%s: a summary's maps without its pair's draws' file", path)
		}
		p := s.pairs[key]
		q, err := readStored(path, f, "map", 1)
		if err != nil {
			return nil, err
		}
		if q.n != p.n {
			return nil, fmt.Errorf("%s: maps of %d values, the draws' (%s) %d", path, q.n, p.file, p.n)
		}
		p.sums[f.Meta["summary"]] = &storedSum{file: path, rows: q.rows, maps: q.maps}
	}
	if len(s.pairs) == 0 {
		return nil, fmt.Errorf("no stored maps in %s: run the recipe with [output] maps = true", dir)
	}
	return s, nil
}

// readStored reads the index tensors and the maps tensor (lead: its
// dimensions before a map's, 2 for [records, S, ...], 1 for [records,
// ...]) of one maps file, checking their shapes.
func readStored(path string, f *safetensors.File, name string, lead int) (*storedPair, error) {
	split, ok1 := f.Get("split")
	rec, ok2 := f.Get("record")
	maps, ok3 := f.Get(name)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("%s: want tensors split, record and %s", path, name)
	}
	R := len(split.Data)
	if len(rec.Data) != R || len(maps.Shape) <= lead || maps.Shape[0] != R {
		return nil, fmt.Errorf("%s: %d splits, %d records and %s of shape %v: want [%d, ...] maps of every record", path, R, len(rec.Data), name, maps.Shape, R)
	}
	p := &storedPair{file: path, rows: make(map[[2]int]int, R), draws: 1, n: 1, maps: maps.Data}
	if lead == 2 {
		p.draws = maps.Shape[1]
	}
	for _, d := range maps.Shape[lead:] {
		p.n *= d
	}
	for i := range R {
		si, ri := split.Data[i], rec.Data[i]
		if si != float32(math.Trunc(float64(si))) || ri != float32(math.Trunc(float64(ri))) || si < 0 || ri < 0 {
			return nil, fmt.Errorf("%s: row %d: split %v, record %v: want whole numbers >= 0", path, i, si, ri)
		}
		k := [2]int{int(si), int(ri)}
		if _, dup := p.rows[k]; dup {
			return nil, fmt.Errorf("%s: split %d record %d is stored twice", path, k[0], k[1])
		}
		p.rows[k] = i
	}
	for i, v := range p.maps {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s: value %d of %s is %v: want finite maps", path, i, name, v)
		}
	}
	return p, nil
}

func (s *storedMaps) pair(ps, es engine.Step) (*storedPair, error) {
	p := s.pairs[[3]string{ps.Label, fmt.Sprint(ps.Replicate), es.Label}]
	if p == nil {
		return nil, fmt.Errorf("%s holds no maps of %s / %s (replicate %d)", s.dir, ps.Label, es.Label, ps.Replicate)
	}
	return p, nil
}

func (s *storedMaps) Maps(ps, es engine.Step, si int, records []int, dst [][][]float64) error {
	p, err := s.pair(ps, es)
	if err != nil {
		return err
	}
	for j, r := range records {
		row, ok := p.rows[[2]int{si, r}]
		if !ok {
			return fmt.Errorf("%s has no map of split %d record %d", p.file, si, r)
		}
		if len(dst[j]) != p.draws {
			return fmt.Errorf("%s holds %d draws a record, the run's posterior %d", p.file, p.draws, len(dst[j]))
		}
		for d := range dst[j] {
			m := p.maps[(row*p.draws+d)*p.n : (row*p.draws+d+1)*p.n]
			dst[j][d] = make([]float64, p.n)
			for t, v := range m {
				dst[j][d][t] = float64(v)
			}
		}
	}
	return nil
}

func (s *storedMaps) Summary(ps, es engine.Step, i, si int, records []int) ([][]float64, error) {
	p, err := s.pair(ps, es)
	if err != nil {
		return nil, err
	}
	if i >= len(s.sums) {
		return nil, fmt.Errorf("summary %d of a recipe of %d", i, len(s.sums))
	}
	q := p.sums[s.sums[i]]
	if q == nil {
		return nil, fmt.Errorf("%s holds no maps of summary %s of %s / %s", s.dir, s.sums[i], ps.Label, es.Label)
	}
	out := make([][]float64, len(records))
	for j, r := range records {
		row, ok := q.rows[[2]int{si, r}]
		if !ok {
			return nil, fmt.Errorf("%s has no map of split %d record %d", q.file, si, r)
		}
		out[j] = make([]float64, p.n)
		for t, v := range q.maps[row*p.n : (row+1)*p.n] {
			out[j][t] = float64(v)
		}
	}
	return out, nil
}
