package report

import (
	"math"
)

// This file bounds what report.html carries of a long series and of a
// long recording: a record's plots have at most MaxColumns columns a
// channel, a posterior's timeline at most MaxTimeline bars. Below the
// bounds the page holds every value as it is.

// MaxColumns bounds the columns of a record's plots (a canvas is at most
// 1100 pixels wide). A record of T > MaxColumns samples a channel is
// shown as B = MaxColumns columns, column b the samples
//
//	[b T / B, (b+1) T / B)   (integer division; each holds T/B or T/B + 1),
//
// its heat map cell the member's value of largest |R| among them (a
// value of the map, signed), its lines (waveform, mean, quantiles,
// variance, CV) the minimum and maximum of the column's samples, its mask
// cell whether any of them is in the mask. The hover then shows these
// aggregates and the samples they cover.
const MaxColumns = 1024

// MaxTimeline bounds the timeline's bars a posterior. A recording of
// W > MaxTimeline windows is shown as B = MaxTimeline bars, bar b the
// windows [b W / B, (b+1) W / B) in window order: their time span, their
// most frequent predicted class (ties: the one that reached that count
// first in window order), its
// share, and the lowest probability, the highest mutual information and
// the lowest agreement among them (a bar shows its most uncertain window).
const MaxTimeline = 1024

// bucket is column b's samples [n0, n1) of T in B columns.
func bucket(b, T, B int) (n0, n1 int) { return b * T / B, (b + 1) * T / B }

// thinMaxAbs sets dst[c*B+b] = x[c*T+n*], n* the first sample n of
// column b with the largest |x[c*T+n]|, for the C channels of x (C x T
// values, channel-major) in B <= T columns.
func thinMaxAbs(dst, x []float32, C, T, B int) {
	if len(x) != C*T || len(dst) != C*B || B > T || B < 1 {
		panic("report: thinMaxAbs: bad lengths")
	}
	for c := range C {
		row := x[c*T : (c+1)*T]
		for b := range B {
			n0, n1 := bucket(b, T, B)
			v := row[n0]
			for _, u := range row[n0+1 : n1] {
				if math.Abs(float64(u)) > math.Abs(float64(v)) {
					v = u
				}
			}
			dst[c*B+b] = v
		}
	}
}

// thinMinMax sets lo[c*B+b] and hi[c*B+b] to the minimum and maximum of
// x[c*T+n] over column b's samples n.
func thinMinMax(lo, hi, x []float32, C, T, B int) {
	if len(x) != C*T || len(lo) != C*B || len(hi) != C*B || B > T || B < 1 {
		panic("report: thinMinMax: bad lengths")
	}
	for c := range C {
		row := x[c*T : (c+1)*T]
		for b := range B {
			n0, n1 := bucket(b, T, B)
			l, h := row[n0], row[n0]
			for _, u := range row[n0+1 : n1] {
				l, h = min(l, u), max(h, u)
			}
			lo[c*B+b], hi[c*B+b] = l, h
		}
	}
}

// thinAny sets dst[c*B+b] to 1 when any of column b's samples is in the
// mask (C x T values), else 0.
func thinAny(dst []byte, mask []bool, C, T, B int) {
	if len(mask) != C*T || len(dst) != C*B || B > T || B < 1 {
		panic("report: thinAny: bad lengths")
	}
	for c := range C {
		for b := range B {
			n0, n1 := bucket(b, T, B)
			dst[c*B+b] = 0
			for _, m := range mask[c*T+n0 : c*T+n1] {
				if m {
					dst[c*B+b] = 1
					break
				}
			}
		}
	}
}

// jsWindow is one bar of the timeline: a window, or windows Window..Last
// (N of them) of a long recording (MaxTimeline).
type jsWindow struct {
	Posterior   string  `json:"posterior"`
	Window      int     `json:"window"`
	Last        int     `json:"last"`
	N           int     `json:"n"`
	Start       float64 `json:"start_s"`
	Length      float64 `json:"length_s"`
	Class       string  `json:"class"`
	Share       float64 `json:"share"` // of the bar's windows predicted Class
	Probability float64 `json:"probability"`
	MutualInfo  float64 `json:"mutual_information"`
	Agreement   float64 `json:"agreement"`
	OOD         int     `json:"ood"`                  // of the bar's windows flagged out of distribution
	OODReason   string  `json:"ood_reason,omitempty"` // the first flagged one's
}

// thinWindows is the timeline's bars: each posterior's windows (in the
// order given, a posterior's in window order) as they are when it has at
// most `bound` of them, else in `bound` bars (MaxTimeline).
func thinWindows(ws []Window, bound int) []jsWindow {
	var order []string
	by := map[string][]Window{}
	for _, w := range ws {
		if _, ok := by[w.Posterior]; !ok {
			order = append(order, w.Posterior)
		}
		by[w.Posterior] = append(by[w.Posterior], w)
	}
	out := []jsWindow{}
	for _, p := range order {
		pw := by[p]
		W := len(pw)
		B := min(W, bound)
		for b := range B {
			n0, n1 := bucket(b, W, B)
			g := pw[n0:n1]
			j := jsWindow{Posterior: p, Window: g[0].Window, Last: g[len(g)-1].Window, N: len(g), Start: g[0].Start,
				Length:      (g[len(g)-1].Start - g[0].Start) + g[len(g)-1].Length,
				Probability: g[0].Probability, MutualInfo: g[0].MutualInfo, Agreement: g[0].Agreement}
			count := map[string]int{}
			best := 0
			for _, w := range g {
				count[w.Class]++
				if count[w.Class] > best {
					best, j.Class = count[w.Class], w.Class
				}
				j.Probability, j.MutualInfo, j.Agreement = min(j.Probability, w.Probability), max(j.MutualInfo, w.MutualInfo), min(j.Agreement, w.Agreement)
				if w.OOD {
					if j.OOD++; j.OODReason == "" {
						j.OODReason = w.OODReason
					}
				}
			}
			j.Share = float64(best) / float64(len(g))
			out = append(out, j)
		}
	}
	return out
}
