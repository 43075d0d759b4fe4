package eval

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Score is the localisation score of one record.
type Score struct {
	Split int // test split, 0 <= Split < nsplits
	Class int // true class label
	// RMA and IoU of the record's map; used only when OK.
	RMA, IoU float64
	// OK says that both metrics are defined. A record with OK false is
	// counted (by Why) and never scored.
	OK bool
	// Why is the reason a record is not scored (OK false): EmptyMask,
	// ZeroMass or NonFinite. With OK false, Scored (the zero value) counts
	// as Unexplained. Localise returns it.
	Why Skip
}

// Counts counts records by outcome.
type Counts struct {
	Scored      int `json:"scored"`      // both metrics defined, averaged
	EmptyMask   int `json:"empty_mask"`  // empty ground-truth mask (e.g. the normal class)
	ZeroMass    int `json:"zero_mass"`   // map with zero relevance mass
	NonFinite   int `json:"non_finite"`  // map holding NaN or Inf
	Unexplained int `json:"unexplained"` // OK false without a reason (Why = Scored)
}

// Skipped returns the number of records not scored.
func (c Counts) Skipped() int { return c.EmptyMask + c.ZeroMass + c.NonFinite + c.Unexplained }

func (c *Counts) add(s Score) {
	if s.OK {
		c.Scored++
		return
	}
	switch s.Why {
	case EmptyMask:
		c.EmptyMask++
	case ZeroMass:
		c.ZeroMass++
	case NonFinite:
		c.NonFinite++
	default:
		c.Unexplained++
	}
}

func (c *Counts) plus(d Counts) {
	c.Scored += d.Scored
	c.EmptyMask += d.EmptyMask
	c.ZeroMass += d.ZeroMass
	c.NonFinite += d.NonFinite
	c.Unexplained += d.Unexplained
}

// Stat is a mean ± sample standard deviation across splits (see MeanSD).
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	// N is the number of splits the statistic is over. N = 0 means
	// undefined (no split had data); then Mean = SD = 0, never NaN.
	N int `json:"n"`
}

// StatOf returns the Stat of xs (the zero Stat if xs is empty).
func StatOf(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	m, sd := MeanSD(xs)
	return Stat{Mean: m, SD: sd, N: len(xs)}
}

// Cell is one class in one split.
type Cell struct {
	// RMA and IoU are the means over the scored records,
	//   RMA_{s,c} = (1/n_{s,c}) sum_{i in split s, class c, OK} RMA_i,
	// and 0 when Counts.Scored = 0 (then the cell is missing: it is left
	// out of its split's macro averages and listed in Agg.Missing).
	RMA    float64 `json:"rma"`
	IoU    float64 `json:"iou"`
	Counts Counts  `json:"counts"`
}

// ClassAgg is one class across the splits (a row of tab:perclass_*).
type ClassAgg struct {
	Class int `json:"class"`
	// RMA and IoU: mean ± sd over the splits of the per-split class means,
	// over the splits where the class has a scored record (N of them).
	RMA    Stat   `json:"rma"`
	IoU    Stat   `json:"iou"`
	Splits []Cell `json:"splits"` // one per split
	Counts Counts `json:"counts"` // over all splits
}

// GroupSplit is a macro average of one group in one split.
type GroupSplit struct {
	// RMA and IoU are the unweighted means of the class means over the
	// classes of the group with a scored record in this split,
	//   macro_s = (1/|G_s|) sum_{c in G_s} RMA_{s,c},
	// 0 when G_s is empty.
	RMA     float64 `json:"rma"`
	IoU     float64 `json:"iou"`
	Classes int     `json:"classes"` // |G_s|
	Missing []int   `json:"missing"` // classes of the group without a scored record in this split
}

// GroupAgg is one group of classes ("all", "disc-7") across the splits: a
// column pair of tab:bnn_results.
type GroupAgg struct {
	Name    string `json:"name"`
	Classes []int  `json:"classes"`
	// RMA and IoU: mean ± sd of the per-split macros over the splits where
	// at least one class of the group has data (N of them).
	RMA    Stat         `json:"rma"`
	IoU    Stat         `json:"iou"`
	Splits []GroupSplit `json:"splits"` // one per split
}

// SplitClass names one class in one split.
type SplitClass struct {
	Split int `json:"split"`
	Class int `json:"class"`
}

// Agg is the aggregate of a set of scored records over test splits.
type Agg struct {
	NSplits int        `json:"n_splits"`
	Classes []ClassAgg `json:"classes"` // in the order of the classes argument
	Groups  []GroupAgg `json:"groups"`  // sorted by name
	Counts  Counts     `json:"counts"`  // over all records
	// Missing lists the (split, class) cells without a scored record, in
	// split then class order. A missing cell is left out of its split's
	// macros and out of its class's Stat. A complete run has none, except
	// for a class that is never scored (the normal class, if listed).
	Missing []SplitClass `json:"missing"`
}

