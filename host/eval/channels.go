package eval

import (
	"fmt"
	"math"
)

// This file holds the channel view of the localisation metrics (issue 22):
// a map r and a mask m of a record of C channels are C x T values,
// channel-major, r[c,t] = r[c*T+t]. RMA and IoU of the whole C x T map
// against the whole mask are those of metrics.go; here are
//
//	RMA_c, IoU_c = RMA, IoU of row c of r against row c of m      (per channel)
//	D            = {c : m[c,t] for some t}                         (disturbed channels)
//	PL           = sum_{c in D} sum_t r[c,t] / sum_{c,t} r[c,t]    (phase localisation)
//	top          = argmax_c sum_t r[c,t]  (ties: the lower c)      (top channel)
//	hit          = [top in D]                                      (top-channel accuracy)
//	chance       = |D| / C                                         (PL of a uniform map)
//
// PL is RMA with the mask widened to whole channels: how much relevance
// falls on the channels (phases) the disturbance is on, wherever in time.
// A map spread uniformly has PL = chance, so PL above chance is a map that
// finds the disturbed channels. As RMA, these take nonnegative maps (the
// engine applies Abs first when told to).

// channelLen returns T = len(r)/C, panicking on a programmer error: C < 1
// or len(r) not a multiple of C.
func channelLen(fn string, n, C int) int {
	if C < 1 {
		panic(fmt.Sprintf("eval: %s: C = %d channels, want at least 1", fn, C))
	}
	if n%C != 0 {
		panic(fmt.Sprintf("eval: %s: %d values are not %d channels of equal length", fn, n, C))
	}
	return n / C
}

// ChannelMass sets dst[c] to the relevance mass of channel c of the
// nonnegative C x T map r (channel-major),
//
//	dst[c] = sum_{t=0..T-1} r[c*T+t],
//
// and returns dst. dst is nil (allocated) or of length C. It panics if
// len(r) is not a multiple of C, C < 1, or r holds a negative value.
func ChannelMass(dst, r []float64, C int) []float64 {
	T := channelLen("ChannelMass", len(r), C)
	if dst == nil {
		dst = make([]float64, C)
	}
	if len(dst) != C {
		panic(fmt.Sprintf("eval: ChannelMass: len(dst) = %d, want C = %d", len(dst), C))
	}
	for c := range C {
		s := 0.0
		for t, v := range r[c*T : (c+1)*T] {
			if v < 0 {
				panic(fmt.Sprintf("eval: ChannelMass: r[%d] = %v is negative; apply Abs to a signed map", c*T+t, v))
			}
			s += v
		}
		dst[c] = s
	}
	return dst
}

// Disturbed sets dst[c] to whether channel c of the C x T mask holds a
// true value, c in D, and returns dst and |D|. dst is nil (allocated) or
// of length C. It panics if len(mask) is not a multiple of C or C < 1.
func Disturbed(dst, mask []bool, C int) ([]bool, int) {
	T := channelLen("Disturbed", len(mask), C)
	if dst == nil {
		dst = make([]bool, C)
	}
	if len(dst) != C {
		panic(fmt.Sprintf("eval: Disturbed: len(dst) = %d, want C = %d", len(dst), C))
	}
	n := 0
	for c := range C {
		dst[c] = false
		for _, m := range mask[c*T : (c+1)*T] {
			if m {
				dst[c] = true
				n++
				break
			}
		}
	}
	return dst, n
}

// PhaseLocalisation returns the share of the relevance mass of the
// nonnegative C x T map r that falls on the disturbed channels D of mask:
//
//	PL = sum_{c in D} sum_t r[c*T+t] / sum_{c,t} r[c*T+t]  in [0, 1].
//
// ok is false, and the value 0, when PL is undefined: D is empty, the mass
// is 0, or it is not finite. With C = 1, PL is 1 for any scorable map. It
// panics on mismatched lengths, C < 1, a length not a multiple of C, or a
// negative value. It allocates nothing.
func PhaseLocalisation(r []float64, mask []bool, C int) (pl float64, ok bool) {
	if len(r) != len(mask) {
		panic(fmt.Sprintf("eval: PhaseLocalisation: len(r) = %d, len(mask) = %d", len(r), len(mask)))
	}
	T := channelLen("PhaseLocalisation", len(r), C)
	var in, all float64
	anyD := false
	for c := range C {
		s, d := 0.0, false
		for t, v := range r[c*T : (c+1)*T] {
			if v < 0 {
				panic(fmt.Sprintf("eval: PhaseLocalisation: r[%d] = %v is negative; apply Abs to a signed map", c*T+t, v))
			}
			s += v
			d = d || mask[c*T+t]
		}
		all += s
		if d {
			in += s
			anyD = true
		}
	}
	if !anyD || all == 0 || math.IsNaN(all) || math.IsInf(all, 0) {
		return 0, false
	}
	return min(in/all, 1), true
}

