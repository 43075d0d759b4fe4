package record

import (
	"fmt"
	"math"
)

// BesselI0 returns the modified Bessel function of the first kind of
// order 0, I0(x) = sum_k ((x/2)^k / k!)^2, summed until a term no longer
// changes the sum (all terms are positive, so the relative error is a
// few ulp for the |x| <= 30 a Kaiser window needs).
func BesselI0(x float64) float64 {
	q := x * x / 4
	sum, term := 1.0, 1.0
	for k := 1; k < 1000; k++ {
		term *= q / float64(k*k)
		if sum+term == sum {
			break
		}
		sum += term
	}
	return sum
}

// Kaiser writes the symmetric Kaiser window of len(dst) points and shape
// beta into dst, as scipy.signal.windows.kaiser(M, beta):
//
//	w[n] = I0(beta * sqrt(1 - ((n - alpha) / alpha)^2)) / I0(beta),  alpha = (M-1)/2.
//
// A window of one point is 1.
func Kaiser(dst []float64, beta float64) {
	m := len(dst)
	if m == 1 {
		dst[0] = 1
		return
	}
	alpha := float64(m-1) / 2
	den := BesselI0(beta)
	for n := range dst {
		r := (float64(n) - alpha) / alpha
		dst[n] = BesselI0(beta*math.Sqrt(1-r*r)) / den
	}
}

// sinc is sin(pi x) / (pi x), 1 at 0 (numpy.sinc).
func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	y := math.Pi * x
	return math.Sin(y) / y
}

// Firwin writes into dst a linear-phase low-pass FIR filter of len(dst)
// taps with cut-off cutoff (a fraction of the Nyquist frequency, in (0,
// 1)) and a Kaiser window of shape beta, as scipy.signal.firwin(len(dst),
// cutoff, window=("kaiser", beta)) with its defaults (pass_zero, scale):
//
//	h[n] = cutoff * sinc(cutoff * (n - alpha)) * w[n],  alpha = (len-1)/2,
//	h    = h / sum(h)     (unit gain at 0 Hz).
//
// It panics if dst is empty or cutoff is outside (0, 1).
func Firwin(dst []float64, cutoff, beta float64) {
	if len(dst) == 0 || !(cutoff > 0 && cutoff < 1) {
		panic(fmt.Sprintf("record: Firwin: %d taps, cutoff %g: want >= 1 tap and 0 < cutoff < 1", len(dst), cutoff))
	}
	Kaiser(dst, beta)
	alpha := float64(len(dst)-1) / 2
	sum := 0.0
	for n := range dst {
		dst[n] *= cutoff * sinc(cutoff*(float64(n)-alpha))
		sum += dst[n]
	}
	for n := range dst {
		dst[n] /= sum
	}
}

// Resampler changes the rate of a signal by up/down with the filter of
// scipy.signal.resample_poly(x, up, down) (window ("kaiser", 5.0),
// zero padding). With up, down reduced by their gcd, max_rate =
// max(up, down) and half_len = 10 * max_rate, the taps are
//
//	h = Firwin(2*half_len + 1, 1/max_rate, 5.0) * up
//
// and the output, of ceil(N * up / down) samples, is
//
//	y[n] = sum_m x[m] h[n*down - m*up + half_len],   x[m] = 0 outside 0..N-1.
//
// Apply computes it by polyphase: output n uses only the taps of phase
// (n*down + half_len) mod up, about len(h)/up of them.
type Resampler struct {
	Up, Down int
	HalfLen  int
	Taps     []float64 // h
	// phase[p] holds h[p], h[p+up], h[p+2up], ...
	phase [][]float64
}

