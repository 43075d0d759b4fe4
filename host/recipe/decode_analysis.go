package recipe

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/sdk"
)

// Analysis holds the optional experiment tables of a recipe: what a run
// computes beyond the localisation tables, from every explained record's
// maps (host/analysis). The zero value asks for nothing.
type Analysis struct {
	Paper         []string       // [paper] tables: the paper's tables printed beside ours
	Sensitivity   *Sensitivity   // [sensitivity]
	Calibration   *Calibration   // [calibration]
	Agreement     *Agreement     // [agreement]
	Bound         *Bound         // [bound]
	TotalVariance *TotalVariance // [total_variance]
	Figures       *Figures       // [figures]
	Output        Output         // [output]
}

// Sensitivity is the [sensitivity] table (tab:sensitivity): each explained
// batch is explained again under each distortion.
type Sensitivity struct {
	Distortions []Distortion
	Records     string // "correct" (default): correctly classified clean records; or "all"
}

// Distortion kinds of [sensitivity].
const (
	DistortNoise     = "noise"     // additive white Gaussian noise at Value dB SNR
	DistortAmplitude = "amplitude" // x * Value
	DistortShift     = "shift"     // circular shift by Value samples, aligned back
)

// Distortion is one entry of [sensitivity] distortions, written "noise 30",
// "amplitude 1.05" or "shift -4".
type Distortion struct {
	Kind  string
	Value float64
}

func (d Distortion) String() string {
	return d.Kind + " " + strconv.FormatFloat(d.Value, 'g', -1, 64)
}

// Calibration is the [calibration] table (tab:calibration).
type Calibration struct {
	Levels     []float64 `toml:"levels"`     // band levels beta of the interpolated band
	Build      int       `toml:"build"`      // draws that build the band; the rest evaluate it
	Partitions int       `toml:"partitions"` // random build/evaluate partitions of the reference
}

// Agreement is the [agreement] table: agreement sets scored with
// precision, recall and F1 against the mask over a grid of (eta, delta).
type Agreement struct {
	Etas   []float64 `toml:"etas"`
	Deltas []float64 `toml:"deltas"`
}

// Bound is the [bound] table: the finite-sample term of cor:meanmap.
type Bound struct {
	Delta float64 `toml:"delta"`
}

// TotalVariance is the [total_variance] table: the law-of-total-variance
// split of prop:totalvar for stochastic explainers.
type TotalVariance struct {
	Repeats int `toml:"repeats"` // explainer seeds per model draw, >= 2
}

// Figures is the [figures] table.
type Figures struct {
	Qualitative []string `toml:"qualitative"` // class names: one panel each (fig:qual_synthetic)
	PerClass    bool     `toml:"perclass"`    // a per-class IoU bar chart per table
}

// Output is the [output] table.
type Output struct {
	Maps bool `toml:"maps"` // keep every map and summary of every record as safetensors
}

// PaperTables are the tables a [paper] table may name.
var PaperTables = []string{"tab:bnn_results", "tab:xai_results", "tab:uarao_results", "tab:perclass_bnn", "tab:perclass_xai", "tab:perclass_uarao", "tab:sensitivity", "tab:calibration"}

// Empty reports whether the recipe asks for no analysis at all.
func (a Analysis) Empty() bool {
	return len(a.Paper) == 0 && a.Sensitivity == nil && a.Calibration == nil && a.Agreement == nil && a.Bound == nil &&
		a.TotalVariance == nil && a.Figures == nil && !a.Output.Maps
}

// AnalysisTables are the top-level tables of Analysis.
var AnalysisTables = []string{"paper", "sensitivity", "calibration", "agreement", "bound", "total_variance", "figures", "output"}

