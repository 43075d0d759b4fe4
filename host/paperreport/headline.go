package paperreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/paper"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// headlineRow is what the headline section reads of a run's results.json.
type headlineRow struct {
	Label     string `json:"label"`
	Posterior string `json:"posterior"`
	Explainer string `json:"explainer_label"`
	Summary   string `json:"summary_label"`
	Scores    struct {
		Classes []struct {
			Class int `json:"class"`
			IoU   struct {
				Mean float64 `json:"mean"`
				N    int     `json:"n"`
			} `json:"iou"`
		} `json:"classes"`
		Groups []struct {
			Name string `json:"name"`
			IoU  struct {
				Mean float64 `json:"mean"`
				SD   float64 `json:"sd"`
				N    int     `json:"n"`
			} `json:"iou"`
		} `json:"groups"`
	} `json:"scores"`
}

type headlineRun struct {
	Rows []headlineRow `json:"rows"`
	// ReplicateStats is a replicated run's (host/runner's replicatestats.go): its pairs
	// take the place of the paired analysis.
	ReplicateStats *struct {
		Pairs []struct {
			PosteriorA string `json:"posterior_a"`
			PosteriorB string `json:"posterior_b"`
			Explainer  string `json:"explainer"`
			Summary    string `json:"summary"`
			Group      string `json:"group"`
			IoU        struct {
				Replicates int `json:"replicates"`
				Across     struct {
					Mean    float64 `json:"mean"`
					Lo      float64 `json:"lo"`
					Hi      float64 `json:"hi"`
					Defined bool    `json:"defined"`
				} `json:"across"`
				Positive int `json:"positive"`
			} `json:"iou"`
		} `json:"pairs"`
	} `json:"replicate_stats"`
	Analysis struct {
		Paired []struct {
			Summary    string `json:"summary"`
			Difference struct {
				Mean float64 `json:"mean"`
				Lo   float64 `json:"lo"`
				Hi   float64 `json:"hi"`
				N    int     `json:"n"`
			} `json:"difference"`
			Up int `json:"splits_up"`
		} `json:"paired_disc7_iou"`
	} `json:"analysis"`
}

// disc7Stat is the row's disc-7 IoU, if it has one.
func (r headlineRow) disc7Stat() (mean, sd float64, ok bool) {
	for _, g := range r.Scores.Groups {
		if g.Name == "disc-7" && g.IoU.N > 0 {
			return g.IoU.Mean, g.IoU.SD, true
		}
	}
	return 0, 0, false
}

func (r headlineRow) disc7() string {
	if m, sd, ok := r.disc7Stat(); ok {
		return fmt.Sprintf("%.4f ± %.4f", m, sd)
	}
	return "n/a"
}

func (r headlineRow) disc7Mean() (float64, bool) {
	m, _, ok := r.disc7Stat()
	return m, ok
}

// classIoU is the row's mean IoU of class c, if it has one.
func (r headlineRow) classIoU(c int) (float64, bool) {
	for _, k := range r.Scores.Classes {
		if k.Class == c && k.IoU.N > 0 {
			return k.IoU.Mean, true
		}
	}
	return 0, false
}

func (r headlineRow) class(c int) string {
	if v, ok := r.classIoU(c); ok {
		return fmt.Sprintf("%.3f", v)
	}
	return "n/a"
}

// spread is "lo to hi" of the rows' values, each printed with format;
// "n/a" when no row has one.
func spread(rows []*headlineRow, format string, f func(r *headlineRow) (float64, bool)) string {
	lo, hi, any := math.Inf(1), math.Inf(-1), false
	for _, r := range rows {
		if v, ok := f(r); ok {
			lo, hi, any = min(lo, v), max(hi, v), true
		}
	}
	if !any {
		return "n/a"
	}
	return fmt.Sprintf(format+" to "+format, lo, hi)
}

// classify files a setting by where the interval of its paired
// difference lies: above 0, below 0, or across it.
func classify(lo, hi float64, name string, gains, losses, nulls *[]string) {
	switch {
	case lo > 0:
		*gains = append(*gains, name)
	case hi < 0:
		*losses = append(*losses, name)
	default:
		*nulls = append(*nulls, name)
	}
}

