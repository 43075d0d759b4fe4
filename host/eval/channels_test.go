package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// rows builds a C x T channel-major map from its rows.
func rows(rs ...[]float64) []float64 { return slices.Concat(rs...) }

// maskRows builds a C x T mask: row c true on [lo[c], hi[c]) (lo = hi:
// an empty row).
func maskRows(T int, spans ...[2]int) []bool {
	m := make([]bool, T*len(spans))
	for c, s := range spans {
		for t := s[0]; t < s[1]; t++ {
			m[c*T+t] = true
		}
	}
	return m
}

func constRow(T int, v float64) []float64 {
	r := make([]float64, T)
	for i := range r {
		r[i] = v
	}
	return r
}

func TestPhaseLocalisationClosedForms(t *testing.T) {
	const T = 16
	// Channels 0 and 2 disturbed, channel 1 not.
	mask := maskRows(T, [2]int{3, 9}, [2]int{0, 0}, [2]int{10, 12})
	zero := make([]float64, T)
	rnd := rand.New(rand.NewPCG(3, 4))
	noise := func() []float64 {
		r := make([]float64, T)
		for i := range r {
			r[i] = rnd.Float64() + 0.01
		}
		return r
	}

	// All the mass on a disturbed channel, anywhere in time: PL = 1, hit.
	for _, c := range []int{0, 2} {
		rs := [][]float64{zero, zero, zero}
		rs[c] = noise()
		r := rows(rs...)
		if pl, ok := PhaseLocalisation(r, mask, 3); !ok || pl != 1 {
			t.Errorf("mass on disturbed channel %d: PL = %v, %v; want 1", c, pl, ok)
		}
		ch := ScoreChannels(nil, r, mask, 3)
		if ch.Why != Scored || ch.Top != c || !ch.Hit || ch.PL != 1 {
			t.Errorf("mass on disturbed channel %d: %+v; want top %d, hit, PL 1", c, ch, c)
		}
	}
	// All the mass on the undisturbed channel: PL = 0, a miss.
	r := rows(zero, noise(), zero)
	if pl, ok := PhaseLocalisation(r, mask, 3); !ok || pl != 0 {
		t.Errorf("mass on the undisturbed channel: PL = %v, %v; want 0", pl, ok)
	}
	if ch := ScoreChannels(nil, r, mask, 3); ch.Top != 1 || ch.Hit {
		t.Errorf("mass on the undisturbed channel: top %d hit %v; want 1, false", ch.Top, ch.Hit)
	}

	// A uniform map: PL = chance = |D|/C, for every D.
	for _, m := range [][]bool{mask, maskRows(T, [2]int{0, 1}, [2]int{0, 0}, [2]int{0, 0}), maskRows(T, [2]int{0, 1}, [2]int{5, 6}, [2]int{0, T})} {
		d, nd := Disturbed(nil, m, 3)
		u := rows(constRow(T, 0.3), constRow(T, 0.3), constRow(T, 0.3))
		ch := ScoreChannels(nil, u, m, 3)
		want := float64(nd) / 3
		if ch.Why != Scored || math.Abs(ch.PL-want) > 1e-15 || ch.Chance != want {
			t.Errorf("uniform map, |D| = %d: PL %v chance %v; want %v", nd, ch.PL, ch.Chance, want)
		}
		// Every channel ties: the top channel is channel 0.
		if ch.Top != 0 || ch.Hit != d[0] {
			t.Errorf("uniform map: top %d hit %v; want 0, %v", ch.Top, ch.Hit, d[0])
		}
	}

	// PL with masses a, b, c on the channels: (a + c) / (a + b + c).
	r = rows(constRow(T, 1), constRow(T, 2), constRow(T, 5))
	if pl, _ := PhaseLocalisation(r, mask, 3); math.Abs(pl-6.0/8) > 1e-15 {
		t.Errorf("masses 1, 2, 5: PL = %v, want 0.75", pl)
	}
	if top, _ := TopChannel(r, 3); top != 2 {
		t.Errorf("masses 1, 2, 5: top %d, want 2", top)
	}
	if m := ChannelMass(nil, r, 3); !slices.Equal(m, []float64{T, 2 * T, 5 * T}) {
		t.Errorf("ChannelMass = %v", m)
	}
}

