package report

import (
	"strconv"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
)

// This file holds the per-channel view of a run whose inputs have C > 1
// channels (issue 22): the tables of the section "Per-channel
// localisation" and the columns records.csv gains. A one-channel run has
// none of them, so its tables and files keep their bytes.

// ChannelTitle starts the titles of the per-channel tables.
const ChannelTitle = "Per-channel localisation"

// hasChannels reports whether the run's rows carry the channel view
// (engine.Row.Channels: test splits of C > 1 channels).
func hasChannels(res *engine.Results) bool {
	for _, r := range res.Rows {
		if r.Channels != nil {
			return true
		}
	}
	return false
}

// channelNames is the channel names of the run's first row with the
// channel view (the engine gives every row of a run the same).
func channelNames(res *engine.Results) []string {
	for _, r := range res.Rows {
		if r.Channels != nil {
			return r.Channels.Names
		}
	}
	return nil
}

// ChannelTables are the tables of the section "Per-channel localisation",
// none when the run's splits have one channel:
//
//   - phase localisation PL (the share of |R| on the disturbed channels),
//     its chance level |D|/C (the PL of a uniform map) and the top-channel
//     accuracy (the channel of largest mass is disturbed), a row a class
//     and a row a group's macro mean, columns a result row's;
//   - RMA and IoU of every channel against its own mask row, a row a
//     (class, channel), over the records whose channel is disturbed.
//
// Cells are mean ± sd over the test splits ("n/a": no split had data).
func ChannelTables(res *engine.Results) []Table {
	if !hasChannels(res) {
		return nil
	}
	var ref *eval.ChannelAgg // the rows and their order
	for _, r := range res.Rows {
		if r.Channels != nil {
			ref = r.Channels
			break
		}
	}
	agg := func(r engine.Row) *eval.ChannelAgg {
		if r.Channels == nil {
			return &eval.ChannelAgg{}
		}
		return r.Channels
	}

	// Chance depends only on the masks of the scored records: one column
	// when every result row has the same, else one a row.
	oneChance := true
	for _, r := range res.Rows {
		a := agg(r)
		for i, ca := range ref.Classes {
			c, _ := a.Class(ca.Class)
			if c.Chance != ref.Classes[i].Chance {
				oneChance = false
			}
		}
	}
	pl := Table{Title: ChannelTitle + ": phase localisation PL, its chance level |D|/C and the top-channel accuracy (mean ± sd over test splits)",
		Header: []string{"Class"}}
	if oneChance {
		pl.Header = append(pl.Header, "Chance |D|/C")
	}
	for _, r := range res.Rows {
		l := RowLabel(res, r)
		pl.Header = append(pl.Header, l+" PL")
		if !oneChance {
			pl.Header = append(pl.Header, l+" chance")
		}
		pl.Header = append(pl.Header, l+" top-channel acc.")
	}
	line := func(name string, first eval.ChannelStats, stats func(a *eval.ChannelAgg) eval.ChannelStats) []string {
		row := []string{name}
		if oneChance {
			row = append(row, PM(first.Chance))
		}
		for _, r := range res.Rows {
			s := stats(agg(r))
			row = append(row, PM(s.PL))
			if !oneChance {
				row = append(row, PM(s.Chance))
			}
			row = append(row, PM(s.TopAcc))
		}
		return row
	}
	for _, ca := range ref.Classes {
		pl.Rows = append(pl.Rows, line(ClassName(res.ClassNames, ca.Class), ca.ChannelStats, func(a *eval.ChannelAgg) eval.ChannelStats {
			c, _ := a.Class(ca.Class)
			return c.ChannelStats
		}))
	}
	for _, g := range ref.Groups {
		pl.Rows = append(pl.Rows, line("macro: "+g.Name, g.ChannelStats, func(a *eval.ChannelAgg) eval.ChannelStats {
			x, _ := a.Group(g.Name)
			return x.ChannelStats
		}))
	}

	// a row a (class, method), a pair of columns a channel: three phases
	// make eight columns, whatever the number of methods
	per := Table{Title: ChannelTitle + ": RMA and IoU of each channel against its own mask row (mean ± sd over test splits)",
		Header: []string{"Class", "Method"}}
	for _, name := range ref.Names {
		per.Header = append(per.Header, name+" RMA", name+" IoU")
	}
	for _, ca := range ref.Classes {
		for _, r := range res.Rows {
			row := []string{ClassName(res.ClassNames, ca.Class), RowLabel(res, r)}
			x, _ := agg(r).Class(ca.Class)
			for c := range ref.Names {
				if c < len(x.RMA) {
					row = append(row, PM(x.RMA[c]), PM(x.IoU[c]))
				} else {
					row = append(row, "n/a", "n/a")
				}
			}
			per.Rows = append(per.Rows, row)
		}
	}
	return []Table{pl, per}
}

// channelHeader is the columns records.csv gains for C > 1 channels:
// pl, top_channel, top_hit, chance, then rma_<name> and iou_<name> for
// every channel.
func channelHeader(names []string) []string {
	h := []string{"pl", "top_channel", "top_hit", "chance"}
	for _, n := range names {
		h = append(h, "rma_"+n, "iou_"+n)
	}
	return h
}

// channelCells is a record's values of channelHeader: empty cells where a
// value is undefined (a record or a channel not scored).
func channelCells(rec engine.Record, names []string, f func(float64) string) []string {
	cells := make([]string, 4+2*len(names))
	ch := rec.Channels
	if ch == nil {
		return cells
	}
	if ch.Why == eval.Scored {
		top := strconv.Itoa(ch.Top)
		if ch.Top < len(names) {
			top = names[ch.Top]
		}
		cells[0], cells[1], cells[2], cells[3] = f(ch.PL), top, strconv.FormatBool(ch.Hit), f(ch.Chance)
	}
	for c, cs := range ch.Channel {
		if c < len(names) && cs.Why == eval.Scored {
			cells[4+2*c], cells[5+2*c] = f(cs.RMA), f(cs.IoU)
		}
	}
	return cells
}