// TopChannel returns the channel of the nonnegative C x T map r with the
// largest relevance mass,
//
//	top = argmax_c sum_t r[c*T+t],
//
// ties going to the lower channel. ok is false, and top 0, when the total
// mass is 0 (every channel ties) or not finite. It panics like
// ChannelMass; it allocates nothing.
func TopChannel(r []float64, C int) (top int, ok bool) {
	T := channelLen("TopChannel", len(r), C)
	best, all := math.Inf(-1), 0.0
	for c := range C {
		s := 0.0
		for t, v := range r[c*T : (c+1)*T] {
			if v < 0 {
				panic(fmt.Sprintf("eval: TopChannel: r[%d] = %v is negative; apply Abs to a signed map", c*T+t, v))
			}
			s += v
		}
		all += s
		if s > best {
			best, top = s, c
		}
	}
	if all == 0 || math.IsNaN(all) || math.IsInf(all, 0) {
		return 0, false
	}
	return top, true
}

// ChannelScore is the localisation of one channel of a record: RMA and
// IoU of its row of the map against its row of the mask.
type ChannelScore struct {
	RMA float64 `json:"rma"`
	IoU float64 `json:"iou"`
	// Why is Scored, or why the channel is not scored: EmptyMask (its
	// mask row is empty: a channel the disturbance is not on), ZeroMass
	// (its row of the map is 0) or NonFinite.
	Why Skip `json:"why"`
}

// LocaliseChannels sets dst[c] to the localisation of channel c of the
// nonnegative C x T map r against the C x T mask (channel-major): with
// r_c = r[c*T : (c+1)*T] and m_c likewise,
//
//	dst[c].RMA, dst[c].IoU, dst[c].Why = Localise(r_c, m_c),
//
// so IoU_c binarises row c by its own L_c = |m_c| largest values. It
// returns dst, nil (allocated) or of length C. It panics on mismatched
// lengths, C < 1, a length not a multiple of C, or a negative value.
func LocaliseChannels(dst []ChannelScore, r []float64, mask []bool, C int) []ChannelScore {
	if len(r) != len(mask) {
		panic(fmt.Sprintf("eval: LocaliseChannels: len(r) = %d, len(mask) = %d", len(r), len(mask)))
	}
	T := channelLen("LocaliseChannels", len(r), C)
	if dst == nil {
		dst = make([]ChannelScore, C)
	}
	if len(dst) != C {
		panic(fmt.Sprintf("eval: LocaliseChannels: len(dst) = %d, want C = %d", len(dst), C))
	}
	for c := range C {
		rc, mc := r[c*T:(c+1)*T], mask[c*T:(c+1)*T]
		for t, v := range rc {
			if v < 0 {
				panic(fmt.Sprintf("eval: LocaliseChannels: r[%d] = %v is negative; apply Abs to a signed map", c*T+t, v))
			}
		}
		rma, iou, why := Localise(rc, mc)
		dst[c] = ChannelScore{RMA: rma, IoU: iou, Why: why}
	}
	return dst
}

// Channels is the channel view of one record's localisation.
type Channels struct {
	// PL is the phase localisation, Top the top channel, Hit whether it is
	// disturbed, Chance = |D|/C; all are defined only when Why = Scored.
	PL     float64 `json:"pl"`
	Top    int     `json:"top"`
	Hit    bool    `json:"hit"`
	Chance float64 `json:"chance"`
	// Why is Scored, or why the record is not: EmptyMask (D is empty),
	// ZeroMass or NonFinite (of the whole map), as Localise of the whole
	// C x T map says.
	Why Skip `json:"why"`
	// Channel holds the per-channel RMA and IoU, one a channel.
	Channel []ChannelScore `json:"channel"`
}