func (d *decoder) analysis(tables map[string]any, a *Analysis) error {
	if v, ok := tables["paper"]; ok {
		path := []string{"paper"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		if err := d.table(tbl, path, []field{{"tables", d.setStrings(&a.Paper)}}); err != nil {
			return err
		}
		if len(a.Paper) == 0 {
			a.Paper = nil // tables = [] asks for none, as no [paper] does (its canonical form)
		}
		for i, t := range a.Paper {
			if !slices.Contains(PaperTables, t) {
				return d.keyErr(sub(path, "tables", strconv.Itoa(i)), "unknown table %s (accepted: %s)", sdk.Quote(t), strings.Join(PaperTables, ", "))
			}
			if slices.Index(a.Paper, t) != i {
				return d.keyErr(sub(path, "tables", strconv.Itoa(i)), "table %s is listed twice", sdk.Quote(t))
			}
		}
	}
	if v, ok := tables["sensitivity"]; ok {
		s, err := d.sensitivity(v)
		if err != nil {
			return err
		}
		a.Sensitivity = s
	}
	if v, ok := tables["calibration"]; ok {
		path := []string{"calibration"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		c := &Calibration{Levels: []float64{0.5, 0.8, 0.9}, Build: 20, Partitions: 100}
		if err := d.table(tbl, path, []field{{"levels", d.setFloats(&c.Levels)}, {"build", d.setInt(&c.Build)}, {"partitions", d.setInt(&c.Partitions)}}); err != nil {
			return err
		}
		if err := d.checkList(sub(path, "levels"), len(c.Levels), "band levels"); err != nil {
			return err
		}
		if len(c.Levels) == 0 {
			return d.keyErr(sub(path, "levels"), "is empty (accepted: band levels in (0, 1), e.g. [0.5, 0.8, 0.9])")
		}
		for i, l := range c.Levels {
			if !(l > 0 && l < 1) {
				return d.keyErr(sub(path, "levels", strconv.Itoa(i)), "%v is not a band level (accepted: 0 < level < 1)", l)
			}
		}
		if c.Build < 2 {
			return d.keyErr(sub(path, "build"), "%d draws cannot build a band (accepted: >= 2; the posterior's draws must be twice build)", c.Build)
		}
		if c.Partitions < 1 {
			return d.keyErr(sub(path, "partitions"), "%d (accepted: >= 1)", c.Partitions)
		}
		if err := d.checkCount(sub(path, "build"), c.Build, MaxDraws/2, fmt.Sprintf("the posterior's draws, at most %d, must be twice build", MaxDraws)); err != nil {
			return err
		}
		if err := d.checkCount(sub(path, "partitions"), c.Partitions, MaxPartitions, fmt.Sprintf("accepted: 1..%d random partitions", MaxPartitions)); err != nil {
			return err
		}
		a.Calibration = c
	}
	if v, ok := tables["agreement"]; ok {
		path := []string{"agreement"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		g := &Agreement{Etas: []float64{0.2, 0.4, 0.6, 0.8, 1}, Deltas: []float64{0, 0.01, 0.05, 0.1}}
		if err := d.table(tbl, path, []field{{"etas", d.setFloats(&g.Etas)}, {"deltas", d.setFloats(&g.Deltas)}}); err != nil {
			return err
		}
		if err := d.checkList(sub(path, "etas"), len(g.Etas), "thresholds of the grid"); err != nil {
			return err
		}
		if err := d.checkList(sub(path, "deltas"), len(g.Deltas), "margins of the grid"); err != nil {
			return err
		}
		if len(g.Etas) == 0 || len(g.Deltas) == 0 {
			return d.errAt(path, "[agreement]: etas and deltas must not be empty (accepted: etas in [0, 1], deltas any finite numbers)")
		}
		for i, e := range g.Etas {
			if !(e >= 0 && e <= 1) {
				return d.keyErr(sub(path, "etas", strconv.Itoa(i)), "%v (accepted: 0 <= eta <= 1)", e)
			}
		}
		a.Agreement = g
	}
	if v, ok := tables["bound"]; ok {
		path := []string{"bound"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		b := &Bound{Delta: 0.05}
		if err := d.table(tbl, path, []field{{"delta", d.setFloat(&b.Delta)}}); err != nil {
			return err
		}
		if !(b.Delta > 0 && b.Delta < 1) {
			return d.keyErr(sub(path, "delta"), "%v (accepted: 0 < delta < 1, the failure probability)", b.Delta)
		}
		a.Bound = b
	}
	if v, ok := tables["total_variance"]; ok {
		path := []string{"total_variance"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		t := &TotalVariance{Repeats: 4}
		if err := d.table(tbl, path, []field{{"repeats", d.setInt(&t.Repeats)}}); err != nil {
			return err
		}
		if t.Repeats < 2 || t.Repeats > 1000 {
			return d.keyErr(sub(path, "repeats"), "%d (accepted: 2..1000 explainer seeds a draw)", t.Repeats)
		}
		a.TotalVariance = t
	}
	if v, ok := tables["figures"]; ok {
		path := []string{"figures"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		f := &Figures{}
		if err := d.table(tbl, path, []field{{"qualitative", d.setStrings(&f.Qualitative)}, {"perclass", d.setBool(&f.PerClass)}}); err != nil {
			return err
		}
		if err := d.checkList(sub(path, "qualitative"), len(f.Qualitative), "one figure panel each"); err != nil {
			return err
		}
		a.Figures = f
	}
	if v, ok := tables["output"]; ok {
		path := []string{"output"}
		tbl, err := d.asTable(v, path)
		if err != nil {
			return err
		}
		if err := d.table(tbl, path, []field{{"maps", d.setBool(&a.Output.Maps)}}); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) sensitivity(v any) (*Sensitivity, error) {
	path := []string{"sensitivity"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return nil, err
	}
	var specs []string
	s := &Sensitivity{Records: "correct"}
	if err := d.table(tbl, path, []field{{"distortions", d.setStrings(&specs)}, {"records", d.setString(&s.Records)}}); err != nil {
		return nil, err
	}
	if s.Records != "correct" && s.Records != "all" {
		return nil, d.keyErr(sub(path, "records"), "%s (accepted: \"correct\", the records the posterior classifies correctly; \"all\")", sdk.Quote(s.Records))
	}
	if err := d.checkList(sub(path, "distortions"), len(specs), "each distortion explains every batch again"); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, d.errAt(path, "[sensitivity]: distortions is missing or empty (accepted: e.g. [\"noise 30\", \"amplitude 1.05\", \"shift 4\"])")
	}
	for i, spec := range specs {
		dist, err := ParseDistortion(spec)
		if err != nil {
			return nil, d.keyErr(sub(path, "distortions", strconv.Itoa(i)), "%v", err)
		}
		if slices.Contains(s.Distortions, dist) {
			return nil, d.keyErr(sub(path, "distortions", strconv.Itoa(i)), "%s is listed twice", sdk.Quote(spec))
		}
		s.Distortions = append(s.Distortions, dist)
	}
	return s, nil
}

// ParseDistortion reads "noise 30" (SNR in dB, > 0), "amplitude 1.05" (a
// factor > 0) or "shift -4" (a whole number of samples, not 0).
func ParseDistortion(spec string) (Distortion, error) {
	accepted := `accepted: "noise <SNR dB>", "amplitude <factor>", "shift <samples>"`
	f := strings.Fields(spec)
	if len(f) != 2 {
		return Distortion{}, fmt.Errorf("%s is not a distortion (%s)", sdk.Quote(spec), accepted)
	}
	v, err := strconv.ParseFloat(f[1], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return Distortion{}, fmt.Errorf("%s: %s is not a number (%s)", sdk.Quote(spec), sdk.Quote(f[1]), accepted)
	}
	d := Distortion{Kind: f[0], Value: v}
	switch d.Kind {
	case DistortNoise:
		if !(v > 0) {
			return d, fmt.Errorf("%s: the SNR must be > 0 dB", sdk.Quote(spec))
		}
	case DistortAmplitude:
		if !(v > 0) {
			return d, fmt.Errorf("%s: the factor must be > 0", sdk.Quote(spec))
		}
	case DistortShift:
		if v != math.Trunc(v) || v == 0 || math.Abs(v) > 1<<20 {
			return d, fmt.Errorf("%s: the shift must be a whole number of samples, not 0", sdk.Quote(spec))
		}
	default:
		return d, fmt.Errorf("%s: unknown distortion %s (%s)", sdk.Quote(spec), sdk.Quote(f[0]), accepted)
	}
	return d, nil
}

func (d *decoder) setFloats(dst *[]float64) func(any, []string) error {
	return func(v any, p []string) error {
		arr, ok := asArray(v)
		if !ok {
			return d.keyErr(p, "want an array of numbers, got %s", describe(v))
		}
		out := make([]float64, len(arr))
		for i, e := range arr {
			if err := d.setFloat(&out[i])(e, sub(p, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		*dst = out
		return nil
	}
}
