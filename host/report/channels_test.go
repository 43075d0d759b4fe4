package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
)

// channelResults is a run of two rows over one split of C = 3 channels
// named A, B, C: class 1 disturbed on A, class 2 on A and C.
func channelResults(t *testing.T) *engine.Results {
	t.Helper()
	names := []string{"A", "B", "C"}
	mk := func(split, class int, r []float64, mask []bool) engine.Record {
		ch := eval.ScoreChannels(nil, r, mask, 3)
		rma, iou, why := eval.Localise(r, mask)
		return engine.Record{Split: split, Label: class, MaskLen: engine.MaskLen(mask), RMA: rma, IoU: iou, OK: why == eval.Scored, Why: why, Channels: &ch}
	}
	m1 := []bool{true, true, false, false, false, false}
	m2 := []bool{false, true, false, false, true, false}
	var res engine.Results
	for i, label := range []string{"Det", "Ens"} {
		w := float64(i + 1)
		recs := []engine.Record{
			mk(0, 1, []float64{w, 1, 1, 1, 0, 0}, m1),
			mk(0, 2, []float64{1, 2, w, 0, 3, 0}, m2),
			mk(1, 1, []float64{1, 0, 0, w, 1, 1}, m1),
			mk(1, 2, []float64{0, 1, 0, 0, w, 1}, m2),
		}
		var crs []eval.ChannelRecord
		for _, r := range recs {
			crs = append(crs, eval.ChannelRecord{Split: r.Split, Class: r.Label, Ch: *r.Channels})
		}
		a, err := eval.AggregateChannels(crs, names, []int{1, 2}, map[string][]int{"all": {1, 2}}, 2)
		if err != nil {
			t.Fatal(err)
		}
		res.Rows = append(res.Rows, engine.Row{Posterior: "posterior." + label, Explainer: "explainer.x", Summary: "summary.mean", Label: label,
			ExplainerLabel: "x", SummaryLabel: "mean", Records: recs, Channels: &a})
	}
	return &res
}

func TestChannelTables(t *testing.T) {
	res := channelResults(t)
	ts := ChannelTables(res)
	if len(ts) != 2 {
		t.Fatalf("%d tables, want 2", len(ts))
	}
	pl, per := ts[0], ts[1]
	if !strings.HasPrefix(pl.Title, ChannelTitle) || !strings.HasPrefix(per.Title, ChannelTitle) {
		t.Errorf("titles %q, %q", pl.Title, per.Title)
	}
	// The chance level depends on the masks only: one column.
	if want := []string{"Class", "Chance |D|/C", "Det PL", "Det top-channel acc.", "Ens PL", "Ens top-channel acc."}; !slices.Equal(pl.Header, want) {
		t.Errorf("header %q, want %q", pl.Header, want)
	}
	if len(pl.Rows) != 3 || pl.Rows[2][0] != "macro: all" {
		t.Fatalf("rows %q, want classes 1, 2 and the macro of all", pl.Rows)
	}
	for i, r := range res.Rows {
		for k, c := range []int{1, 2} {
			ca, _ := r.Channels.Class(c)
			row := pl.Rows[k]
			if row[0] != data.ClassName(c) || row[1] != PM(ca.Chance) || row[2+2*i] != PM(ca.PL) || row[3+2*i] != PM(ca.TopAcc) {
				t.Errorf("row %q: class %d of %s: chance %v PL %v top %v", row, c, r.Label, ca.Chance, ca.PL, ca.TopAcc)
			}
		}
	}
	// One row a (class, method), the channels as columns; class 2's
	// channel B is never disturbed.
	if len(per.Rows) != 4 || !slices.Equal(per.Header, []string{"Class", "Method", "A RMA", "A IoU", "B RMA", "B IoU", "C RMA", "C IoU"}) {
		t.Fatalf("per-channel table %q / %q", per.Header, per.Rows)
	}
	for k, row := range per.Rows {
		class := []int{1, 2}[k/2]
		r := res.Rows[k%2]
		if row[0] != data.ClassName(class) || row[1] != RowLabel(res, r) {
			t.Errorf("row %d %q: want class %d under %s", k, row, class, r.Label)
		}
		ca, _ := r.Channels.Class(class)
		for c := range 3 {
			if row[2+2*c] != PM(ca.RMA[c]) || row[3+2*c] != PM(ca.IoU[c]) {
				t.Errorf("row %q: channel %d RMA %v IoU %v", row, c, ca.RMA[c], ca.IoU[c])
			}
		}
		if class == 2 && row[4] != "n/a" {
			t.Errorf("class 2 channel B (never disturbed): %q, want n/a", row)
		}
	}
	md, err := Markdown("x", nil, ts...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## "+ChannelTitle) {
		t.Errorf("Markdown lacks the section:\n%s", md)
	}

	// records.csv gains the channel columns; results.json the "channels" key.
	b, err := RecordsCSV(res, []string{"s0", "s1"})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := lines[0]
	if want := []string{"pl", "top_channel", "top_hit", "chance", "rma_A", "iou_A", "rma_B", "iou_B", "rma_C", "iou_C"}; !slices.Equal(head[15:], want) {
		t.Errorf("records.csv channel columns %q, want %q", head[15:], want)
	}
	rec := res.Rows[0].Records[1] // class 2, split 0: Det map 1 2 | 1 0 | 3 0
	ch := rec.Channels
	line := lines[2]
	if line[15] != strconvG(ch.PL) || line[16] != []string{"A", "B", "C"}[ch.Top] || line[18] != strconvG(ch.Chance) || line[21] != "" || line[22] != "" {
		t.Errorf("records.csv line %q for %+v (channel B not disturbed: empty cells)", line, *ch)
	}
	j, err := ResultsJSON("x", 1, res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"channels": [`) || !strings.Contains(string(j), `"top_channel_accuracy"`) {
		t.Errorf("results.json lacks the channel view")
	}
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }

// TestNoChannelTablesForOneChannel: without the channel view there is no
// section, no column and no key.
func TestNoChannelTablesForOneChannel(t *testing.T) {
	res := channelResults(t)
	for i := range res.Rows {
		res.Rows[i].Channels = nil
		for k := range res.Rows[i].Records {
			res.Rows[i].Records[k].Channels = nil
		}
	}
	if ts := ChannelTables(res); ts != nil {
		t.Errorf("one channel: %d channel tables", len(ts))
	}
	b, err := RecordsCSV(res, []string{"s0", "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if head := strings.SplitN(string(b), "\n", 2)[0]; head != "row,posterior,explainer,summary,split,record,label,class,target,predicted,mask_len,scored,why,rma,iou" {
		t.Errorf("one channel: header %q", head)
	}
	j, err := ResultsJSON("x", 1, res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(j), `"channels"`) {
		t.Errorf("one channel: results.json has a channels key")
	}
}
