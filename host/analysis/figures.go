package analysis

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/paper"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/stat"
)

// figureKappa is the stabiliser of the figures' CV strip: summary.cv's
// default kappa (a test checks that they agree).
const figureKappa = 1e-8

// MaxAllFigures bounds the figures of `qualitative = ["all"]`.
const MaxAllFigures = 24

// rates are the figures' sampling rate and system frequency (Setup's Fs
// and F0, else 3200 Hz and 50 Hz).
func (a *Analyser) rates() (fs, f0 float64) {
	fs, f0 = a.s.Fs, a.s.F0
	if fs == 0 {
		fs = 3200
	}
	if f0 == 0 {
		f0 = 50
	}
	return fs, f0
}

// wantsFigure reports whether class label is one of the qualitative
// figure's classes (names as host/data or the paper writes them).
func wantsFigure(classes []string, label int, names []string) bool {
	name := report.ClassName(names, label)
	for _, c := range classes {
		if c == name || paper.Class(c) == name {
			return true
		}
	}
	return false
}

// newPanel is the qualitative figure of record j of the batch: its
// waveform and mask (a row a channel for C > 1), the S member maps (|R| when the run scores |R|),
// and their mean, 5% and 95% order-statistic quantiles (the paper's
// alpha-quantile summary, r_(ceil(alpha S))), variance and CV (summary.cv's
// default kappa), as the summary plugins compute them.
func newPanel(b *engine.Batch, j int, members [][]float64) *figure.Panel {
	S := len(members)
	x := b.X[j]
	wave := make([]float64, len(x))
	for n, v := range x {
		wave[n] = float64(v)
	}
	if len(members) > 0 && len(members[0]) != len(wave) {
		wave = wave[:min(len(wave), len(members[0]))]
	}
	pred := b.Preds[j]
	class := ""
	if b.Labels[j] >= 0 {
		class = report.ClassName(b.ClassNames, b.Labels[j])
	}
	N := len(members[0])
	vr, cvm := make([]float64, N), make([]float64, N) // 0 with one draw
	if S >= 2 {
		stat.Variance(vr, members)
		stat.CV(cvm, members, figureKappa)
	}
	title := fmt.Sprintf("%s / %s, split %s record %d", b.Posterior.Label, b.Explainer.Label, b.SplitName, b.Records[j])
	if b.Labels[j] < 0 { // a recording's window
		title = fmt.Sprintf("%s / %s, window %d of recording %s", b.Posterior.Label, b.Explainer.Label, b.Records[j], b.SplitName)
	}
	p := &figure.Panel{
		Title:    title,
		Labels:   figure.Labels{Class: class, Predicted: report.ClassName(b.ClassNames, pred), Prob: b.Probs[j][pred]},
		Wave:     wave,
		Mask:     b.Masks[j],
		Members:  members,
		Mean:     stat.Mean(make([]float64, N), members),
		Q05:      stat.Quantile(make([]float64, N), members, stat.Rank(0.05, S)),
		Q95:      stat.Quantile(make([]float64, N), members, stat.Rank(0.95, S)),
		Variance: vr,
		CV:       cvm,
		Fs:       3200,
	}
	if b.Channels > 1 { // a row a channel, each with its own mask
		p.Channels, p.ChannelNames = b.Channels, b.ChannelNames
	}
	return p
}

// figures draws the qualitative panels (the first correctly classified
// record of each class asked for, in split and record order) and a
// per-class IoU bar chart of the run's rows, beside the paper's values
// when the recipe names one of the paper's per-class tables.
func (a *Analyser) figures(rep *Report, res *engine.Results) error {
	f := a.s.Analysis.Figures
	if f == nil {
		return nil
	}
	for pi, p := range a.orderedPairs() {
		if slices.Contains(f.Qualitative, "all") {
			// Every window of a recording, in order, up to MaxAllFigures.
			k := 0
			for si, recs := range p.recs {
				for ri, r := range recs {
					if r == nil || r.figure == nil || k >= MaxAllFigures {
						continue
					}
					k++
					var buf bytes.Buffer
					if err := figure.Qualitative(&buf, *r.figure); err != nil {
						// a figure never costs the run: it becomes a note
						rep.Notes = append(rep.Notes, fmt.Sprintf("figure of %s record %d under %s / %s not drawn: %v", a.s.Tests[si].Name, ri, p.post, p.exp, err))
						continue
					}
					name := fmt.Sprintf("figures/qual-%02d-%s_%s-%s-%04d.png", pi+1, report.Slug(p.post), report.Slug(p.exp), report.Slug(a.s.Tests[si].Name), ri)
					rep.Files = append(rep.Files, File{Name: name, Data: buf.Bytes()})
				}
			}
			continue
		}
		for _, want := range f.Qualitative {
			var panel *figure.Panel
		search:
			for _, recs := range p.recs {
				for _, r := range recs {
					if r != nil && r.figure != nil && wantsFigure([]string{want}, r.label, res.ClassNames) {
						panel = r.figure
						break search
					}
				}
			}
			if panel == nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("figure: no correctly classified %s record under %s / %s", want, p.post, p.exp))
				continue
			}
			var buf bytes.Buffer
			if err := figure.Qualitative(&buf, *panel); err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("qualitative figure of %s under %s / %s not drawn: %v", want, p.post, p.exp, err))
				continue
			}
			name := fmt.Sprintf("figures/qual-%02d-%s_%s-%s.png", pi+1, report.Slug(p.post), report.Slug(p.exp), report.Slug(want))
			rep.Files = append(rep.Files, File{Name: name, Data: buf.Bytes()})
		}
	}
	if f.PerClass && len(res.Rows) > 0 {
		bars, err := perClassBars(res, report.PerClassPaperTable(a.s.Analysis.Paper))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := figure.PerClassBars(&buf, bars); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("per-class bar chart not drawn: %v", err))
		} else {
			rep.Files = append(rep.Files, File{Name: "figures/perclass-iou.png", Data: buf.Bytes()})
		}
	}
	return nil
}

// perClassBars is the per-class chart (report.PerClassIoUBars, with the
// paper's markers from table pt) as the figure package draws it.
func perClassBars(res *engine.Results, pt string) (figure.Bars, error) {
	b, err := report.PerClassIoUBars(res, pt)
	if err != nil || b == nil {
		return figure.Bars{}, err
	}
	return figure.Bars{Title: b.Title, Classes: b.Classes, Methods: b.Methods, Values: b.Values, SD: b.SD, Paper: b.Paper}, nil
}
