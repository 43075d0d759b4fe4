package occlusion

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strconv"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// TestNoiseSignalFormula: the noise is the documented stream, so that a
// recipe's noise maps stay reproducible across versions: key
// rng.Key(seed, "explainer.occlusion noise", hex FNV-1a of the record's
// float32 bits, -1, -1), and z[c*T+t] = mu_c + sigma_c e in index order.
func TestNoiseSignalFormula(t *testing.T) {
	const T = 16
	x := make([]float32, 2*T)
	for i := range x {
		x[i] = float32(math.Cos(float64(i))) + float32(i/T)
	}
	h := fnv.New64a()
	for _, v := range x {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		h.Write(b[:])
	}
	key := rng.Key(9, "explainer.occlusion noise", strconv.FormatUint(h.Sum64(), 16), -1, -1)
	if got := NoiseKey(x, 9); got != key {
		t.Fatalf("NoiseKey = %x, want %x", got, key)
	}
	r := rng.New(key)
	z := NoiseSignal(make([]float32, len(x)), x, T, 9)
	for c := range 2 {
		mu, sigma := meanStd(x[c*T : (c+1)*T])
		for t0 := range T {
			if want := float32(mu + sigma*r.NormFloat64()); z[c*T+t0] != want {
				t.Fatalf("z[%d] = %v, want %v", c*T+t0, z[c*T+t0], want)
			}
		}
	}
}

// TestSignalsOneSample: a record of one sample a channel is its own mean
// and has no spread, so the noise is the mean; lengths that do not fit
// panic (programmer errors).
func TestSignalsOneSample(t *testing.T) {
	x := []float32{0.5, -2}
	if z := MeanSignal(make([]float32, 2), x, 1); z[0] != 0.5 || z[1] != -2 {
		t.Errorf("mean of one sample: %v", z)
	}
	if z := NoiseSignal(make([]float32, 2), x, 1, 4); z[0] != 0.5 || z[1] != -2 {
		t.Errorf("noise of one sample: %v", z)
	}
	f, err := newFundamentalFit(4, 64)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(){
		"MeanSignal T 0":     func() { MeanSignal(make([]float32, 2), x, 0) },
		"MeanSignal dst":     func() { MeanSignal(make([]float32, 1), x, 1) },
		"MeanSignal T 3":     func() { MeanSignal(make([]float32, 2), x, 3) },
		"NoiseSignal T 0":    func() { NoiseSignal(make([]float32, 2), x, 0, 0) },
		"NoiseSignal dst":    func() { NoiseSignal(make([]float32, 3), x, 1, 0) },
		"NoiseSignal T 3":    func() { NoiseSignal(make([]float32, 2), x, 3, 0) },
		"fundamental T":      func() { f.Signal(make([]float32, 2), x) },
		"fundamental dst":    func() { f.Signal(make([]float32, 3), make([]float32, 4)) },
		"baselineSignal dst": func() { baselineSignal(make([]float32, 1), x, 1, config{kind: Mean}, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			call()
		}()
	}
}
