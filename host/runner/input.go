package runner

import (
	"fmt"
	"math"
	"strings"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// This file reads the inputs of `uaxai explain` and `predict`: a user's
// waveforms of C channels (a CSV line holds channel 0's T samples, then
// channel 1's, ...; or a .npy array of shape (N, C, T) or (N, T)), and
// the architecture that takes them: the named built-in on C x T inputs
// with the classes of the first weights file.

// inputs are the waveforms of an input file: n records of c x t values,
// channel-major, in x; bounds are the bounds they were read under, which
// the networks that take them keep too (checkNetSize).
type inputs struct {
	x       []float32
	n, c, t int
	bounds  recipe.SizeBounds
}

// readInputs reads path, a .npy file or a CSV of one waveform a line.
// channels is C as --channels gives it (0: a .npy file's own, else 1).
// A waveform is at most recipe.MaxInChannels channels of b.InLen samples
// (zero bounds: recipe.DefaultSizeBounds), checked before its values are
// held: a .npy file's in its header, a CSV line as it is read.
func readInputs(path string, channels int, b recipe.SizeBounds) (inputs, error) {
	if b == (recipe.SizeBounds{}) {
		b = recipe.DefaultSizeBounds()
	}
	if channels < 0 {
		return inputs{}, fmt.Errorf("--channels %d: want a count >= 1", channels)
	}
	if channels > recipe.MaxInChannels {
		return inputs{}, fmt.Errorf("--channels %d: above the bound of %d channels (accepted: 1..%d)", channels, recipe.MaxInChannels, recipe.MaxInChannels)
	}
	if strings.HasSuffix(strings.ToLower(path), ".npy") {
		a, err := npy.ReadFileChecked(path, func(shape []int) error {
			if len(shape) != 2 && len(shape) != 3 {
				return nil // below: not waveforms
			}
			c, t := 1, shape[len(shape)-1]
			if len(shape) == 3 {
				c = shape[1]
			}
			if c > recipe.MaxInChannels {
				return fmt.Errorf("an array of shape %v: %d channels, above the bound of %d channels (accepted: 1..%d)", shape, c, recipe.MaxInChannels, recipe.MaxInChannels)
			}
			if t > b.InLen {
				return fmt.Errorf("an array of shape %v: waveforms of %d samples, above the bound of %d samples a channel (--max-in-len raises it)", shape, t, b.InLen)
			}
			return nil
		})
		if err != nil {
			return inputs{}, err
		}
		in := inputs{bounds: b}
		switch len(a.Shape) {
		case 2:
			in.n, in.c, in.t = a.Shape[0], 1, a.Shape[1]
		case 3:
			in.n, in.c, in.t = a.Shape[0], a.Shape[1], a.Shape[2]
		default:
			return inputs{}, fmt.Errorf("%s: an array of shape %v, want (N, C, T) waveforms of C channels of T samples, or (N, T) of one channel", path, a.Shape)
		}
		if a.Float == nil {
			return inputs{}, fmt.Errorf("%s: an array of dtype %s, want float32 or float64 waveforms", path, a.Dtype)
		}
		if in.n < 1 || in.t < 1 || in.c < 1 {
			return inputs{}, fmt.Errorf("%s: an array of shape %v holds no waveform, want (N, C, T) with N, C, T >= 1", path, a.Shape)
		}
		if channels > 0 && channels != in.c {
			return inputs{}, fmt.Errorf("%s: an array of shape %v has %d channel(s), and --channels says %d (accepted: --channels %d, or leave it out)", path, a.Shape, in.c, channels, in.c)
		}
		in.x = make([]float32, len(a.Float))
		for i, v := range a.Float {
			f := float32(v)
			if math.IsNaN(v) || math.IsInf(float64(f), 0) {
				per := in.c * in.t
				return inputs{}, fmt.Errorf("%s: waveform %d, channel %d, sample %d is %v, want a finite float32 value", path, i/per, i%per/in.t, i%in.t, v)
			}
			in.x[i] = f
		}
		return in, nil
	}
	c := max(channels, 1)
	bound := data.WaveformBound{Max: math.MaxInt, Why: fmt.Sprintf("%d channel(s) x --max-in-len %d samples; --max-in-len raises it", c, b.InLen)}
	if m, ok := checked.Mul(c, b.InLen); ok {
		bound.Max = m
	}
	in := inputs{c: c, bounds: b}
	n, cols, err := data.ScanWaveforms(path, 0, bound, func(_ int, v float64) { in.x = append(in.x, float32(v)) })
	if err != nil {
		return inputs{}, err
	}
	if cols%c != 0 {
		return inputs{}, fmt.Errorf("%s: line 1 holds %d values, not a whole number of samples for each of --channels %d (accepted: C x T values a line, channel 0's T samples first)", path, cols, c)
	}
	in.n, in.t = n, cols/c
	return in, nil
}

// inputArch returns the built-in architecture name ("": the paper's) on
// inputs of c channels of t samples, with as many classes as the last
// layer of the first weights file has outputs (its "<name>.weight" rows):
// nn.Arch.Reshaped.
//
// Errors name the input file (the waveforms the architecture cannot
// take, or a network on them above in.bounds: checkNetSize) or the
// weights file.
func inputArch(name string, in inputs, input string, weights []string) (nn.Arch, error) {
	c, t := in.c, in.t
	if name == "" {
		name = nn.PaperArchName
	}
	a, err := nn.LookupArch(name)
	if err != nil {
		return nn.Arch{}, err
	}
	k := a.Classes()
	net, err := a.GraphNet()
	if err != nil {
		return nn.Arch{}, err
	}
	spec := net.Spec()
	o, err := spec.OutputIndex()
	if err != nil {
		return nn.Arch{}, err
	}
	if last := spec.Nodes[o]; last.Op == "linear" && len(weights) > 0 {
		f, err := safetensors.ReadFile(weights[0])
		if err != nil {
			return nn.Arch{}, fmt.Errorf("weights file 1 of %d: %w", len(weights), err)
		}
		w, ok := f.Get(last.Name + ".weight")
		if !ok || len(w.Shape) != 2 || w.Shape[0] < 1 {
			return nn.Arch{}, fmt.Errorf("weights file 1 of %d: %s has no 2-D tensor %q, the last layer of architecture %q (its rows are the classes)", len(weights), weights[0], last.Name+".weight", name)
		}
		k = w.Shape[0]
	}
	b := a
	if c != a.InChannels || t != a.InLen || k != a.Classes() {
		if b, err = a.Reshaped(c, t, k); err != nil {
			return nn.Arch{}, fmt.Errorf("%s: waveforms of %d channel(s) x %d samples (line 1, record 0), which architecture %q with %d classes cannot take: %w (accepted: as many samples as its layers need, e.g. %d)", input, c, t, name, k, err, a.InLen)
		}
	}
	size, err := recipe.ArchSize(b)
	if err == nil {
		err = checkNetSize(fmt.Sprintf("architecture %q on waveforms of %d channel(s) x %d samples (%s)", name, c, t, input), size, in.bounds)
	}
	if err != nil {
		return nn.Arch{}, err
	}
	return b, nil
}
