package kern

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// firstOf is the first maximum of v in scan order by its definition: the
// first NaN if there is one, else the first element no later one
// exceeds.
func firstOf(v ...float32) float32 {
	for _, x := range v {
		if x != x {
			return x
		}
	}
	best := v[0]
	for _, x := range v[1:] {
		if x > best {
			best = x
		}
	}
	return best
}

// TestFirstMax: each element is the first maximum of the pair by its
// definition, bit for bit (NaNs of both signs, signed zeros, infinities),
// at every length and alignment, in place on either operand, and nothing
// outside dst is written.
func TestFirstMax(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range lengths {
		for off := 0; off < 4; off++ {
			a, _ := padded(r, n, (off+1)%4)
			b, _ := padded(r, n, (off+2)%4)
			specials(r, a)
			specials(r, b)
			for i := 0; i < n; i += 5 { // ties: equal values, and +0 against -0
				b[i] = a[i]
				if i%10 == 0 {
					a[i], b[i] = 0, float32(math.Copysign(0, -1))
				}
			}
			dst, buf := padded(r, n, off)
			FirstMax(dst, a, b)
			checkGuards(t, "FirstMax", buf, off, n)
			for i := range dst {
				if want := firstOf(a[i], b[i]); !sameBits(dst[i], want) {
					t.Fatalf("FirstMax n=%d i=%d (%g, %g): %g (%#x), want %g (%#x)", n, i, a[i], b[i], dst[i], math.Float32bits(dst[i]), want, math.Float32bits(want))
				}
			}
			for _, onA := range []bool{true, false} {
				x, y := slices.Clone(a), slices.Clone(b)
				d := y
				if onA {
					d = x
				}
				FirstMax(d, x, y)
				for i := range d {
					if !sameBits(d[i], dst[i]) {
						t.Fatalf("FirstMax in place (on a: %v) n=%d i=%d: %g, want %g", onA, n, i, d[i], dst[i])
					}
				}
			}
		}
	}
}

// TestFirstMaxShort: an operand shorter than dst is refused.
func TestFirstMaxShort(t *testing.T) {
	for _, c := range []struct{ a, b int }{{7, 8}, {8, 7}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("FirstMax with len(a)=%d len(b)=%d into 8 did not panic", c.a, c.b)
				}
			}()
			FirstMax(make([]float32, 8), make([]float32, c.a), make([]float32, c.b))
		}()
	}
}