// Class returns the aggregate of class c.
func (a *Agg) Class(c int) (ClassAgg, bool) {
	for _, ca := range a.Classes {
		if ca.Class == c {
			return ca, true
		}
	}
	return ClassAgg{}, false
}

// Group returns the aggregate of the group named name.
func (a *Agg) Group(name string) (GroupAgg, bool) {
	for _, g := range a.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return GroupAgg{}, false
}

// Aggregate aggregates records as the paper reports them:
//
//  1. per split s and class c, the mean of the scored records,
//     RMA_{s,c} = (1/n_{s,c}) sum_i RMA_i (likewise IoU);
//  2. per split and group G, the unweighted (macro) mean over the classes
//     of G, macro_{s,G} = (1/|G|) sum_{c in G} RMA_{s,c};
//  3. mean ± sample standard deviation (n-1) across the splits, of
//     RMA_{s,c} per class (tab:perclass_*) and of macro_{s,G} per group
//     (tab:bnn_results: "all" = the 15 disturbance classes, "disc-7").
//
// classes lists the classes to report, in report order; every record's
// class must be one of them (pass the normal class too if its records,
// all EmptyMask, are in scores; a class never scored has N = 0). groups
// maps a group name to its classes, a subset of classes. nsplits is the
// number of splits; every record's Split is in [0, nsplits).
//
// Records with OK false are counted, by reason, and never scored. A class
// with no scored record in a split is explicit, never NaN: its cell has
// Counts.Scored = 0, it is listed in Agg.Missing and in GroupSplit.Missing,
// and it is left out of that split's macros (which then average the
// classes present) and of its class Stat. Stat.N says how many splits a
// statistic is over.
//
// Errors: nsplits < 1; empty or duplicate classes; an empty group, a
// duplicate or unknown class in a group; a record with a split or class
// out of range, or OK with a score outside [0, 1] (NaN included), or OK
// with a reason. They name the record index.
func Aggregate(scores []Score, classes []int, groups map[string][]int, nsplits int) (Agg, error) {
	if nsplits < 1 {
		return Agg{}, fmt.Errorf("eval: aggregate: nsplits = %d, want at least 1", nsplits)
	}
	pos, names, err := checkClasses("aggregate", classes, groups)
	if err != nil {
		return Agg{}, err
	}

	// Sums per (split, class).
	nc := len(classes)
	sumR := make([]float64, nsplits*nc)
	sumI := make([]float64, nsplits*nc)
	cnt := make([]Counts, nsplits*nc)
	for i, s := range scores {
		if s.Split < 0 || s.Split >= nsplits {
			return Agg{}, fmt.Errorf("eval: aggregate: record %d: split %d out of [0, %d)", i, s.Split, nsplits)
		}
		ci, ok := pos[s.Class]
		if !ok {
			return Agg{}, fmt.Errorf("eval: aggregate: record %d (split %d): class %d is not one of the classes %v", i, s.Split, s.Class, classes)
		}
		if s.OK {
			if s.Why != Scored {
				return Agg{}, fmt.Errorf("eval: aggregate: record %d (split %d, class %d): OK but Why = %v", i, s.Split, s.Class, s.Why)
			}
			if !(s.RMA >= 0 && s.RMA <= 1) || !(s.IoU >= 0 && s.IoU <= 1) {
				return Agg{}, fmt.Errorf("eval: aggregate: record %d (split %d, class %d): RMA = %v, IoU = %v, want both in [0, 1] for a scored record", i, s.Split, s.Class, s.RMA, s.IoU)
			}
			sumR[s.Split*nc+ci] += s.RMA
			sumI[s.Split*nc+ci] += s.IoU
		}
		cnt[s.Split*nc+ci].add(s)
	}

	a := Agg{NSplits: nsplits, Classes: make([]ClassAgg, nc)}
	for ci, c := range classes {
		ca := ClassAgg{Class: c, Splits: make([]Cell, nsplits)}
		var rs, is []float64
		for s := range nsplits {
			k := s*nc + ci
			cell := Cell{Counts: cnt[k]}
			if n := cnt[k].Scored; n > 0 {
				cell.RMA = sumR[k] / float64(n)
				cell.IoU = sumI[k] / float64(n)
				rs = append(rs, cell.RMA)
				is = append(is, cell.IoU)
			}
			ca.Splits[s] = cell
			ca.Counts.plus(cnt[k])
		}
		ca.RMA, ca.IoU = StatOf(rs), StatOf(is)
		a.Classes[ci] = ca
		a.Counts.plus(ca.Counts)
	}
	for s := range nsplits {
		for ci, c := range classes {
			if cnt[s*nc+ci].Scored == 0 {
				a.Missing = append(a.Missing, SplitClass{Split: s, Class: c})
			}
		}
	}

	for _, name := range names {
		g := GroupAgg{Name: name, Classes: slices.Clone(groups[name]), Splits: make([]GroupSplit, nsplits)}
		var rs, is []float64
		for s := range nsplits {
			gs := GroupSplit{}
			for _, c := range g.Classes {
				cell := a.Classes[pos[c]].Splits[s]
				if cell.Counts.Scored == 0 {
					gs.Missing = append(gs.Missing, c)
					continue
				}
				gs.RMA += cell.RMA
				gs.IoU += cell.IoU
				gs.Classes++
			}
			if gs.Classes > 0 {
				gs.RMA /= float64(gs.Classes)
				gs.IoU /= float64(gs.Classes)
				rs = append(rs, gs.RMA)
				is = append(is, gs.IoU)
			}
			g.Splits[s] = gs
		}
		g.RMA, g.IoU = StatOf(rs), StatOf(is)
		a.Groups = append(a.Groups, g)
	}
	return a, nil
}

