package analysis

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
)

// newPanel of a batch of C = 3 channels draws a row a channel with the
// split's channel names; of one channel, the one-channel figure as before.
func TestNewPanelChannels(t *testing.T) {
	const C, T = 3, 8
	mask := make([]bool, C*T)
	mask[T+2] = true // channel B only
	b := &engine.Batch{Posterior: engine.Step{Label: "P"}, Explainer: engine.Step{Label: "E"}, SplitName: "s", Records: []int{0},
		Labels: []int{1}, Preds: []int{1}, Probs: [][]float64{{0.2, 0.8}}, X: [][]float32{make([]float32, C*T)}, Masks: [][]bool{mask},
		Channels: C, ChannelNames: []string{"A", "B", "C"}}
	maps := [][]float64{make([]float64, C*T), make([]float64, C*T)}
	maps[1][T+2] = 1
	p := newPanel(b, 0, maps)
	if p.Channels != C || !slices.Equal(p.ChannelNames, []string{"A", "B", "C"}) || len(p.Wave) != C*T || !slices.Equal(p.Mask, mask) {
		t.Fatalf("panel channels %d names %v wave %d", p.Channels, p.ChannelNames, len(p.Wave))
	}
	if err := figure.Qualitative(&bytes.Buffer{}, *p); err != nil {
		t.Fatal(err)
	}
	b.Channels, b.ChannelNames, b.X, b.Masks = 1, []string{"ch0"}, [][]float32{make([]float32, T)}, [][]bool{mask[:T]}
	p = newPanel(b, 0, [][]float64{maps[0][:T], maps[1][:T]})
	if p.Channels != 0 || p.ChannelNames != nil {
		t.Errorf("one channel: panel channels %d names %v, want the one-channel panel", p.Channels, p.ChannelNames)
	}
}

// TestChannelShare: each channel's share of the |R| of the draws' mean map
// (mean of {1,-3,2,2} and {3,-1,0,0} is {2,-2,1,1}: channel 0 holds 4 of
// 6); none for one channel or a map of no relevance.
func TestChannelShare(t *testing.T) {
	got := channelShare([][]float64{{1, -3, 2, 2}, {3, -1, 0, 0}}, 2)
	if len(got) != 2 || math.Abs(got[0]-2.0/3) > 1e-15 || math.Abs(got[1]-1.0/3) > 1e-15 {
		t.Errorf("shares %v, want [2/3 1/3]", got)
	}
	if got := channelShare([][]float64{{1, 2}}, 1); got != nil {
		t.Errorf("one channel: %v", got)
	}
	if got := channelShare([][]float64{{1, 0}, {-1, 0}}, 2); got != nil {
		t.Errorf("a mean map of no relevance: %v", got)
	}
}
