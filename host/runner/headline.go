package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/paper"
	"github.com/uaxai/uaxai/host/report"
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
	Rows     []headlineRow `json:"rows"`
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

func (r headlineRow) disc7() string {
	for _, g := range r.Scores.Groups {
		if g.Name == "disc-7" && g.IoU.N > 0 {
			return fmt.Sprintf("%.4f ± %.4f", g.IoU.Mean, g.IoU.SD)
		}
	}
	return "n/a"
}

func (r headlineRow) disc7mean() string {
	for _, g := range r.Scores.Groups {
		if g.Name == "disc-7" && g.IoU.N > 0 {
			return fmt.Sprintf("%.4f", g.IoU.Mean)
		}
	}
	return "n/a"
}

// spread is "lo to hi" of the rows' values (compared as the decimals
// they print as).
func spread(rows []*headlineRow, f func(r *headlineRow) string) string {
	lo, hi := f(rows[0]), f(rows[0])
	for _, r := range rows[1:] {
		v := f(r)
		if num(v) < num(lo) {
			lo = v
		}
		if num(v) > num(hi) {
			hi = v
		}
	}
	return lo + " to " + hi
}

func num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func (r headlineRow) class(c int) string {
	for _, k := range r.Scores.Classes {
		if k.Class == c && k.IoU.N > 0 {
			return fmt.Sprintf("%.3f", k.IoU.Mean)
		}
	}
	return "n/a"
}

// headlineSection writes REPORT.md's section on the headline finding: for
// the main bnn_results run and each headline variant, the deterministic
// and the ensemble disc-7 IoU, the paired difference with its t-interval,
// and the swell and sag IoU of both (the classes where ours and the
// paper's part ways); then every row of each variant.
func headlineSection(b *bytes.Buffer, po *PaperOutcome) error {
	b.WriteString("\n## The headline finding\n\n")
	b.WriteString("The paper's main result: deep-ensemble mean occlusion raises disc-7 IoU over the deterministic baseline by +0.042 (95% CI 0.035-0.049), on all five splits; per class it lifts swell from 0.618 to 0.773 and sag from 0.291 to 0.364. Each row below changes one thing of `bnn_results.toml` (the first row); the paired difference is ensemble minus deterministic, split by split.\n\n")
	t := report.Table{Title: "Ensemble minus deterministic, disc-7 IoU, under each setting",
		Header: []string{"Setting", "Det. disc-7 IoU", "Ens. disc-7 IoU", "Paired difference (95% t-interval)", "Splits up", "Swell det → ens", "Sag det → ens"}}
	swell, _ := data.ClassByName("swell")
	sag, _ := data.ClassByName("sag")
	var rest []PaperPart
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
		raw, err := os.ReadFile(filepath.Join(p.Dir, "results.json"))
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
		summaries := map[string]bool{}
		for _, r := range run.Rows {
			summaries[r.Summary] = true
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
				detD7 = spread(dets, func(r *headlineRow) string { return r.disc7mean() }) + fmt.Sprintf(" (%d networks)", len(dets))
				detSwell = spread(dets, func(r *headlineRow) string { return r.class(swell) })
				detSag = spread(dets, func(r *headlineRow) string { return r.class(sag) })
			}
			name := base
			if len(summaries) > 1 {
				name += " (" + ens.Summary + ")"
			}
			diff, up := "n/a", "n/a"
			for _, d := range run.Analysis.Paired {
				if d.Summary != ens.Summary {
					continue
				}
				diff = fmt.Sprintf("%+.4f (%+.4f to %+.4f)", d.Difference.Mean, d.Difference.Lo, d.Difference.Hi)
				up = fmt.Sprintf("%d of %d", d.Up, d.Difference.N)
				switch {
				case d.Difference.Lo > 0:
					gains = append(gains, name)
				case d.Difference.Hi < 0:
					losses = append(losses, name)
				default:
					nulls = append(nulls, name)
				}
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
		if f, err := os.ReadFile(filepath.Join(filepath.Dir(p.Recipe), "FINDINGS.md")); err == nil {
			b.WriteString("\n" + strings.TrimSpace(demote(string(f))) + "\n")
			break
		}
	}
	for _, p := range rest {
		fmt.Fprintf(b, "\n### %s\n\n", p.Name)
		if doc := recipeDoc(p.Recipe); doc != "" {
			b.WriteString(doc + "\n\n")
		}
		md, err := os.ReadFile(filepath.Join(p.Dir, "tables.md"))
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