// checkClasses validates the classes and groups of an aggregate: classes
// not empty and without duplicates, every group not empty, without
// duplicates, and a subset of classes. It returns each class's index in
// classes and the group names, sorted.
func checkClasses(fn string, classes []int, groups map[string][]int) (map[int]int, []string, error) {
	if len(classes) == 0 {
		return nil, nil, fmt.Errorf("eval: %s: no classes", fn)
	}
	pos := make(map[int]int, len(classes)) // class -> index in classes
	for i, c := range classes {
		if _, dup := pos[c]; dup {
			return nil, nil, fmt.Errorf("eval: %s: class %d listed twice in classes", fn, c)
		}
		pos[c] = i
	}
	names := make([]string, 0, len(groups))
	for name, gc := range groups {
		if len(gc) == 0 {
			return nil, nil, fmt.Errorf("eval: %s: group %q has no class", fn, name)
		}
		seen := map[int]bool{}
		for _, c := range gc {
			if _, ok := pos[c]; !ok {
				return nil, nil, fmt.Errorf("eval: %s: group %q: class %d is not one of the classes %v", fn, name, c, classes)
			}
			if seen[c] {
				return nil, nil, fmt.Errorf("eval: %s: group %q lists class %d twice", fn, name, c)
			}
			seen[c] = true
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return pos, names, nil
}

// MeanSD returns the mean and the sample standard deviation (divisor n-1)
// of xs:
//
//	mean = (1/n) sum_i x_i
//	sd   = sqrt( (sum_i (x_i - mean)^2 - (sum_i (x_i - mean))^2 / n) / (n - 1) )
//
// (the corrected two-pass algorithm, as gonum's stat.Variance). For one
// value sd = 0 (the n-1 formula is undefined there; the paper reports
// mean ± sd over five splits, so this only arises in tests and partial
// runs). MeanSD panics if xs is empty; NaN in xs propagates.
func MeanSD(xs []float64) (mean, sd float64) {
	n := len(xs)
	if n == 0 {
		panic("eval: MeanSD: no values")
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n == 1 {
		return mean, 0
	}
	var ss, comp float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
		comp += d
	}
	v := (ss - comp*comp/float64(n)) / float64(n-1)
	return mean, math.Sqrt(max(v, 0))
}

// Accuracy returns the fraction of records whose predicted class equals
// the label, (1/n) sum_i [pred_i = label_i]; ok is false (and the value 0)
// for no record. Compute it per split and summarise the splits with
// StatOf or MeanSD, as tab:bnn_results does. It panics if the lengths
// differ.
func Accuracy(pred, label []int) (acc float64, ok bool) {
	if len(pred) != len(label) {
		panic(fmt.Sprintf("eval: Accuracy: len(pred) = %d, len(label) = %d", len(pred), len(label)))
	}
	if len(pred) == 0 {
		return 0, false
	}
	k := 0
	for i, p := range pred {
		if p == label[i] {
			k++
		}
	}
	return float64(k) / float64(len(pred)), true
}

// PaperGroups returns the groups of the paper's aggregate tables, with the
// class numbers of docs/spec/pqd-signals.md: "all", the 15 disturbance
// classes 1..15 (the normal class 0 has an empty mask), and "disc-7", the
// seven discriminative classes sag (1), swell (2), interruption (3),
// impulsive transient (4), oscillatory transient (5), notch (8) and
// spike (9). It returns a new map on every call.
func PaperGroups() map[string][]int {
	all := make([]int, 15)
	for i := range all {
		all[i] = i + 1
	}
	return map[string][]int{
		"all":    all,
		"disc-7": {1, 2, 3, 4, 5, 8, 9},
	}
}
