package record

import (
	"math"
	"testing"
)

// BenchmarkResample20k: one second at 20 kHz to 3.2 kHz (4/25, 501 taps).
func BenchmarkResample20k(b *testing.B) {
	x := make([]float64, 20000)
	for i := range x {
		x[i] = math.Sin(2 * math.Pi * 50 * float64(i) / 20000)
	}
	r := NewResampler(4, 25)
	y := make([]float64, r.Len(len(x)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.Apply(y, x)
	}
}

// BenchmarkReadCOMTRADEASCII: the shipped 1999 ASCII recording (20000
// samples) from bytes.
func BenchmarkReadCOMTRADEASCII(b *testing.B) {
	files, err := DemoFiles()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := ReadCOMTRADE("demo.cfg", files["demo.cfg"], "demo.dat", files["demo.dat"], Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
