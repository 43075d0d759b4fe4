package runner

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/ood"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk"
)

// windowRow is one window of a recording under one posterior: what the
// run answers for it (windows.csv and results.json's "windows"). With p
// the predictive mean of the S draws' probabilities (engine.Prediction):
//
//	probability        = p_c, c = argmax p (the class)
//	predictive_entropy = H(p) = -sum_k p_k ln p_k, nats
//	mutual_information = H(p) - (1/S) sum_s H(p_s) (the draws' disagreement)
//	agreement          = the share of draws whose own argmax is c
//	ood_score          = the window's distance from the training windows
//	                     of class c (host/ood: RMS, f0, THD per channel)
//	feature_ood_score  = the posterior's feature-space score: the mean over
//	                     the draws of the squared Mahalanobis distance of the
//	                     window's penultimate features to the nearest class
//	                     (engine.FeatureCheck)
//	ood                = either score above its threshold, fitted on the
//	                     validation windows (ood.DefaultAlpha of them flagged)
//	held_out_precision = of the held-out labelled records the posterior
//	                     gave class c, the share that are of c
type windowRow struct {
	Posterior   string   `json:"posterior"`
	Label       string   `json:"posterior_label"`
	Window      int      `json:"window"`
	Start       float64  `json:"start_s"`
	Class       string   `json:"class"`
	Probability float64  `json:"probability"`
	Entropy     float64  `json:"predictive_entropy"`
	MutualInfo  float64  `json:"mutual_information"`
	Agreement   float64  `json:"agreement"`
	OODScore    *float64 `json:"ood_score,omitempty"` // nil: no check (no training windows)
	// FeatureScore is the posterior's feature-space score (engine.FeatureCheck;
	// nil: no feature check); OOD is either check's flag, OODReason both
	// reasons.
	FeatureScore *float64 `json:"feature_ood_score,omitempty"`
	OOD          bool     `json:"ood"`
	OODReason    string   `json:"ood_reason,omitempty"`
	// HeldOutPrecision is the share of the held-out records the
	// posterior gave this window's class that are of it (nil: no held-out
	// record was given it, or none was held out), of HeldOutN.
	HeldOutPrecision *float64 `json:"held_out_precision,omitempty"`
	HeldOutN         int      `json:"held_out_predicted,omitempty"`
}

// windowTable gathers the rows of every posterior, in the order the
// engine hands them (the plan's).
type windowTable struct {
	mu   sync.Mutex
	rows []windowRow
	// the input-level check (host/ood), fitted on the first add
	oodOnce sync.Once
	ood     *ood.Reference
	feats   [][]float64 // the recording's windows' features
	oodNote string      // why there is no check, or how it was fitted
}

// fitOOD fits the input-level check on the recipe's training and
// validation windows and measures the recording's windows; without
// training or validation windows it leaves a note instead.
func (t *windowTable) fitOOD(ds Datasets) {
	ref, note := fitReference(ds, "the recording's windows")
	t.ood, t.oodNote = ref, note
	if ref != nil {
		t.feats = measureSplit(ds, ds.Tests[0].Data)
	}
}

// fitReference fits host/ood's check of the inputs of ds's test splits
// (what, for the note) on its training and validation windows: the
// reference and a note saying how it was fitted, or nil and why there is
// none.
func fitReference(ds Datasets, what string) (*ood.Reference, string) {
	if ds.Train.N == 0 || ds.Val.N == 0 || ds.Rate <= 0 || ds.F0 <= 0 || len(ds.Tests) == 0 {
		return nil, fmt.Sprintf("no out-of-distribution check of %s: the recipe has no training and validation windows to compare them with", what)
	}
	classes := len(data.ClassNames)
	if ds.Classes != nil {
		classes = len(ds.Classes)
	}
	names := ood.FeatureNames(ds.Tests[0].ChannelLabels())
	ref, err := ood.Fit(names, classes, measureSplit(ds, ds.Train), ds.Train.Y, measureSplit(ds, ds.Val), ds.Val.Y, ood.DefaultAlpha)
	if err != nil {
		return nil, fmt.Sprintf("no out-of-distribution check of %s: %v", what, err)
	}
	return ref, fmt.Sprintf("out-of-distribution check of %s: each one's RMS, fundamental frequency and THD per channel against the %d training windows of its predicted class; the threshold %.3g flags %.0f%% of the %d validation windows", what, ds.Train.N, ref.Threshold, 100*ref.Alpha, ds.Val.N)
}

