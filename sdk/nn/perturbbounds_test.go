package nn

import (
	"context"
	"testing"
)

// TestPerturbedAcceptsTheBounds: a request at each bound that check
// states (the first and last class and channel, a window as wide as the
// input, a window ending at the last sample, spans of the last channel
// and empty spans at either end, dst of exactly the copies and X's) is
// accepted, and the model's own path equals the forward passes of the
// copies (unfolded) on it.
func TestPerturbedAcceptsTheBounds(t *testing.T) {
	ctx := context.Background()
	m := graphModels(t)[0]
	C, T, K := m.Arch().InChannels, m.Arch().InLen, m.Classes()
	x := make([]float32, m.InputLen())
	sig := make([]float32, m.InputLen())
	for i := range x {
		x[i] = float32(i%7) - 3
		sig[i] = float32(i%5) * 0.5
	}
	base := Perturbation{X: x, Class: 0, Starts: []int{0, 10}, Width: 8, Channel: AllChannels, Baseline: 0.5}
	for _, c := range []struct {
		name string
		edit func(r *Perturbation)
	}{
		{"last class", func(r *Perturbation) { r.Class = K - 1 }},
		{"first channel", func(r *Perturbation) { r.Channel = 0 }},
		{"last channel", func(r *Perturbation) { r.Channel = C - 1 }},
		{"last channel of a signal", func(r *Perturbation) { r.Channel, r.Signal = C-1, sig }},
		{"width of the input", func(r *Perturbation) { r.Starts, r.Width = []int{0}, T }},
		{"window ending at the last sample", func(r *Perturbation) { r.Starts = []int{T - r.Width, 0} }},
		{"width 1 at both ends", func(r *Perturbation) { r.Starts, r.Width = []int{0, T - 1}, 1 }},
		{"unperturbed", func(r *Perturbation) { r.Unperturbed = true }},
		{"no copies, unperturbed", func(r *Perturbation) { r.Starts, r.Unperturbed = nil, true }},
		{"spans at the bounds", func(r *Perturbation) {
			r.Starts, r.Width = nil, 0
			r.Spans = [][]ChannelSpan{
				{{Ch: C - 1, Lo: 0, Hi: T}},
				{{Ch: AllChannels, Lo: T, Hi: T}, {Ch: 0, Lo: 0, Hi: 0}},
				{{Ch: AllChannels, Lo: T - 1, Hi: T}, {Ch: AllChannels, Lo: 0, Hi: 1}},
				{{Ch: AllChannels, Lo: 0, Hi: T}},
			}
		}},
	} {
		r := base
		c.edit(&r)
		n := r.Copies()
		if r.Unperturbed {
			n++
		}
		fast, plain := make([]float32, n), make([]float32, n)
		if err := Perturbed(ctx, m, r, fast); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		u := &unfolded{m: m}
		if err := Perturbed(ctx, u, r, plain); err != nil {
			t.Errorf("%s: forward passes: %v", c.name, err)
			continue
		}
		if !nearly(fast, plain, r.Unperturbed) {
			t.Errorf("%s: own path %v, forward passes %v", c.name, fast, plain)
		}
		if u.seen.Load() != int64(n) {
			t.Errorf("%s: %d forward passes for %d values", c.name, u.seen.Load(), n)
		}
	}
}
