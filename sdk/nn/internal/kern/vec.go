package kern

// The vector kernels: the assembly where useAVX2 is set, their Go twins
// (lanes.go) otherwise, with the same bits. The arguments have been
// checked, and hold what the assembly reads (kern_amd64.go). The
// single-row kernels (Corr3, CorrK, Dot3, Dot, Sum, Axpy), called on
// short rows many times a map, choose in their own body instead: a
// wrapper here would cost them a call (1.5 ns, 8% of an 8-step Corr3).

// convx4Vec: dst, x and wp start where convx4AVX2's pointers point; bias
// (4 values) and rel are nil or not, as its pointers.
func convx4Vec(dst []float32, dstStride int, x []float32, xStride int, wp, bias, rel []float32, C, K, T int) {
	if useAVX2 {
		var b, r *float32
		if bias != nil {
			b = &bias[0]
		}
		if rel != nil {
			r = &rel[0]
		}
		convx4AVX2(&dst[0], dstStride, &x[0], xStride, &wp[0], b, r, C, K, T)
		return
	}
	convx4Lanes(dst, dstStride, x, xStride, wp, bias, rel, C, K, T)
}

func gradw3x4Vec(out *[12]float32, dy []float32, dyStride int, x []float32, T int) {
	if useAVX2 {
		gradw3x4AVX2(out, &dy[0], dyStride, &x[0], T)
		return
	}
	gradw3x4Lanes(out, dy, dyStride, x, T)
}

func gradw4x3Vec(out *[12]float32, dy []float32, dyStride int, x0, x1, x2 []float32, T int) {
	if useAVX2 {
		gradw4x3AVX2(out, &dy[0], dyStride, &x0[0], &x1[0], &x2[0], T)
		return
	}
	gradw4x3Lanes(out, dy, dyStride, x0, x1, x2, T)
}

func gerVec(a []float32, lda int, x, y []float32) {
	if useAVX2 {
		gerAVX2(&a[0], lda, x, y)
		return
	}
	gerLanes(a, lda, x, y)
}

func gemvTVec(y, a []float32, lda int, x []float32) {
	if useAVX2 {
		gemvTAVX2(y, &a[0], lda, x)
		return
	}
	gemvTLanes(y, a, lda, x)
}

func expVec(dst, x []float32, c *[12]float32) {
	if useAVX2 {
		expAVX2(dst, x, c)
		return
	}
	expLanes(dst, x, c)
}

func sum64Vec(x []float32) float64 {
	if useAVX2 {
		return sum64AVX2(x)
	}
	return sum64Lanes(x)
}

func sqDev64Vec(x []float32, c float64) float64 {
	if useAVX2 {
		return sqDev64AVX2(x, c)
	}
	return sqDev64Lanes(x, c)
}

func sumDot64Vec(x, y []float32) (sx, sxy float64) {
	if useAVX2 {
		return sumDot64AVX2(x, y)
	}
	return sumDot64Lanes(x, y)
}