// ScoreChannels returns the channel view of the nonnegative C x T map r
// against mask: PL (PhaseLocalisation), the top channel (TopChannel) and
// whether it is in D, chance = |D|/C, and the per-channel scores
// (LocaliseChannels) in dst, nil (allocated) or of length C. When the
// record is not scored (Why != Scored) PL, Top, Hit and Chance are zero;
// the per-channel scores are filled in any case. It panics like
// LocaliseChannels.
func ScoreChannels(dst []ChannelScore, r []float64, mask []bool, C int) Channels {
	out := Channels{Channel: LocaliseChannels(dst, r, mask, C)}
	T := len(r) / C
	var mass float64
	for _, v := range r {
		mass += v
	}
	nd := 0
	for c := range C {
		for _, m := range mask[c*T : (c+1)*T] {
			if m {
				nd++
				break
			}
		}
	}
	switch {
	case nd == 0:
		out.Why = EmptyMask
		return out
	case math.IsNaN(mass) || math.IsInf(mass, 0):
		out.Why = NonFinite
		return out
	case mass == 0:
		out.Why = ZeroMass
		return out
	}
	out.PL, _ = PhaseLocalisation(r, mask, C)
	out.Top, _ = TopChannel(r, C)
	out.Hit = false
	for _, m := range mask[out.Top*T : (out.Top+1)*T] {
		if m {
			out.Hit = true
			break
		}
	}
	out.Chance = float64(nd) / float64(C)
	return out
}

// ChannelRecord is the channel view of one record, for AggregateChannels.
type ChannelRecord struct {
	Split int // test split, 0 <= Split < nsplits
	Class int // true class label
	Ch    Channels
}

// ChannelStats are the channel metrics of one class or group across the
// splits, each a mean ± sd over the splits of its per-split means.
type ChannelStats struct {
	// PL, TopAcc (the share of records whose top channel is disturbed)
	// and Chance (the mean |D|/C) are over the scored records (Why =
	// Scored), Scored of them over all splits.
	PL     Stat `json:"pl"`
	TopAcc Stat `json:"top_channel_accuracy"`
	Chance Stat `json:"chance"`
	Scored int  `json:"scored"`
	// RMA[c] and IoU[c] are over the records whose channel c is scored
	// (its mask row is not empty), ChannelScored[c] of them.
	RMA           []Stat `json:"rma"`
	IoU           []Stat `json:"iou"`
	ChannelScored []int  `json:"channel_scored"`
}

// ChannelClass is one class's channel metrics.
type ChannelClass struct {
	Class int `json:"class"`
	ChannelStats
}

// ChannelGroup is one group's channel metrics: per split, the macro mean
// over the group's classes with data in that split, then mean ± sd over
// the splits, as Aggregate does for RMA and IoU.
type ChannelGroup struct {
	Name    string `json:"name"`
	Classes []int  `json:"classes"`
	ChannelStats
}

// ChannelAgg is the channel view of a set of records over test splits.
type ChannelAgg struct {
	Names   []string       `json:"channels"` // one a channel
	Classes []ChannelClass `json:"classes"`  // in the order of the classes argument
	Groups  []ChannelGroup `json:"groups"`   // sorted by name
}

// Class returns the channel metrics of class c.
func (a *ChannelAgg) Class(c int) (ChannelClass, bool) {
	for _, ca := range a.Classes {
		if ca.Class == c {
			return ca, true
		}
	}
	return ChannelClass{}, false
}

// Group returns the channel metrics of the group named name.
func (a *ChannelAgg) Group(name string) (ChannelGroup, bool) {
	for _, g := range a.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return ChannelGroup{}, false
}

