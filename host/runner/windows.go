package runner

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/report"
)

// windowRow is one window of a recording under one posterior: what the
// run answers for it (windows.csv and results.json's "windows"). With p
// the predictive mean of the S draws' probabilities (engine.Prediction):
//
//	probability        = p_c, c = argmax p (the class)
//	predictive_entropy = H(p) = -sum_k p_k ln p_k, nats
//	mutual_information = H(p) - (1/S) sum_s H(p_s) (the draws' disagreement)
//	agreement          = the share of draws whose own argmax is c
type windowRow struct {
	Posterior   string  `json:"posterior"`
	Label       string  `json:"posterior_label"`
	Window      int     `json:"window"`
	Start       float64 `json:"start_s"`
	Class       string  `json:"class"`
	Probability float64 `json:"probability"`
	Entropy     float64 `json:"predictive_entropy"`
	MutualInfo  float64 `json:"mutual_information"`
	Agreement   float64 `json:"agreement"`
}

// windowTable gathers the rows of every posterior, in the order the
// engine hands them (the plan's).
type windowTable struct {
	mu   sync.Mutex
	rows []windowRow
}

// add takes a posterior's predictions on a recording run's one split.
func (t *windowTable) add(ds Datasets, ps engine.Step, pred engine.Prediction) error {
	if ds.Recording == "" || len(pred.Probs) == 0 {
		return nil
	}
	n := len(pred.MeanEntropy[0])
	if n != len(ds.Windows) || n == 0 {
		return fmt.Errorf("%s: %d predictions for the recording's %d windows", ps.Name(), n, len(ds.Windows))
	}
	k := len(pred.Probs[0]) / n
	rows := make([]windowRow, n)
	for i := range n {
		p := pred.Probs[0][i*k : (i+1)*k]
		c := 0
		for j, v := range p {
			if v > p[c] {
				c = j
			}
		}
		h := engine.Entropy(p)
		mi := max(h-pred.MeanEntropy[0][i], 0) // >= 0 (concavity); rounding may dip below
		name := data.ClassName(c)
		if ds.Classes != nil {
			name = ds.Classes[c]
		}
		rows[i] = windowRow{Posterior: ps.ID, Label: ps.Label, Window: i, Start: ds.Windows[i].SourceTime, Class: name,
			Probability: p[c], Entropy: h, MutualInfo: mi, Agreement: pred.Agree[0][i]}
	}
	t.mu.Lock()
	t.rows = append(t.rows, rows...)
	t.mu.Unlock()
	return nil
}

// csv is windows.csv: a header and one line a (posterior, window).
func (t *windowTable) csv() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	if err := w.Write([]string{"posterior", "posterior_label", "window", "start_s", "class", "probability", "predictive_entropy", "mutual_information", "agreement"}); err != nil {
		return nil, err
	}
	for _, r := range t.rows {
		if err := w.Write([]string{r.Posterior, r.Label, strconv.Itoa(r.Window), strconv.FormatFloat(r.Start, 'f', 6, 64), r.Class, f(r.Probability), f(r.Entropy), f(r.MutualInfo), f(r.Agreement)}); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// timelines are the timeline figures of the recording, one a posterior
// in the order of the rows (figures/timeline-<posterior label>.png): the
// recording's kept windows (the split's records, C x T at ds.Rate) at
// their start times, each with its row's class, probability, mutual
// information and agreement, drawn by plot (figure.TimelinePlot). A
// figure that cannot be drawn is a note.
func (t *windowTable) timelines(ds Datasets, plot func(io.Writer, figure.Timeline) error) (names []string, pngs [][]byte, notes []string, err error) {
	if len(t.rows) == 0 || len(ds.Tests) == 0 {
		return nil, nil, nil, nil
	}
	d := ds.Tests[0].Data
	var order []string
	byPost := map[string][]windowRow{}
	for _, r := range t.rows {
		if _, ok := byPost[r.Posterior]; !ok {
			order = append(order, r.Posterior)
		}
		byPost[r.Posterior] = append(byPost[r.Posterior], r)
	}
	for _, p := range order {
		rows := byPost[p]
		tl := figure.Timeline{Title: fmt.Sprintf("%s, %s", ds.Recording, rows[0].Label), Fs: ds.Rate, Channels: ds.Tests[0].Channels, ChannelNames: ds.Tests[0].ChannelNames}
		for _, r := range rows {
			if r.Window >= d.N {
				return nil, nil, nil, fmt.Errorf("timeline of %s: window %d of a split of %d records", rows[0].Label, r.Window, d.N)
			}
			x := d.X[r.Window*d.Len : (r.Window+1)*d.Len]
			wave := make([]float64, len(x))
			for i, v := range x {
				wave[i] = float64(v)
			}
			tl.Windows = append(tl.Windows, figure.TimelineWindow{Start: r.Start, Wave: wave, Class: r.Class, Prob: r.Probability, MI: r.MutualInfo, Agreement: r.Agreement})
		}
		var b bytes.Buffer
		if err := plot(&b, tl); err != nil {
			notes = append(notes, fmt.Sprintf("timeline of %s not drawn: %v", rows[0].Label, err))
			continue
		}
		names = append(names, "figures/timeline-"+report.Slug(rows[0].Label)+".png")
		pngs = append(pngs, b.Bytes())
	}
	return names, pngs, notes, nil
}

func (t *windowTable) section() report.Section {
	if len(t.rows) == 0 {
		return report.Section{Key: "windows"}
	}
	return report.Section{Key: "windows", Value: t.rows}
}