func TestLocaliseChannelsClosedForms(t *testing.T) {
	const T = 12
	mask := maskRows(T, [2]int{2, 5}, [2]int{0, 0}, [2]int{7, 12})
	// Channel 0: its mask's indicator (RMA = IoU = 1); channel 1: noise,
	// empty mask row; channel 2: mass only outside its mask (RMA = IoU = 0).
	r0 := indicator(mask[:T])
	r1 := constRow(T, 0.5)
	r2 := make([]float64, T)
	for t := range 7 {
		r2[t] = float64(t + 1)
	}
	cs := LocaliseChannels(nil, rows(r0, r1, r2), mask, 3)
	want := []ChannelScore{{1, 1, Scored}, {0, 0, EmptyMask}, {0, 0, Scored}}
	if !slices.Equal(cs, want) {
		t.Errorf("LocaliseChannels = %+v, want %+v", cs, want)
	}
	// A zero row under a non-empty mask row: ZeroMass for that channel only.
	cs = LocaliseChannels(cs, rows(r0, r1, make([]float64, T)), mask, 3)
	if cs[2].Why != ZeroMass || cs[0].Why != Scored {
		t.Errorf("zero row 2: %+v", cs)
	}
	// The per-channel IoU binarises a row by its own L_c: a row whose top
	// 3 values are the mask's 3 samples scores 1 whatever the other rows.
	big := constRow(T, 100)
	cs = LocaliseChannels(nil, rows(rows(r0), big, big), mask, 3)
	if cs[0].IoU != 1 {
		t.Errorf("row 0 beside large rows: IoU %v, want 1", cs[0].IoU)
	}
}

// TestChannelsOneChannel: with C = 1 the per-channel scores are the
// whole map's and PL is 1.
func TestChannelsOneChannel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		N := 1 + rng.IntN(80)
		r := make([]float64, N)
		mask := make([]bool, N)
		for i := range r {
			r[i] = rng.Float64()
			mask[i] = rng.IntN(3) == 0
		}
		rma, iou, why := Localise(r, mask)
		ch := ScoreChannels(nil, r, mask, 1)
		if ch.Channel[0] != (ChannelScore{rma, iou, why}) {
			t.Fatalf("C = 1: channel 0 %+v, whole map %v %v %v", ch.Channel[0], rma, iou, why)
		}
		if ch.Why != why || (why == Scored && (ch.PL != 1 || !ch.Hit || ch.Chance != 1)) {
			t.Fatalf("C = 1: %+v, whole map why %v", ch, why)
		}
	}
}

// permuteRows returns x with its C rows of T values reordered: row c of
// the result is row perm[c] of x.
func permuteRows[E any](x []E, perm []int, T int) []E {
	out := make([]E, 0, len(x))
	for _, p := range perm {
		out = append(out, x[p*T:(p+1)*T]...)
	}
	return out
}

// TestChannelsPermutation: permuting the channels of map and mask
// together leaves PL, hit and chance unchanged and permutes the top
// channel and the per-channel scores; PL is at least the whole map's RMA
// (D's rows hold the mask).
func TestChannelsPermutation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		C, T := 2+rng.IntN(4), 1+rng.IntN(40)
		r := make([]float64, C*T)
		mask := make([]bool, C*T)
		for i := range r {
			r[i] = rng.ExpFloat64()
		}
		for c := range C {
			if rng.IntN(2) == 0 {
				lo := rng.IntN(T)
				hi := lo + 1 + rng.IntN(T-lo)
				for t := lo; t < hi; t++ {
					mask[c*T+t] = true
				}
			}
		}
		perm := rng.Perm(C)
		a := ScoreChannels(nil, r, mask, C)
		b := ScoreChannels(nil, permuteRows(r, perm, T), permuteRows(mask, perm, T), C)
		if a.Why != b.Why || a.Hit != b.Hit || a.Chance != b.Chance || math.Abs(a.PL-b.PL) > 1e-12 {
			t.Fatalf("trial %d: C=%d T=%d perm %v: %+v vs %+v", trial, C, T, perm, a, b)
		}
		if a.Why == Scored && perm[b.Top] != a.Top {
			t.Fatalf("trial %d: top %d, permuted top %d (perm %v)", trial, a.Top, b.Top, perm)
		}
		for c := range C {
			if b.Channel[c] != a.Channel[perm[c]] {
				t.Fatalf("trial %d: permuted channel %d %+v, want channel %d's %+v", trial, c, b.Channel[c], perm[c], a.Channel[perm[c]])
			}
		}
		if rma, ok := RMA(r, mask); ok && a.PL < rma-1e-12 {
			t.Fatalf("trial %d: PL %v < RMA %v", trial, a.PL, rma)
		}
	}
}

