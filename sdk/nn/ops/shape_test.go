package ops

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// outLenBig is the output length of a convolution computed exactly
// (math/big): floor((T + l + r - d*(k-1) - 1) / s) + 1, and whether it is
// at least 1 and the span d*(k-1)+1 and the padded length T+l+r fit an
// int (a length whose intermediate sizes do not fit is refused, not
// computed).
func outLenBig(T, k, s, l, r, d int) (int, bool) {
	b := big.NewInt
	span := new(big.Int).Mul(b(int64(d)), b(int64(k-1)))
	span.Add(span, b(1))
	n := new(big.Int).Add(b(int64(T)), b(int64(l)))
	n.Add(n, b(int64(r)))
	fits := span.IsInt64() && n.IsInt64()
	n.Sub(n, span)
	if n.Sign() < 0 || s < 1 {
		return 0, false
	}
	n.Quo(n, b(int64(s)))
	n.Add(n, b(1))
	return int(n.Int64()), fits && n.IsInt64()
}

// TestShapeOverflow (issue 34, item 2): ConvOutLen, PoolOutLen and
// PadOutLen give the exact length (math/big) when it and its intermediate
// sizes fit an int, else an error, never a wrapped length, on sizes up to
// 2^63 - 1; a dilation of 2^62 made the span wrap to 1 and pass.
func TestShapeOverflow(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 2))
	// Sizes small, large, near 2^63 and, now and then, out of range (0
	// or -1), which every rule refuses.
	size := func() int {
		switch rng.IntN(9) {
		case 0, 1:
			return 1 + rng.IntN(8)
		case 2, 3:
			return 1 << (40 + rng.IntN(23))
		case 4:
			return math.MaxInt - rng.IntN(4)
		case 5:
			return rng.IntN(2) - 1
		}
		return 1 + rng.IntN(1<<20)
	}
	if L, err := ConvOutLen(640, 3, 1, 0, 0, 1<<62); err == nil {
		t.Errorf("dilation 2^62, kernel 3: length %d, want an error", L)
	}
	for range 50000 {
		T, k, s, d := size(), size(), size(), size()
		l, r := size()-1, size()-1
		inRange := T >= 1 && k >= 1 && s >= 1 && d >= 1 && l >= 0 && r >= 0
		want, ok := outLenBig(T, k, s, l, r, d)
		ok = ok && inRange
		got, err := ConvOutLen(T, k, s, l, r, d)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("ConvOutLen(T %d, kernel %d, stride %d, pad %d+%d, dilation %d) = %d, %v; exact %d (valid %v)", T, k, s, l, r, d, got, err, want, ok)
		}
		p := rng.IntN(max(k, 1)/2+2) - rng.IntN(2) // now and then beyond kernel/2 or -1
		want, ok = outLenBig(T, k, s, p, p, 1)
		ok = ok && T >= 1 && k >= 1 && s >= 1 && p >= 0 && p <= k/2
		got, err = PoolOutLen(T, k, s, p)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("PoolOutLen(T %d, kernel %d, stride %d, pad %d) = %d, %v; exact %d (valid %v)", T, k, s, p, got, err, want, ok)
		}
		want, ok = outLenBig(T, 1, 1, l, r, 1)
		ok = ok && T >= 1 && l >= 0 && r >= 0
		got, err = PadOutLen(T, l, r)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("PadOutLen(T %d, %d, %d) = %d, %v; exact %d (valid %v)", T, l, r, got, err, want, ok)
		}
	}
}