// oodColumns are records.csv's out-of-distribution columns (host/ood):
// each record's ood_score and ood under the class its row's posterior
// predicted, and ood_reason; ref nil fits the check on ds (a recording
// run passes the windows' own, and their features as feats0, the one
// split's). It returns the note saying how the check was fitted, or why
// there is none (no columns then).
func oodColumns(ds Datasets, ref *ood.Reference, feats0 [][]float64, checks *checks) (report.RecordColumns, string, bool) {
	note := ""
	if ref == nil {
		ref, note = fitReference(ds, "the test records")
	}
	anyFeature := false
	for _, c := range checks.rows {
		anyFeature = anyFeature || c.Feature != nil
	}
	if ref == nil && !anyFeature {
		return report.RecordColumns{}, note, false
	}
	var feats [][][]float64
	if ref != nil {
		feats = make([][][]float64, len(ds.Tests))
		for i, ts := range ds.Tests {
			if i == 0 && feats0 != nil {
				feats[i] = feats0
				continue
			}
			feats[i] = measureSplit(ds, ts.Data)
		}
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	cells := func(row *engine.Row, rec *engine.Record) []string {
		out := []string{"", "", "", ""}
		if rec.Pred < 0 {
			return out
		}
		flagged, checked := false, false
		var why string
		if ref != nil && rec.Split >= 0 && rec.Split < len(feats) && rec.Index >= 0 && rec.Index < len(feats[rec.Split]) {
			name := data.ClassName(rec.Pred)
			if ds.Classes != nil && rec.Pred < len(ds.Classes) {
				name = ds.Classes[rec.Pred]
			}
			s, flag, w := ref.Check(feats[rec.Split][rec.Index], rec.Pred, name)
			out[0], flagged, why, checked = g(s), flag, w, true
		}
		if s, flag, w, ok := checks.of(row.Label, row.Replicate).score(rec.Split, rec.Index); ok {
			out[1], checked = g(s), true
			if flag {
				flagged, why = true, joinReasons(why, w)
			}
		}
		if checked {
			out[2], out[3] = strconv.FormatBool(flagged), why
		}
		return out
	}
	return report.RecordColumns{Header: []string{"ood_score", "feature_ood_score", "ood", "ood_reason"}, Cells: cells}, note, true
}

// joinReasons is the reasons a and b, either may be empty, their common
// head ("outside what the model was trained on: ") said once.
func joinReasons(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	const head = "outside what the model was trained on: "
	if strings.HasPrefix(a, head) && strings.HasPrefix(b, head) {
		b = strings.TrimPrefix(b, head)
	}
	return a + "; " + b
}

// measureSplit is host/ood's features of each input of d.
func measureSplit(ds Datasets, d sdk.Dataset) [][]float64 {
	C := max(ds.Channels, 1)
	T := d.Len / C
	out := make([][]float64, d.N)
	for i := range out {
		out[i] = make([]float64, ood.PerChannel*C)
		ood.Measure(out[i], d.X[i*d.Len:(i+1)*d.Len], C, T, ds.Rate, ds.F0)
	}
	return out
}

// add takes a posterior's predictions on a recording run's one split.
func (t *windowTable) add(ds Datasets, ps engine.Step, pred engine.Prediction, check *postCheck) error {
	if ds.Recording == "" || len(pred.Probs) == 0 {
		return nil
	}
	n := len(pred.MeanEntropy[0])
	if n != len(ds.Windows) || n == 0 {
		return fmt.Errorf("%s: %d predictions for the recording's %d windows", ps.Name(), n, len(ds.Windows))
	}
	k := len(pred.Probs[0]) / n
	t.oodOnce.Do(func() { t.fitOOD(ds) })
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
		if t.ood != nil && i < len(t.feats) {
			s, flag, why := t.ood.Check(t.feats[i], c, name)
			rows[i].OODScore, rows[i].OOD, rows[i].OODReason = &s, flag, why
		}
		if s, flag, why, ok := check.score(0, i); ok {
			rows[i].FeatureScore = &s
			if flag {
				rows[i].OOD, rows[i].OODReason = true, joinReasons(rows[i].OODReason, why)
			}
		}
		if check != nil && check.Quality != nil {
			if p, n := check.Quality.Precision(c); n > 0 {
				rows[i].HeldOutPrecision, rows[i].HeldOutN = &p, n
			}
		}
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
	if err := w.Write([]string{"posterior", "posterior_label", "window", "start_s", "class", "probability", "predictive_entropy", "mutual_information", "agreement",
		"ood_score", "feature_ood_score", "ood", "ood_reason", "held_out_precision", "held_out_predicted"}); err != nil {
		return nil, err
	}
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for _, r := range t.rows {
		flag, n := "", ""
		if r.OODScore != nil || r.FeatureScore != nil {
			flag = strconv.FormatBool(r.OOD)
		}
		if r.HeldOutPrecision != nil {
			n = strconv.Itoa(r.HeldOutN)
		}
		if err := w.Write([]string{r.Posterior, r.Label, strconv.Itoa(r.Window), strconv.FormatFloat(r.Start, 'f', 6, 64), r.Class, f(r.Probability), f(r.Entropy), f(r.MutualInfo), f(r.Agreement),
			opt(r.OODScore), opt(r.FeatureScore), flag, r.OODReason, opt(r.HeldOutPrecision), n}); err != nil {
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
		tl := figure.Timeline{Title: fmt.Sprintf("%s, %s", ds.Recording, rows[0].Label), Fs: ds.Rate, Channels: ds.Tests[0].Channels, ChannelNames: ds.Tests[0].ChannelNames,
			Classes: ds.ClassList()}
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

// windowEvent is a run of consecutive kept windows (each one hop after
// the last) that a posterior gives one class: an event of the recording.
type windowEvent struct {
	Posterior, Label string
	Class            string
	First, Last      int     // the windows (records of the split)
	Start, End       float64 // s from the time origin: the first window's start, the last's end
	Probability, MI  float64 // means over the windows
	TopChannel       string  // the channel of most relevance over the event's windows ("" with one channel)
	TopShare         float64 // its share of the relevance
	OOD              int     // windows flagged out of distribution
}

// events merges each posterior's windows into events: consecutive kept
// windows (the next one hop after, the hop the smallest step between
// kept windows' starts) of one class. Times are seconds from the trigger
// when the file gives one (origin "trigger"), else from the first sample
// ("first sample"). share, if not nil, gives a window's per-channel share
// of relevance (the first explainer's mean map): an event's top channel
// is the one of largest mean share over its windows.
func (t *windowTable) events(ds Datasets, share func(post string, window int) ([]float64, bool)) (evs []windowEvent, origin string) {
	origin, t0 := "first sample", 0.0
	if !math.IsNaN(ds.Trigger) {
		origin, t0 = "trigger", ds.Trigger
	}
	if len(t.rows) == 0 || len(ds.Windows) == 0 || ds.Rate <= 0 || len(ds.Tests) == 0 {
		return nil, origin
	}
	hop := 0
	for i := 1; i < len(ds.Windows); i++ {
		if d := ds.Windows[i].Start - ds.Windows[i-1].Start; d > 0 && (hop == 0 || d < hop) {
			hop = d
		}
	}
	C := max(ds.Tests[0].NumChannels(), 1)
	length := float64(ds.Tests[0].Data.Len/C) / ds.Rate // a window's duration, s
	names := ds.Tests[0].ChannelLabels()
	var cur *windowEvent
	var n int
	var shares []float64
	flush := func() {
		if cur == nil {
			return
		}
		cur.Probability /= float64(n)
		cur.MI /= float64(n)
		if len(shares) > 0 {
			best := 0
			for c, v := range shares {
				if v > shares[best] {
					best = c
				}
			}
			if best < len(names) {
				cur.TopChannel, cur.TopShare = names[best], shares[best]/float64(n)
			}
		}
		evs = append(evs, *cur)
		cur, shares = nil, nil
	}
	for _, r := range t.rows {
		if r.Window < 0 || r.Window >= len(ds.Windows) {
			continue
		}
		w := ds.Windows[r.Window]
		next := cur != nil && cur.Posterior == r.Posterior && cur.Class == r.Class && r.Window == cur.Last+1 && w.Start-ds.Windows[cur.Last].Start == hop
		if !next {
			flush()
			cur = &windowEvent{Posterior: r.Posterior, Label: r.Label, Class: r.Class, First: r.Window, Start: w.SourceTime - t0}
			n = 0
		}
		cur.Last, cur.End = r.Window, w.SourceTime+length-t0
		cur.Probability += r.Probability
		cur.MI += r.MutualInfo
		if r.OOD {
			cur.OOD++
		}
		n++
		if share != nil {
			if sh, ok := share(r.Label, r.Window); ok {
				if shares == nil {
					shares = make([]float64, len(sh))
				}
				for c := range min(len(sh), len(shares)) {
					shares[c] += sh[c]
				}
			}
		}
	}
	flush()
	return evs, origin
}

// reportEvents are the events as report.html's table shows them.
func reportEvents(evs []windowEvent, origin string) []report.Event {
	out := make([]report.Event, len(evs))
	for i, e := range evs {
		out[i] = report.Event{Posterior: e.Label, Class: e.Class, First: e.First, Last: e.Last, StartMS: 1e3 * e.Start, EndMS: 1e3 * e.End, Origin: origin,
			Probability: e.Probability, MI: e.MI, TopChannel: e.TopChannel, TopShare: e.TopShare, OOD: e.OOD}
	}
	return out
}

// oodOf is the reason window i of posterior label post is out of
// distribution ("" when it is not, or not checked).
func (t *windowTable) oodOf(post string, i int) string {
	for _, r := range t.rows {
		if r.Label == post && r.Window == i && r.OOD {
			return r.OODReason
		}
	}
	return ""
}

// eventsCSV is events.csv: a header and one line an event, in the order
// of the rows (posterior, then time). start_ms and end_ms are from the
// origin the column time_origin names; top_channel is empty with one
// channel.
func eventsCSV(evs []windowEvent, origin, explainer string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	_ = w.Write([]string{"posterior", "posterior_label", "event", "class", "first_window", "last_window", "windows", "start_ms", "end_ms", "time_origin",
		"mean_probability", "mean_mutual_information", "top_channel", "top_channel_share", "relevance_explainer", "ood_windows"})
	k := 0
	for i, e := range evs {
		if i > 0 && evs[i-1].Posterior != e.Posterior {
			k = 0
		}
		top, sh := "", ""
		if e.TopChannel != "" {
			top, sh = e.TopChannel, f(e.TopShare)
		}
		_ = w.Write([]string{e.Posterior, e.Label, strconv.Itoa(k), e.Class, strconv.Itoa(e.First), strconv.Itoa(e.Last), strconv.Itoa(e.Last - e.First + 1),
			strconv.FormatFloat(1e3*e.Start, 'f', 3, 64), strconv.FormatFloat(1e3*e.End, 'f', 3, 64), origin, f(e.Probability), f(e.MI), top, sh, explainer, strconv.Itoa(e.OOD)})
		k++
	}
	w.Flush()
	return b.Bytes(), w.Error()
}