func TestChannelsUndefined(t *testing.T) {
	const T = 4
	mask := maskRows(T, [2]int{0, 2}, [2]int{0, 0})
	empty := maskRows(T, [2]int{0, 0}, [2]int{0, 0})
	ones := rows(constRow(T, 1), constRow(T, 1))
	for _, tc := range []struct {
		name string
		r    []float64
		mask []bool
		why  Skip
	}{
		{"empty mask", ones, empty, EmptyMask},
		{"zero map", make([]float64, 2*T), mask, ZeroMass},
		{"NaN", rows(constRow(T, 1), []float64{1, math.NaN(), 1, 1}), mask, NonFinite},
		{"Inf", rows(constRow(T, 1), []float64{1, math.Inf(1), 1, 1}), mask, NonFinite},
	} {
		ch := ScoreChannels(nil, tc.r, tc.mask, 2)
		if ch.Why != tc.why || ch.PL != 0 || ch.Top != 0 || ch.Hit || ch.Chance != 0 {
			t.Errorf("%s: %+v, want why %v and zero values", tc.name, ch, tc.why)
		}
		if _, ok := PhaseLocalisation(tc.r, tc.mask, 2); ok {
			t.Errorf("%s: PhaseLocalisation ok", tc.name)
		}
		if _, _, why := Localise(tc.r, tc.mask); why != ch.Why {
			t.Errorf("%s: why %v, Localise of the whole map %v", tc.name, ch.Why, why)
		}
	}
	if _, ok := TopChannel(make([]float64, 2*T), 2); ok {
		t.Error("TopChannel of a zero map ok")
	}
}

func TestChannelsPanics(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		fn         func()
	}{
		{"C 0", "C = 0", func() { PhaseLocalisation(make([]float64, 4), make([]bool, 4), 0) }},
		{"not a multiple", "not 3 channels", func() { TopChannel(make([]float64, 4), 3) }},
		{"lengths", "len(mask)", func() { LocaliseChannels(nil, make([]float64, 4), make([]bool, 2), 2) }},
		{"negative", "negative", func() { PhaseLocalisation([]float64{1, -1}, []bool{true, false}, 2) }},
		{"negative top", "negative", func() { TopChannel([]float64{1, -1}, 2) }},
		{"negative mass", "negative", func() { ChannelMass(nil, []float64{1, -1}, 2) }},
		{"negative row", "negative", func() { LocaliseChannels(nil, []float64{0, -1}, []bool{true, true}, 2) }},
		{"dst", "len(dst)", func() { ChannelMass(make([]float64, 1), make([]float64, 4), 2) }},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Errorf("%s: panic %v, want one saying %q", tc.name, r, tc.want)
				}
			}()
			tc.fn()
		}()
	}
}

func TestChannelsNoAllocation(t *testing.T) {
	const C, T = 3, 64
	r := make([]float64, C*T)
	for i := range r {
		r[i] = float64(i%7) + 1
	}
	mask := maskRows(T, [2]int{3, 9}, [2]int{0, 0}, [2]int{10, 30})
	dst := make([]ChannelScore, C)
	mass := make([]float64, C)
	d := make([]bool, C)
	if n := testing.AllocsPerRun(20, func() {
		PhaseLocalisation(r, mask, C)
		TopChannel(r, C)
		ScoreChannels(dst, r, mask, C)
		ChannelMass(mass, r, C)
		Disturbed(d, mask, C)
	}); n != 0 {
		t.Errorf("%v allocations a call with dst given", n)
	}
}

// chRec is a scored record of the channel view with PL pl, a hit or not,
// chance ch, and per-channel RMA = IoU = v (NaN: the channel not scored).
func chRec(split, class int, pl float64, hit bool, ch float64, v ...float64) ChannelRecord {
	r := ChannelRecord{Split: split, Class: class, Ch: Channels{PL: pl, Hit: hit, Chance: ch}}
	for _, x := range v {
		if math.IsNaN(x) {
			r.Ch.Channel = append(r.Ch.Channel, ChannelScore{Why: EmptyMask})
		} else {
			r.Ch.Channel = append(r.Ch.Channel, ChannelScore{RMA: x, IoU: x / 2})
		}
	}
	return r
}

