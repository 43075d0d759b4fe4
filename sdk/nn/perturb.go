package nn

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Span is the half-open range [Lo, Hi) of time positions, in every input
// channel.
type Span struct{ Lo, Hi int }

// ChannelSpan is the half-open range [Lo, Hi) of time positions of input
// channel Ch, or of every channel when Ch is AllChannels.
type ChannelSpan = graph.ChannelSpan

// AllChannels is the channel of a ChannelSpan that covers every input
// channel.
const AllChannels = graph.AllChannels

// perturbedBatch is how many perturbed copies one forward pass of
// Perturbed's fallback carries.
const perturbedBatch = 64

// Perturbed writes dst[j] = p_Class(copy j of req.X) for each copy of req
// (Perturbation) and, with req.Unperturbed, dst[req.Copies()] =
// p_Class(req.X) by the same computation; len(dst) must be that number.
// A model that is a Perturber computes it by its own path; for any other,
// and for a request its path does not take, the copies (and X) run
// through m.Probs, perturbedBatch of them a call, ctx checked between
// calls. A request that does not fit m is an error naming the field and
// what is accepted; so is a failed call of the model, and a ctx that
// ended (wrapping ctx.Err()).
func Perturbed(ctx context.Context, m Model, req Perturbation, dst []float32) error {
	if err := req.check(m, len(dst)); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("perturbed copies: %w", err)
	}
	if p, ok := m.(Perturber); ok {
		done, err := p.PerturbedProbs(ctx, req, dst)
		if err != nil {
			return err // the model's, which names it
		}
		if done {
			return nil
		}
	}
	return forwardPerturbed(ctx, m, req, dst)
}

// check reports whether req fits m and a dst of dstLen values.
func (r Perturbation) check(m Model, dstLen int) error {
	n, k := m.InputLen(), m.Classes()
	C, T := inputChannels(m)
	want := r.Copies()
	if r.Unperturbed {
		want++
	}
	switch {
	case len(r.X) != n:
		return fmt.Errorf("perturbed copies: X has %d values; want one input of %d", len(r.X), n)
	case r.Class < 0 || r.Class >= k:
		return fmt.Errorf("perturbed copies: class %d; want 0..%d", r.Class, k-1)
	case r.Signal != nil && len(r.Signal) != n:
		return fmt.Errorf("perturbed copies: Signal has %d values; want X's %d, or none (Baseline)", len(r.Signal), n)
	case math.IsNaN(float64(r.Baseline)) || math.IsInf(float64(r.Baseline), 0):
		return fmt.Errorf("perturbed copies: baseline %v; want a finite number", r.Baseline)
	case dstLen != want:
		return fmt.Errorf("perturbed copies: dst has %d values; want %d (a copy each%s)", dstLen, want, map[bool]string{true: " and X's"}[r.Unperturbed])
	case r.Channel != AllChannels && (r.Channel < 0 || r.Channel >= C):
		return fmt.Errorf("perturbed copies: channel %d; want %d (every channel) or 0..%d", r.Channel, AllChannels, C-1)
	}
	if r.Spans != nil {
		if r.Starts != nil || r.Width != 0 {
			return fmt.Errorf("perturbed copies: both windows (%d starts, width %d) and %d sets of spans; want one kind", len(r.Starts), r.Width, len(r.Spans))
		}
		if r.Channel != AllChannels {
			return fmt.Errorf("perturbed copies: channel %d with spans; want %d (a span names its own channel)", r.Channel, AllChannels)
		}
		for j, sp := range r.Spans {
			for _, s := range sp {
				if s.Ch != AllChannels && (s.Ch < 0 || s.Ch >= C) || s.Lo < 0 || s.Lo > s.Hi || s.Hi > T {
					return fmt.Errorf("perturbed copies: copy %d: span %+v; want channel %d (every channel) or 0..%d and 0 <= Lo <= Hi <= %d", j, s, AllChannels, C-1, T)
				}
			}
		}
		return nil
	}
	if len(r.Starts) > 0 && (r.Width < 1 || r.Width > T) {
		return fmt.Errorf("perturbed copies: window width %d; want 1..%d (the input's samples a channel)", r.Width, T)
	}
	for j, s := range r.Starts {
		if s < 0 || s > T-r.Width {
			return fmt.Errorf("perturbed copies: window %d starts at %d; want 0..%d (a window of %d samples inside %d)", j, s, T-r.Width, r.Width, T)
		}
	}
	return nil
}