// gcd returns the greatest common divisor of a, b > 0.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// NewResampler returns the resampler for up/down (both >= 1). It panics
// on up or down < 1.
func NewResampler(up, down int) *Resampler {
	if up < 1 || down < 1 {
		panic(fmt.Sprintf("record: NewResampler(%d, %d): want up, down >= 1", up, down))
	}
	g := gcd(up, down)
	up, down = up/g, down/g
	r := &Resampler{Up: up, Down: down}
	if up == 1 && down == 1 {
		r.Taps = []float64{1}
		r.phase = [][]float64{{1}}
		return r
	}
	maxRate := max(up, down)
	r.HalfLen = 10 * maxRate
	r.Taps = make([]float64, 2*r.HalfLen+1)
	Firwin(r.Taps, 1/float64(maxRate), 5.0)
	for i := range r.Taps {
		r.Taps[i] *= float64(up)
	}
	r.phase = make([][]float64, up)
	for p := 0; p < up; p++ {
		for k := p; k < len(r.Taps); k += up {
			r.phase[p] = append(r.phase[p], r.Taps[k])
		}
	}
	return r
}

// Len returns the output length for n input samples, ceil(n*up/down).
func (r *Resampler) Len(n int) int { return (n*r.Up + r.Down - 1) / r.Down }

// Apply writes the resampled x into dst, which must have length
// r.Len(len(x)); it panics otherwise. It does not allocate.
func (r *Resampler) Apply(dst, x []float64) {
	if len(dst) != r.Len(len(x)) {
		panic(fmt.Sprintf("record: Resampler.Apply: len(dst) = %d, want %d", len(dst), r.Len(len(x))))
	}
	if r.Up == 1 && r.Down == 1 {
		copy(dst, x)
		return
	}
	up, n := r.Up, len(x)
	for i := range dst {
		t := i*r.Down + r.HalfLen
		m0 := t / up // the newest input sample under the filter
		taps := r.phase[t-m0*up]
		// y = sum_j taps[j] * x[m0 - j], over 0 <= m0-j <= n-1.
		jlo := 0
		if m0 > n-1 {
			jlo = m0 - (n - 1)
		}
		jhi := min(len(taps)-1, m0)
		s := 0.0
		for j := jlo; j <= jhi; j++ {
			s += taps[j] * x[m0-j]
		}
		dst[i] = s
	}
}

// Support returns the output samples lo..hi-1 whose sums use an input
// sample in a..b-1 (the closed form of the taps' reach: output n uses x[m]
// for |n*down - m*up| <= half_len).
func (r *Resampler) Support(a, b, nOut int) (lo, hi int) {
	if b <= a {
		return 0, 0
	}
	// n*down >= a*up - half_len  and  n*down <= (b-1)*up + half_len.
	lo = ceilDiv(a*r.Up-r.HalfLen, r.Down)
	hi = floorDiv((b-1)*r.Up+r.HalfLen, r.Down) + 1
	return max(lo, 0), min(hi, nOut)
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

// Ratio returns up/down = to/from in lowest terms with up, down <= limit,
// or an error when no such fraction is within 1e-9 (relative) of to/from.
// It uses the continued-fraction expansion of to/from, whose convergents
// are the best approximations.
func Ratio(from, to float64, limit int) (up, down int, err error) {
	if !(from > 0) || !(to > 0) || math.IsInf(from, 0) || math.IsInf(to, 0) {
		return 0, 0, fmt.Errorf("rates %g -> %g Hz: want rates > 0", from, to)
	}
	x := to / from
	// Convergents p/q of x.
	p0, q0, p1, q1 := 0, 1, 1, 0
	v := x
	for k := 0; k < 64; k++ {
		a := math.Floor(v)
		if a > float64(limit) {
			break
		}
		ai := int(a)
		p2, q2 := ai*p1+p0, ai*q1+q0
		if p2 > limit || q2 > limit {
			break
		}
		p0, q0, p1, q1 = p1, q1, p2, q2
		if math.Abs(float64(p1)/float64(q1)-x) <= 1e-9*x {
			return p1, q1, nil
		}
		f := v - a
		if f == 0 {
			break
		}
		v = 1 / f
	}
	return 0, 0, fmt.Errorf("rates %g -> %g Hz: the ratio %.12g is not up/down with up, down <= %d (resample the file to a rate such as 6400, 12800 or 20000 Hz first)", from, to, x, limit)
}