func TestAggregateChannels(t *testing.T) {
	nan := math.NaN()
	recs := []ChannelRecord{
		// split 0, class 1: two records
		chRec(0, 1, 0.8, true, 1.0/3, 0.6, nan),
		chRec(0, 1, 0.4, false, 2.0/3, 0.2, 0.5),
		// split 1, class 1
		chRec(1, 1, 1.0, true, 1.0/3, 1.0, nan),
		// split 0, class 2; split 1, class 2 has no scored record
		chRec(0, 2, 0.3, true, 2.0/3, nan, 0.9),
		{Split: 1, Class: 2, Ch: Channels{Why: ZeroMass, Channel: []ChannelScore{{Why: ZeroMass}, {Why: EmptyMask}}}},
	}
	a, err := AggregateChannels(recs, []string{"A", "B"}, []int{1, 2}, map[string][]int{"all": {1, 2}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := a.Class(1)
	// class 1: split means PL 0.6 and 1.0 -> mean 0.8, sd sqrt(0.08).
	stat := func(xs ...float64) Stat { return StatOf(xs) }
	checks := []struct {
		name      string
		got, want Stat
	}{
		{"class 1 PL", c1.PL, stat(0.6, 1.0)},
		{"class 1 top accuracy", c1.TopAcc, stat(0.5, 1)},
		{"class 1 chance", c1.Chance, stat(0.5, 1.0/3)},
		{"class 1 RMA A", c1.RMA[0], stat(0.4, 1.0)},
		{"class 1 IoU A", c1.IoU[0], stat(0.2, 0.5)},
		{"class 1 RMA B", c1.RMA[1], stat(0.5)}, // split 1 has no scored channel B
	}
	c2, _ := a.Class(2)
	g, _ := a.Group("all")
	checks = append(checks, []struct {
		name      string
		got, want Stat
	}{
		{"class 2 PL", c2.PL, stat(0.3)},
		{"class 2 RMA A", c2.RMA[0], Stat{}},
		{"class 2 RMA B", c2.RMA[1], stat(0.9)},
		// all: split 0 macro of classes 1 and 2, split 1 class 1 alone.
		{"all PL", g.PL, stat((0.6+0.3)/2, 1.0)},
		{"all top accuracy", g.TopAcc, stat((0.5+1)/2, 1)},
		{"all RMA B", g.RMA[1], stat((0.5 + 0.9) / 2)},
	}...)
	for _, c := range checks {
		if c.got.N != c.want.N || math.Abs(c.got.Mean-c.want.Mean) > 1e-15 || math.Abs(c.got.SD-c.want.SD) > 1e-15 {
			t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if c1.Scored != 3 || c2.Scored != 1 || !slices.Equal(c1.ChannelScored, []int{3, 1}) || !slices.Equal(c2.ChannelScored, []int{0, 1}) {
		t.Errorf("counts: class 1 %d %v, class 2 %d %v", c1.Scored, c1.ChannelScored, c2.Scored, c2.ChannelScored)
	}
	if !slices.Equal(a.Names, []string{"A", "B"}) {
		t.Errorf("names %v", a.Names)
	}

	for _, tc := range []struct {
		name, want string
		recs       []ChannelRecord
		names      []string
		classes    []int
	}{
		{"no names", "no channel names", nil, nil, []int{1}},
		{"split", "split 2 out of", []ChannelRecord{chRec(2, 1, 0.5, true, 0.5, 0.5, 0.5)}, []string{"A", "B"}, []int{1}},
		{"class", "class 7 is not", []ChannelRecord{chRec(0, 7, 0.5, true, 0.5, 0.5, 0.5)}, []string{"A", "B"}, []int{1}},
		{"length", "3 per-channel scores, want 2", []ChannelRecord{chRec(0, 1, 0.5, true, 0.5, 0.5, 0.5, 0.5)}, []string{"A", "B"}, []int{1}},
		{"PL", "PL = NaN", []ChannelRecord{chRec(0, 1, nan, true, 0.5, 0.5, 0.5)}, []string{"A", "B"}, []int{1}},
		{"RMA", "RMA of channel B = 1.5", []ChannelRecord{chRec(0, 1, 0.5, true, 0.5, 0.5, 1.5)}, []string{"A", "B"}, []int{1}},
		{"classes", "no classes", nil, []string{"A"}, nil},
	} {
		_, err := AggregateChannels(tc.recs, tc.names, tc.classes, nil, 2)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestChannelEdges: zeros are a mass of 0, not a negative value; one
// split is enough to aggregate (its sd is 0 over one value).
func TestChannelEdges(t *testing.T) {
	if m := ChannelMass(nil, []float64{0, 0, 1, 0}, 2); !slices.Equal(m, []float64{0, 1}) {
		t.Errorf("ChannelMass of zeros = %v, want [0 1]", m)
	}
	a, err := AggregateChannels([]ChannelRecord{chRec(0, 1, 0.8, true, 1.0/3, 0.6, math.NaN())}, []string{"A", "B"}, []int{1}, map[string][]int{"all": {1}}, 1)
	if err != nil {
		t.Fatalf("one split: %v", err)
	}
	if pl := a.Classes[0].PL; pl.Mean != 0.8 || pl.N != 1 || pl.SD != 0 {
		t.Errorf("one split: PL %+v, want 0.8 over 1 split", pl)
	}
}
