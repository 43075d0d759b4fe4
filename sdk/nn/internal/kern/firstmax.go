package kern

// FirstMax writes the first maximum of a and b element by element:
//
//	dst[i] = a[i] if a[i] is NaN; b[i] if b[i] > a[i] or b[i] is NaN; else a[i],
//
// i = 0..len(dst)-1: of two equal values (+0 and -0 among them) the first,
// of two NaNs the first, the scan order of a first-maximum reduction (a
// global max pool's). len(a) and len(b) must be at least len(dst); dst
// may be a or b.
func FirstMax(dst, a, b []float32) {
	if len(a) < len(dst) {
		shortPanic("FirstMax a", len(a), len(dst))
	}
	if len(b) < len(dst) {
		shortPanic("FirstMax b", len(b), len(dst))
	}
	n := len(dst)
	if useAVX2 && n >= minVec {
		m := n &^ (minVec - 1)
		firstMaxAVX2(&dst[0], &a[0], &b[0], m)
		if m == n {
			return
		}
		dst, a, b = dst[m:], a[m:n], b[m:n]
	}
	firstMaxGeneric(dst, a, b)
}

func firstMaxGeneric(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i, x := range a {
		y := b[i]
		if x == x && (y > x || y != y) {
			x = y
		}
		dst[i] = x
	}
}