// AggregateChannels aggregates the channel view of records as Aggregate
// aggregates RMA and IoU, metric by metric: for each metric x among PL,
// hit (1 or 0), chance, and RMA_c and IoU_c of every channel c,
//
//  1. per split s and class k, the mean over the records where x is
//     defined, x_{s,k} = (1/n_{s,k}) sum_i x_i (PL, hit and chance are
//     defined on the scored records, RMA_c and IoU_c on the records whose
//     channel c is scored);
//  2. per split and group G, the macro mean over the classes of G with
//     data, (1/|G_s|) sum_{k in G_s} x_{s,k};
//  3. mean ± sample sd across the splits with data.
//
// names are the channel names (C = len(names) >= 1); classes, groups and
// nsplits are as Aggregate's. A cell without data is left out, never NaN
// (Stat.N says how many splits a statistic is over).
//
// Errors: those of Aggregate's arguments, and a record with a split or
// class out of range, per-channel scores of another length than C, or a
// defined value outside [0, 1] (NaN included). They name the record.
func AggregateChannels(recs []ChannelRecord, names []string, classes []int, groups map[string][]int, nsplits int) (ChannelAgg, error) {
	C := len(names)
	if C < 1 {
		return ChannelAgg{}, fmt.Errorf("eval: aggregate channels: no channel names")
	}
	if nsplits < 1 {
		return ChannelAgg{}, fmt.Errorf("eval: aggregate channels: nsplits = %d, want at least 1", nsplits)
	}
	pos, gnames, err := checkClasses("aggregate channels", classes, groups)
	if err != nil {
		return ChannelAgg{}, err
	}
	// Metrics: 0 PL, 1 hit, 2 chance, 3+c RMA_c, 3+C+c IoU_c.
	nm, nc := 3+2*C, len(classes)
	sum := make([]float64, nsplits*nc*nm)
	cnt := make([]int, nsplits*nc*nm)
	add := func(i, m int, v float64, what string, r ChannelRecord) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("eval: aggregate channels: record %d (split %d, class %d): %s = %v, want it in [0, 1]", i, r.Split, r.Class, what, v)
		}
		k := ((r.Split*nc)+pos[r.Class])*nm + m
		sum[k] += v
		cnt[k]++
		return nil
	}
	for i, r := range recs {
		if r.Split < 0 || r.Split >= nsplits {
			return ChannelAgg{}, fmt.Errorf("eval: aggregate channels: record %d: split %d out of [0, %d)", i, r.Split, nsplits)
		}
		if _, ok := pos[r.Class]; !ok {
			return ChannelAgg{}, fmt.Errorf("eval: aggregate channels: record %d (split %d): class %d is not one of the classes %v", i, r.Split, r.Class, classes)
		}
		if len(r.Ch.Channel) != C {
			return ChannelAgg{}, fmt.Errorf("eval: aggregate channels: record %d (split %d, class %d): %d per-channel scores, want %d (channels %v)", i, r.Split, r.Class, len(r.Ch.Channel), C, names)
		}
		if r.Ch.Why == Scored {
			hit := 0.0
			if r.Ch.Hit {
				hit = 1
			}
			for _, x := range []struct {
				m    int
				v    float64
				what string
			}{{0, r.Ch.PL, "PL"}, {1, hit, "hit"}, {2, r.Ch.Chance, "chance"}} {
				if err := add(i, x.m, x.v, x.what, r); err != nil {
					return ChannelAgg{}, err
				}
			}
		}
		for c, cs := range r.Ch.Channel {
			if cs.Why != Scored {
				continue
			}
			if err := add(i, 3+c, cs.RMA, "RMA of channel "+names[c], r); err != nil {
				return ChannelAgg{}, err
			}
			if err := add(i, 3+C+c, cs.IoU, "IoU of channel "+names[c], r); err != nil {
				return ChannelAgg{}, err
			}
		}
	}

	// cell returns the mean of metric m of class index ci in split s.
	cell := func(s, ci, m int) (float64, bool) {
		k := (s*nc+ci)*nm + m
		if cnt[k] == 0 {
			return 0, false
		}
		return sum[k] / float64(cnt[k]), true
	}
	// stats fills the statistics of the classes cis (one class, or a
	// group's macro) over the splits.
	stats := func(cis []int) ChannelStats {
		st := make([]Stat, nm)
		n := make([]int, nm)
		xs := make([]float64, 0, nsplits)
		for m := range nm {
			xs = xs[:0]
			for s := range nsplits {
				macro, k := 0.0, 0
				for _, ci := range cis {
					if v, ok := cell(s, ci, m); ok {
						macro += v
						k++
					}
					n[m] += cnt[(s*nc+ci)*nm+m]
				}
				if k > 0 {
					xs = append(xs, macro/float64(k))
				}
			}
			st[m] = StatOf(xs)
		}
		cs := ChannelStats{PL: st[0], TopAcc: st[1], Chance: st[2], Scored: n[0],
			RMA: st[3 : 3+C], IoU: st[3+C : 3+2*C], ChannelScored: n[3 : 3+C]}
		return cs
	}

	a := ChannelAgg{Names: append([]string(nil), names...), Classes: make([]ChannelClass, nc), Groups: []ChannelGroup{}}
	for ci, c := range classes {
		a.Classes[ci] = ChannelClass{Class: c, ChannelStats: stats([]int{ci})}
	}
	for _, name := range gnames {
		cis := make([]int, len(groups[name]))
		for j, c := range groups[name] {
			cis[j] = pos[c]
		}
		a.Groups = append(a.Groups, ChannelGroup{Name: name, Classes: append([]int(nil), groups[name]...), ChannelStats: stats(cis)})
	}
	return a, nil
}
