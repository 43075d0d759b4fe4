package runner

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/metric"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// EvaluateOptions are the settings of Evaluate (`uaxai evaluate`): maps
// made by any tool, scored by explanation metrics under a user's model.
type EvaluateOptions struct {
	// ExplainOptions give the model (weights, --model), the inputs, the
	// targets, and, for the metrics that explain perturbed inputs again
	// (robustness), the explainer that made the maps; Explainer may be
	// empty otherwise.
	ExplainOptions
	// Maps is a CSV of the maps: one a line in the order of Input (C x T
	// values, as `uaxai explain` writes for one weights file), or
	// `uaxai explain`'s layout for several, a header input,draw,v0,...
	// and one line an input and draw.
	Maps string
	// Masks, optional, is a CSV of ground-truth masks (0 or 1, C x T
	// values a line, one line an input), for the localisation metrics.
	Masks string
	// Metrics are the metrics to compute, in order.
	Metrics []MetricSpec
}

// MetricSpec is one metric of Evaluate: its ID and configuration.
type MetricSpec struct {
	ID     string
	Config sdk.Config
}

// Evaluate scores the maps of opt.Maps with every metric of opt.Metrics
// under every draw, and writes CSV to w: a header
// input,draw,metric,value,undefined,curve and one line an input, draw
// and metric (input major, then draw, then metric in the given order).
// value is empty and undefined says why when the record has no score;
// curve holds a curve metric's points separated by spaces. Numbers are
// Go's shortest float64 form. The output is the same bytes for any
// number of workers.
func Evaluate(ctx context.Context, opt EvaluateOptions, w io.Writer) error {
	reg := metric.Builtin()
	if len(opt.Metrics) == 0 {
		return fmt.Errorf("no metric (accepted: %s)", strings.Join(reg.IDs(), ", "))
	}
	metrics := make([]metric.Metric, len(opt.Metrics))
	explains := false
	for k, spec := range opt.Metrics {
		id := metric.FullID(spec.ID)
		m, err := reg.New(id, spec.Config)
		if err != nil {
			return err
		}
		metrics[k] = m
		explains = explains || m.Info().Needs.Explain
	}
	if explains && opt.Explainer == "" {
		return errors.New("a robustness metric explains perturbed inputs again: name the explainer that made the maps (--explainer)")
	}
	opt.explainerOptional = true
	j, err := newExplainJob(ctx, opt.ExplainOptions)
	if err != nil {
		return err
	}
	err = j.calls.Expire(j.evaluate(ctx, opt, metrics, w))
	return errors.Join(err, j.close())
}

// EvaluateFile is Evaluate writing to the file path, atomically.
func EvaluateFile(ctx context.Context, opt EvaluateOptions, path string) error {
	return writeAtomic(path, func(w *bufio.Writer) error { return Evaluate(ctx, opt, w) })
}

