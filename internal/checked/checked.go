package checked

import "math/bits"

// Add returns a+b and whether it did not overflow.
func Add(a, b int) (int, bool) {
	s := a + b
	// Overflow iff a and b have the same sign and s has the other.
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

// Sub returns a-b and whether it did not overflow.
func Sub(a, b int) (int, bool) {
	d := a - b
	// Overflow iff a and b have different signs and d's sign is not a's.
	return d, (a >= 0) == (b >= 0) || (d >= 0) == (a >= 0)
}

// Mul returns a*b and whether it did not overflow.
func Mul(a, b int) (int, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	neg := (a < 0) != (b < 0)
	ua, ub := abs(a), abs(b)
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 {
		return 0, false
	}
	if neg {
		if lo > 1<<63 {
			return 0, false
		}
		return int(-lo), true // -(1<<63) wraps to itself, which is right
	}
	if lo > 1<<63-1 {
		return 0, false
	}
	return int(lo), true
}

// Prod returns the product of xs (1 for none) and whether no partial
// product overflowed.
func Prod(xs ...int) (int, bool) {
	p := 1
	for _, x := range xs {
		var ok bool
		if p, ok = Mul(p, x); !ok {
			return 0, false
		}
	}
	return p, true
}

// Sum returns the sum of xs and whether no partial sum overflowed.
func Sum(xs ...int) (int, bool) {
	s := 0
	for _, x := range xs {
		var ok bool
		if s, ok = Add(s, x); !ok {
			return 0, false
		}
	}
	return s, true
}

func abs(a int) uint64 {
	if a < 0 {
		return uint64(-(a + 1)) + 1
	}
	return uint64(a)
}
