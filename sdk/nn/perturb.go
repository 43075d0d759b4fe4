package nn

import "github.com/uaxai/uaxai/sdk/nn/graph"

// Span is the half-open range [Lo, Hi) of time positions, in every input
// channel.
type Span struct{ Lo, Hi int }

// ChannelSpan is the half-open range [Lo, Hi) of time positions of input
// channel Ch, or of every channel when Ch is AllChannels.
type ChannelSpan = graph.ChannelSpan

// AllChannels is the channel of a ChannelSpan that covers every input
// channel.
const AllChannels = graph.AllChannels

// probsChunk is the number of perturbed copies WindowProbsOf runs in one
// forward pass.
const probsChunk = 64

// WindowProbsOf computes what GraphModel.WindowProbs (z nil) and
// WindowProbsSignal (z not nil) do, for any Model, by forward passes of
// the occluded copies, probsChunk at a time: dst[j] = p_class(x with
// samples starts[j] .. starts[j]+width-1 of every channel replaced by
// baseline, or by z's samples there). x is one input; T = Arch().InLen.
func WindowProbsOf(m Model, dst, x, z []float32, starts []int, width int, baseline float32, class int) {
	n, k := m.InputLen(), m.Classes()
	a := m.Arch()
	if len(x) != n || len(dst) < len(starts) || (z != nil && len(z) != n) {
		panic("nn: WindowProbsOf needs one input, a baseline signal of its length or none, and a dst per window")
	}
	buf := make([]float32, min(probsChunk, len(starts))*n)
	probs := make([]float32, min(probsChunk, len(starts))*k)
	for j0 := 0; j0 < len(starts); j0 += probsChunk {
		j1 := min(j0+probsChunk, len(starts))
		for j := j0; j < j1; j++ {
			row := buf[(j-j0)*n : (j-j0+1)*n]
			copy(row, x)
			occlude(row, z, baseline, a.InChannels, a.InLen, starts[j], starts[j]+width)
		}
		m.Probs(probs[:(j1-j0)*k], buf[:(j1-j0)*n])
		for j := j0; j < j1; j++ {
			dst[j] = probs[(j-j0)*k+class]
		}
	}
}

// occlude writes the baseline (z's samples, or v when z is nil) over
// positions [lo, hi) of each of the C rows of length T of row (one input).
func occlude(row, z []float32, v float32, C, T, lo, hi int) {
	lo, hi = max(lo, 0), min(hi, T)
	if lo >= hi {
		return
	}
	for c := 0; c < C; c++ {
		if z != nil {
			copy(row[c*T+lo:c*T+hi], z[c*T+lo:c*T+hi])
			continue
		}
		r := row[c*T+lo : c*T+hi]
		for t := range r {
			r[t] = v
		}
	}
}

// ChannelBaseline writes to dst the baseline signal that occludes channel
// ch of x alone, and returns dst: for the input x of C = len(x)/T channels
// of T samples,
//
//	dst[c*T+t] = x[c*T+t]    for c != ch,
//	dst[ch*T+t] = z[ch*T+t]  (or baseline, when z is nil).
//
// Occluding a window of every channel with dst (WindowProbsSignal,
// WindowProbsOf) occludes it in channel ch only, since the other channels
// are replaced by themselves:
//
//	dst[j] = p_class(x with samples starts[j] .. starts[j]+width-1 of channel ch set to the baseline)
//
// as Captum's Occlusion computes with sliding_window_shapes = (1, width).
// The incremental paths stay incremental: the copies differ from x in
// channel ch only.
func ChannelBaseline(dst, x, z []float32, baseline float32, T, ch int) []float32 {
	if T < 1 || len(x)%T != 0 || len(dst) != len(x) || (z != nil && len(z) != len(x)) || ch < 0 || ch >= len(x)/T {
		panic("nn: ChannelBaseline needs an input of whole channels, a dst (and z) of its length and a channel in range")
	}
	copy(dst, x)
	row := dst[ch*T : (ch+1)*T]
	if z != nil {
		copy(row, z[ch*T:(ch+1)*T])
		return dst
	}
	for t := range row {
		row[t] = baseline
	}
	return dst
}

// grow returns b resliced to n values, or a new slice if b is too short.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