func (j *explainJob) evaluate(ctx context.Context, opt EvaluateOptions, metrics []metric.Metric, w io.Writer) error {
	S := len(j.names)
	maps, err := readMaps(opt.Maps, j.nIn, S, j.n)
	if err != nil {
		return err
	}
	var masks []bool
	if opt.Masks != "" {
		if masks, err = readMasks(opt.Masks, j.nIn, j.n); err != nil {
			return err
		}
	}
	scores := make([][]metric.Score, S*len(metrics)) // [s*len(metrics)+k][i]
	j.obs.Stage(fmt.Sprintf("evaluate %d inputs x %d draws x %d metrics", j.nIn, S, len(metrics)), S*len(metrics))
	for s := range S {
		d := sdk.Draw{}
		if j.served != nil {
			d.Served = &j.served[s]
		} else {
			d.Params = j.draws[s]
		}
		keys := make([]uint64, j.nIn)
		for i := range keys {
			keys[i] = rng.Key(j.opt.Seed, engine.MetricPurpose, "", i, s)
		}
		in := metric.Input{N: j.nIn, C: j.inC, T: j.n / j.inC, X: j.x, Maps: maps[s], Targets: j.targets, Masks: masks, Keys: keys, Workers: j.workers}
		var re *engine.Reexplainer
		score := func(model nn.Model) error {
			in.Model = model
			if len(j.step.Models) > 0 {
				// perturbed copies: records of split "evaluate" numbered
				// on from the inputs (a stochastic explainer's seeds do
				// not repeat the maps')
				re = &engine.Reexplainer{Step: &j.step, Explainer: j.ex, ExplainerID: j.id, Split: "evaluate", Next: j.nIn}
				in.Explain = re.Func(s, model)
			}
			for k, m := range metrics {
				dst := make([]metric.Score, j.nIn)
				if err := m.Score(ctx, &in, dst); err != nil {
					return err
				}
				scores[s*len(metrics)+k] = dst
				j.obs.Advance(s*len(metrics)+k+1, "")
			}
			return nil
		}
		var err error
		if g, ok := j.server.(*graphServer); ok {
			// a network computed in this process: its own model (its
			// parameters too, for MPRT), not a client of its service
			err = score(g.models[s])
		} else {
			dm, oerr := driver.OpenDraw(ctx, d, j.calls)
			if oerr != nil {
				return fmt.Errorf("draw %d (%s): %w", s, j.names[s], oerr)
			}
			err = dm.Call(ctx, score)
			dm.Close()
		}
		if re != nil {
			err = errors.Join(err, re.Close())
		}
		if err != nil {
			return fmt.Errorf("draw %d (%s): %w", s, j.names[s], err)
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("input,draw,metric,value,undefined,curve\n")
	var b []byte
	for i := range j.nIn {
		for s := range S {
			for k, m := range metrics {
				sc := scores[s*len(metrics)+k][i]
				b = strconv.AppendInt(b[:0], int64(i), 10)
				b = append(b, ',')
				b = strconv.AppendInt(b, int64(s), 10)
				b = append(b, ',')
				b = append(b, m.Info().ID...)
				b = append(b, ',')
				if sc.Undefined == "" {
					b = strconv.AppendFloat(b, sc.Value, 'g', -1, 64)
				}
				b = append(b, ',')
				b = append(b, csvField(sc.Undefined)...)
				b = append(b, ',')
				for c, v := range sc.Curve {
					if c > 0 {
						b = append(b, ' ')
					}
					b = strconv.AppendFloat(b, v, 'g', -1, 64)
				}
				b = append(b, '\n')
				if _, err := bw.Write(b); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}

// readMaps reads the maps file: N lines of n values (one draw), or a
// header input,draw,v0,... and N*S lines in any order. It returns
// maps[s], N*n values each.
func readMaps(path string, N, S, n int) ([][]float64, error) {
	if path == "" {
		return nil, errors.New("no maps file (accepted: a CSV of one map a line, C x T values, or uaxai explain's input,draw,v0,... layout)")
	}
	// 32 bytes a value is more than any float's shortest form and comma.
	f, err := atomicfile.OpenRegular(path, atomicfile.Limit{Bytes: 32*int64(N)*int64(S)*int64(n+2) + 1<<16, What: "a maps file of the inputs' size"})
	if err != nil {
		return nil, fmt.Errorf("maps: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.ReuseRecord = true
	r.FieldsPerRecord = -1
	maps := make([][]float64, S)
	for s := range maps {
		maps[s] = make([]float64, N*n)
	}
	header := false
	seen := make([]bool, N*S)
	count := 0
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("maps %s: %w", path, err)
		}
		if line == 1 && len(rec) >= 2 && rec[0] == "input" && rec[1] == "draw" {
			if len(rec) != n+2 {
				return nil, fmt.Errorf("maps %s line 1: a header of %d fields, want input,draw and %d values", path, len(rec), n)
			}
			header = true
			continue
		}
		i, s, vals := count, 0, rec
		if header {
			if len(rec) != n+2 {
				return nil, fmt.Errorf("maps %s line %d: %d fields, want input,draw and %d values", path, line, len(rec), n)
			}
			a, e1 := strconv.Atoi(rec[0])
			b, e2 := strconv.Atoi(rec[1])
			if e1 != nil || e2 != nil || a < 0 || a >= N || b < 0 || b >= S {
				return nil, fmt.Errorf("maps %s line %d: input %q, draw %q: want an input 0..%d and a draw 0..%d", path, line, rec[0], rec[1], N-1, S-1)
			}
			i, s, vals = a, b, rec[2:]
		} else {
			if S > 1 {
				return nil, fmt.Errorf("maps %s: one map a line, and %d draws: give one weights file, or the maps of every draw as uaxai explain writes them (a header input,draw,v0,...)", path, S)
			}
			if count >= N {
				return nil, fmt.Errorf("maps %s line %d: more maps than the %d inputs", path, line, N)
			}
			if len(rec) != n {
				return nil, fmt.Errorf("maps %s line %d: %d values, want %d (the inputs' C x T)", path, line, len(rec), n)
			}
		}
		if seen[s*N+i] {
			return nil, fmt.Errorf("maps %s line %d: input %d, draw %d given twice", path, line, i, s)
		}
		seen[s*N+i] = true
		count++
		dst := maps[s][i*n : (i+1)*n]
		for c, v := range vals {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("maps %s line %d value %d: %q, want a finite number", path, line, c+1, v)
			}
			dst[c] = x
		}
	}
	if count != N*S {
		return nil, fmt.Errorf("maps %s: %d maps, want %d (%d inputs x %d draws)", path, count, N*S, N, S)
	}
	return maps, nil
}

// readMasks reads N lines of n values 0 or 1.
func readMasks(path string, N, n int) ([]bool, error) {
	f, err := atomicfile.OpenRegular(path, atomicfile.Limit{Bytes: 4*int64(N)*int64(n) + 1<<16, What: "a masks file of the inputs' size"})
	if err != nil {
		return nil, fmt.Errorf("masks: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.ReuseRecord = true
	r.FieldsPerRecord = -1
	out := make([]bool, 0, N*n)
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("masks %s: %w", path, err)
		}
		if line > N {
			return nil, fmt.Errorf("masks %s line %d: more masks than the %d inputs", path, line, N)
		}
		if len(rec) != n {
			return nil, fmt.Errorf("masks %s line %d: %d values, want %d (the inputs' C x T)", path, line, len(rec), n)
		}
		for c, v := range rec {
			switch strings.TrimSpace(v) {
			case "0":
				out = append(out, false)
			case "1":
				out = append(out, true)
			default:
				return nil, fmt.Errorf("masks %s line %d value %d: %q, want 0 or 1", path, line, c+1, v)
			}
		}
	}
	if len(out) != N*n {
		return nil, fmt.Errorf("masks %s: %d masks, want one for each of the %d inputs", path, len(out)/n, N)
	}
	return out, nil
}