// inputChannels is m's input as C channels of T samples: the
// architecture's, or one channel of InputLen() samples when it does not
// say.
func inputChannels(m Model) (C, T int) {
	a := m.Arch()
	C, T = a.InChannels, a.InLen
	if C < 1 || T < 1 || C*T != m.InputLen() {
		return 1, m.InputLen()
	}
	return C, T
}

// windowSignal is the baseline signal z that makes the windows of r,
// replacing every channel by z, replace what r's do: Signal, or, for one
// Channel, X with that channel's row replaced by Signal's or Baseline
// (ChannelBaseline); nil for a constant Baseline in every channel.
func (r Perturbation) windowSignal(T int) []float32 {
	if r.Channel == AllChannels {
		return r.Signal
	}
	return ChannelBaseline(make([]float32, len(r.X)), r.X, r.Signal, r.Baseline, T, r.Channel)
}

// apply writes copy j of r into row, which holds X.
func (r Perturbation) apply(row []float32, j, C, T int) {
	set := func(ch, lo, hi int) {
		c0, c1 := ch, ch+1
		if ch == AllChannels {
			c0, c1 = 0, C
		}
		for c := c0; c < c1; c++ {
			seg := row[c*T+lo : c*T+hi]
			if r.Signal != nil {
				copy(seg, r.Signal[c*T+lo:c*T+hi])
				continue
			}
			for t := range seg {
				seg[t] = r.Baseline
			}
		}
	}
	if r.Spans != nil {
		for _, s := range r.Spans[j] {
			set(s.Ch, s.Lo, s.Hi)
		}
		return
	}
	set(r.Channel, r.Starts[j], r.Starts[j]+r.Width)
}

// forwardPerturbed is Perturbed by forward passes: the copies, then X if
// req.Unperturbed, perturbedBatch of them a call of m.Probs.
func forwardPerturbed(ctx context.Context, m Model, req Perturbation, dst []float32) error {
	n, k := m.InputLen(), m.Classes()
	C, T := inputChannels(m)
	copies, total := req.Copies(), len(dst)
	if total == 0 {
		return nil
	}
	rows := min(perturbedBatch, total)
	buf := make([]float32, rows*n)
	probs := make([]float32, rows*k)
	for j0 := 0; j0 < total; j0 += perturbedBatch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("perturbed copies %d..%d of %d: %w", j0, total-1, total, err)
		}
		j1 := min(j0+perturbedBatch, total)
		for j := j0; j < j1; j++ {
			row := buf[(j-j0)*n : (j-j0+1)*n]
			copy(row, req.X)
			if j < copies {
				req.apply(row, j, C, T)
			}
		}
		if err := m.Probs(ctx, probs[:(j1-j0)*k], buf[:(j1-j0)*n]); err != nil {
			return fmt.Errorf("perturbed copies %d..%d of %d: %w", j0, j1-1, total, err)
		}
		for j := j0; j < j1; j++ {
			dst[j] = probs[(j-j0)*k+req.Class]
		}
	}
	return nil
}

// inChunks calls f on the inputs [b0, b1) of a batch of b, at most per at
// a time, and stops at the first error of f or, before a chunk, of ctx
// (wrapped, naming the inputs not computed).
func inChunks(ctx context.Context, b, per int, f func(b0, b1 int) error) error {
	for b0 := 0; b0 < b; b0 += per {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("inputs %d..%d of %d: %w", b0, b-1, b, err)
		}
		if err := f(b0, min(b0+per, b)); err != nil {
			return err
		}
	}
	return nil
}

// wholeInputs is the number of inputs of n values in x, or an error.
func wholeInputs(x []float32, n int) (int, error) {
	if n < 1 || len(x)%n != 0 {
		return 0, fmt.Errorf("input of %d values is not whole inputs of %d", len(x), n)
	}
	return len(x) / n, nil
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