// headlineSection writes REPORT.md's section on the headline finding: for
// the main bnn_results run and each headline variant, the deterministic
// and the ensemble disc-7 IoU, the paired difference with its t-interval,
// and the swell and sag IoU of both (the classes where ours and the
// paper's part ways); then every row of each variant.
func headlineSection(b *bytes.Buffer, po *Outcome) error {
	b.WriteString("\n## The headline finding\n\n")
	b.WriteString("The paper's main result: deep-ensemble mean occlusion raises disc-7 IoU over the deterministic baseline by +0.042 (95% CI 0.035-0.049), on all five splits; per class it lifts swell from 0.618 to 0.773 and sag from 0.291 to 0.364. Each row below changes one thing of `bnn_results.toml` (the first row); the paired difference is ensemble minus deterministic, split by split.\n\n")
	t := report.Table{Title: "Ensemble minus deterministic, disc-7 IoU, under each setting",
		Header: []string{"Setting", "Det. disc-7 IoU", "Ens. disc-7 IoU", "Paired difference (95% t-interval)", "Splits up", "Swell det → ens", "Sag det → ens"}}
	swell, _ := data.ClassByName("swell")
	sag, _ := data.ClassByName("sag")
	var rest []Part
	var gains, losses, nulls []string
	for _, p := range po.Parts {
		base := strings.TrimSuffix(filepath.Base(p.Recipe), ".toml")
		if !isHeadline(p.Recipe) && base != "bnn_results" {
			continue
		}
		if p.Dir == "" || p.Err != nil {
			t.Rows = append(t.Rows, []string{base, "failed", "", "", "", "", ""})
			continue
		}
		raw, err := atomicfile.ReadRegular(filepath.Join(p.Dir, "results.json"), atomicfile.AnySize)
		if err != nil {
			return err
		}
		var run headlineRun
		if err := json.Unmarshal(raw, &run); err != nil {
			return fmt.Errorf("%s: results.json: %w", p.Dir, err)
		}
		if isHeadline(p.Recipe) {
			rest = append(rest, p)
		}
		summaries, explainers := map[string]bool{}, map[string]bool{}
		for _, r := range run.Rows {
			summaries[r.Summary] = true
			explainers[r.Explainer] = true
		}
		for i := range run.Rows {
			ens := &run.Rows[i]
			if paper.Method(ens.Posterior) != "ensemble" {
				continue
			}
			var dets []*headlineRow
			for j := range run.Rows {
				d := &run.Rows[j]
				if paper.Method(d.Posterior) == "deterministic" && d.Explainer == ens.Explainer && d.Summary == ens.Summary {
					dets = append(dets, d)
				}
			}
			if len(dets) == 0 {
				continue
			}
			det := dets[0]
			detD7, detSwell, detSag := det.disc7(), det.class(swell), det.class(sag)
			if len(dets) > 1 { // several networks alone (the members): their range
				detD7 = spread(dets, "%.4f", (*headlineRow).disc7Mean) + fmt.Sprintf(" (%d networks)", len(dets))
				detSwell = spread(dets, "%.3f", func(r *headlineRow) (float64, bool) { return r.classIoU(swell) })
				detSag = spread(dets, "%.3f", func(r *headlineRow) (float64, bool) { return r.classIoU(sag) })
			}
			name := base
			if len(explainers) > 1 {
				name += " (" + ens.Explainer + ")"
			}
			if len(summaries) > 1 {
				name += " (" + ens.Summary + ")"
			}
			diff, up := "n/a", "n/a"
			if rs := run.ReplicateStats; rs != nil {
				// Across replicates: the mean of the replicates' paired
				// differences and its interval, the replicates up.
				for _, pr := range rs.Pairs {
					if pr.Group != "disc-7" || pr.Explainer != ens.Explainer || pr.Summary != ens.Summary ||
						paper.Method(pr.PosteriorA) != "ensemble" || paper.Method(pr.PosteriorB) != "deterministic" {
						continue
					}
					a := pr.IoU.Across
					diff = fmt.Sprintf("%+.4f (n/a)", a.Mean)
					if a.Defined {
						diff = fmt.Sprintf("%+.4f (%+.4f to %+.4f) across %d replicates", a.Mean, a.Lo, a.Hi, pr.IoU.Replicates)
						classify(a.Lo, a.Hi, name, &gains, &losses, &nulls)
					}
					up = fmt.Sprintf("%d of %d replicates", pr.IoU.Positive, pr.IoU.Replicates)
				}
			}
			for _, d := range run.Analysis.Paired {
				if d.Summary != ens.Summary {
					continue
				}
				diff = fmt.Sprintf("%+.4f (%+.4f to %+.4f)", d.Difference.Mean, d.Difference.Lo, d.Difference.Hi)
				up = fmt.Sprintf("%d of %d", d.Up, d.Difference.N)
				classify(d.Difference.Lo, d.Difference.Hi, name, &gains, &losses, &nulls)
			}
			t.Rows = append(t.Rows, []string{name, detD7, ens.disc7(), diff, up, detSwell + " → " + ens.class(swell), detSag + " → " + ens.class(sag)})
		}
	}
	t.Rows = append(t.Rows, []string{"the paper", "0.2565 ± 0.0082", "0.2985 ± 0.0092", "+0.042 (+0.035 to +0.049)", "5 of 5", "0.618 → 0.773", "0.291 → 0.364"})
	if err := t.Render(b, true); err != nil {
		return err
	}
	say := func(what string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(b, "- %s: %s.\n", what, strings.Join(names, ", "))
		}
	}
	b.WriteString("\nWhere the 95% t-interval of the paired difference lies:\n\n")
	say("above 0 (the ensemble gains, as in the paper)", gains)
	say("below 0 (the ensemble loses)", losses)
	say("across 0 (no difference shown)", nulls)
	// The reading of these numbers, written by the project beside the
	// recipes (headline/FINDINGS.md), if there is one.
	for _, p := range rest {
		if f, err := atomicfile.ReadRegular(filepath.Join(filepath.Dir(p.Recipe), "FINDINGS.md"), findingsLimit); err == nil {
			b.WriteString("\n" + strings.TrimSpace(demote(string(f))) + "\n")
			break
		}
	}
	for _, p := range rest {
		fmt.Fprintf(b, "\n### %s\n\n", p.Name)
		if doc := recipeDoc(p.Recipe); doc != "" {
			b.WriteString(doc + "\n\n")
		}
		md, err := atomicfile.ReadRegular(filepath.Join(p.Dir, "tables.md"), atomicfile.AnySize)
		if err != nil {
			continue
		}
		// Only the main table of the variant: its first one.
		parts := strings.SplitN(string(md), "\n## ", 3)
		if len(parts) >= 2 {
			b.WriteString("#### " + strings.TrimRight(parts[1], "\n") + "\n")
		}
	}
	return nil
}

// demote moves every Markdown heading of s two levels down, so that a
// document's "#" becomes REPORT.md's "###".
func demote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			lines[i] = "##" + l
		}
	}
	return strings.Join(lines, "\n")
}

// findingsLimit bounds headline/FINDINGS.md, prose beside the recipes.
var findingsLimit = atomicfile.Limit{Bytes: 16 << 20, What: "a FINDINGS.md"}
