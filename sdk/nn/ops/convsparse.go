package ops

// convBackwardSparse is the direct convolution's (stride, dilation and
// groups 1) backward pass of one sample whose output gradient dy (Cout x
// L) is nonzero at the positions steps (o*L + t, increasing) only: every
// other term of the dense sums is an exact zero, so
//
//	dw[o,i,k] += v x[i,t+k-PadLeft],  dx[i,t+k-PadLeft] += w[o,i,k] v,  v = dy[o,t],
//
// the padding's terms left out (they read or write zeros). dx (Cin x T,
// nil if not wanted) is written, dw (nil if not wanted) added to. The
// sums take another order than the dense kernels' (rounding only).
func convBackwardSparse(c Conv1D, dx, dw, dy, x, w []float32, T, L int, steps []int32) {
	if dx != nil {
		clear(dx)
	}
	K := c.Kernel
	for _, s := range steps {
		o, t := int(s)/L, int(s)%L
		v := dy[s]
		// Taps k0..k1-1 read input steps inside 0..T-1.
		u0 := t - c.PadLeft
		k0, k1 := max(0, -u0), min(K, T-u0)
		for i := 0; i < c.Cin; i++ {
			xi := x[i*T : (i+1)*T]
			wk := w[(o*c.Cin+i)*K : (o*c.Cin+i+1)*K]
			if dw != nil {
				dwk := dw[(o*c.Cin+i)*K : (o*c.Cin+i+1)*K]
				for k := k0; k < k1; k++ {
					dwk[k] += v * xi[u0+k]
				}
			}
			if dx != nil {
				dxi := dx[i*T : (i+1)*T]
				for k := k0; k < k1; k++ {
					dxi[u0+k] += wk[k] * v
				}
			}
		}
	}
}
