package figure

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/palette"
)

// Cividis is the cividis colour map (Nuñez, Anderton and Renslow 2018;
// matplotlib's `cividis`) as a gonum palette.ColorMap. Cividis runs from
// dark blue through grey to yellow, its CIE L* lightness rises
// monotonically from 13.9 to 91.2, and it reads the same to viewers with
// red-green colour vision deficiency; every relevance strip of this
// package is drawn with it.
//
// At interpolates linearly in sRGB between the 256 entries of matplotlib's
// table: with u = 255 (v - min) / (max - min), k = floor(u) and f = u - k,
//
//	At(v) = (1 - f) table[k] + f table[k+1],   At(max) = table[255],
//
// so At(min + k (max - min) / 255) is entry k exactly. (matplotlib's own
// ListedColormap does not interpolate: it returns entry floor(256 u')
// for u' = (v - min) / (max - min), clipped to 255; the two agree at the
// entries and differ by at most one table step in between.) Colours are
// color.NRGBA64 with the map's alpha.
//
// The zero value has min = max = 0 and alpha 0; use NewCividis.
type Cividis struct {
	min, max, alpha float64
}

// NewCividis returns the cividis map over [0, 1], opaque.
func NewCividis() *Cividis { return &Cividis{min: 0, max: 1, alpha: 1} }

var _ palette.ColorMap = (*Cividis)(nil)

// At returns the colour of v (see the type's doc). It returns
// palette.ErrUnderflow for v < Min, palette.ErrOverflow for v > Max,
// palette.ErrNaN for NaN, and an error when Max <= Min.
func (c *Cividis) At(v float64) (color.Color, error) {
	if !(c.max > c.min) {
		return nil, fmt.Errorf("figure: cividis: max (%g) must exceed min (%g)", c.max, c.min)
	}
	switch {
	case math.IsNaN(v):
		return nil, palette.ErrNaN
	case v < c.min:
		return nil, palette.ErrUnderflow
	case v > c.max:
		return nil, palette.ErrOverflow
	}
	r, g, b := cividisRGB((v - c.min) / (c.max - c.min))
	return color.NRGBA64{R: unit16(r), G: unit16(g), B: unit16(b), A: unit16(c.alpha)}, nil
}

// cividisRGB is the interpolated table at u in [0, 1] (the caller checks
// the range).
func cividisRGB(u float64) (r, g, b float64) {
	x := u * 255
	k := int(x)
	if k >= 255 {
		e := cividisTable[255]
		return e[0], e[1], e[2]
	}
	f := x - float64(k)
	lo, hi := cividisTable[k], cividisTable[k+1]
	return lo[0] + f*(hi[0]-lo[0]), lo[1] + f*(hi[1]-lo[1]), lo[2] + f*(hi[2]-lo[2])
}

// unit16 maps x in [0, 1] to the nearest of 0..65535.
func unit16(x float64) uint16 { return uint16(math.Round(x * 0xffff)) }

// Min returns the value mapped to the first entry.
func (c *Cividis) Min() float64 { return c.min }

// Max returns the value mapped to the last entry.
func (c *Cividis) Max() float64 { return c.max }

// SetMin sets the value mapped to the first entry.
func (c *Cividis) SetMin(v float64) { c.min = v }

// SetMax sets the value mapped to the last entry.
func (c *Cividis) SetMax(v float64) { c.max = v }

// Alpha returns the opacity of the colours At returns.
func (c *Cividis) Alpha() float64 { return c.alpha }

// SetAlpha sets the opacity, 0 transparent to 1 opaque. It panics for a
// value outside [0, 1] (as palette.ColorMap asks).
func (c *Cividis) SetAlpha(a float64) {
	if !(a >= 0 && a <= 1) {
		panic(fmt.Sprintf("figure: cividis: alpha %g outside [0, 1]", a))
	}
	c.alpha = a
}

// Palette returns n colours evenly spaced over [Min, Max]: colour i is
// At(Min + i (Max - Min) / (n - 1)), and the one colour of n = 1 is
// At(Min). It panics for n < 1 or Max <= Min.
func (c *Cividis) Palette(n int) palette.Palette {
	if n < 1 {
		panic(fmt.Sprintf("figure: cividis: palette of %d colours", n))
	}
	cols := make(colors, n)
	for i := range cols {
		v := c.min
		if n > 1 {
			v = c.min + float64(i)*(c.max-c.min)/float64(n-1)
		}
		// The last value is set exactly so rounding cannot overflow Max.
		if i == n-1 && n > 1 {
			v = c.max
		}
		col, err := c.At(v)
		if err != nil {
			panic(err)
		}
		cols[i] = col
	}
	return cols
}

// colors is a palette.Palette.
type colors []color.Color

// Colors returns the palette's colours.
func (p colors) Colors() []color.Color { return p }
