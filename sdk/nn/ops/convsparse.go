package ops

import "math"

// sparseShare: a sample's output gradient with at most one nonzero in
// sparseShare values takes convBackwardSparse. Behind a global max pool
// (through ReLUs) a channel's gradient is one step of its L; where more
// is nonzero (behind a max pool, a ReLU's half) the dense kernels are
// faster.
const sparseShare = 64

// sparseBlock is how many values sparseSteps scans between checks of
// its budget.
const sparseBlock = 64

// sparseSlack is how many nonzero values more than their share the
// first blocks may hold.
const sparseSlack = 4

// sparseSteps returns the positions of the nonzero values of dy, one
// sample's output gradient (a NaN counts as nonzero; -0 does not), and
// true if there are at most len(dy)/sparseShare of them. It gives up
// (false) as soon as the blocks scanned hold more than their share plus
// sparseSlack, so a dense gradient costs a block or a few. A block
// whose values are all ±0 is passed over after an OR of its bits; the
// others are listed without a data-dependent branch. The list is the
// scratch's, valid until the next call.
func (s *convScratch) sparseSteps(dy []float32) ([]int32, bool) {
	budget := len(dy) / sparseShare
	if cap(s.steps) < budget+sparseBlock {
		s.steps = make([]int32, budget+sparseBlock)
	}
	list := s.steps[:budget+sparseBlock]
	n := 0
	for b0 := 0; b0 < len(dy); b0 += sparseBlock {
		blk := dy[b0:min(b0+sparseBlock, len(dy))]
		var or uint32
		for _, v := range blk {
			or |= math.Float32bits(v)
		}
		if or<<1 == 0 {
			continue // ±0 only
		}
		for t, v := range blk {
			u := math.Float32bits(v) << 1 // the sign bit dropped
			list[n] = int32(b0 + t)
			n += int((u | -u) >> 31) // 1 unless v is ±0
		}
		if n > budget || n*sparseShare > b0+len(blk)+sparseSlack*sparseShare {
			return nil, false
		}
	}
	return list[:n], true
}

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
