package ops

import (
	"math"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// supportShare: a sample's output gradient nonzero at no more than
// L/supportShare of its L steps (in any channel) takes
// convBackwardSupport: behind a global max pool, one layer further down
// than convBackwardSparse's (K steps a channel of the layer above).
const supportShare = 4

// supportSteps returns the steps t < L at which some channel of dy (Cout
// rows of L) is nonzero (a NaN counts, ±0 does not), increasing, in the
// scratch's buffer (valid until the next call), and whether there are at
// most L/supportShare of them: it scans the steps a block at a time and
// gives up (false, the list cut short) as soon as the blocks scanned
// hold more, so a dense gradient costs a few blocks. one reports whether
// every channel is nonzero at one step at most (the gradient behind a
// global max pool), when ok.
func (s *convScratch) supportSteps(dy []float32, Cout, L int) (list []int32, one, ok bool) {
	if cap(s.steps) < L {
		s.steps = make([]int32, L)
	}
	if cap(s.mark) < L {
		s.mark = make([]uint32, L)
	}
	most := L / supportShare
	list = s.steps[:0]
	for t0 := 0; t0 < L; t0 += supportBlock {
		mark := s.mark[t0:min(t0+supportBlock, L)]
		clear(mark)
		for o := 0; o < Cout; o++ {
			for t, v := range dy[o*L+t0 : o*L+t0+len(mark)] {
				mark[t] |= math.Float32bits(v) << 1
			}
		}
		for t, m := range mark {
			if m != 0 {
				list = append(list, int32(t0+t))
			}
		}
		if len(list) > most {
			return list, false, false
		}
	}
	one = true
	for o := 0; o < Cout && one; o++ {
		n := 0
		for _, t := range list {
			if math.Float32bits(dy[o*L+int(t)])<<1 != 0 {
				n++
			}
		}
		one = n <= 1
	}
	return list, one, true
}

// supportBlock is how many steps supportSteps scans between checks of
// its bound.
const supportBlock = 64

// convBackwardSupport is the direct, unpadded convolution's backward
// pass of one sample whose output gradient dy (Cout x L) is zero outside
// the steps P (increasing): with the columns dy[:,t] and the windows
// x[:, t:t+K] of those steps gathered,
//
//	db[o] += sum_{t in P} dy[o,t],      (summed in order of t, then added)
//	dw    += sum_{t in P} dy[:,t] x[:, t:t+K]^T   (kern.Ger in order of t into a zeroed sum, then added)
//	dx[i, t+k] = sum_{t in P} sum_o w[o,i,k] dy[o,t]   (kern.GemvT a step, the windows added in order of t)
//
// every other term of the dense sums an exact zero. dx (nil if not
// wanted) is written, dw and db (nil if not wanted) added to. The sums
// take another order than the dense kernels' (rounding only): the
// layer-list engine's, whose bytes the paper's network keeps.
func convBackwardSupport(c Conv1D, sc *convScratch, dx, dw, db, dy, x, w []float32, T, L int, P []int32) {
	K, O, Cin := c.Kernel, c.Cout, c.Cin
	ck := Cin * K
	np := len(P)
	buf := sc.take(O*ck + O + np*O + 2*np*ck)
	G, buf := buf[:O*ck], buf[O*ck:]
	bs, buf := buf[:O], buf[O:]
	DY, buf := buf[:np*O], buf[np*O:]
	XW, DX := buf[:np*ck], buf[np*ck:]
	for o := 0; o < O; o++ {
		row := dy[o*L : (o+1)*L]
		for j, u := range P {
			DY[j*O+o] = row[u]
		}
	}
	if dw != nil || db != nil {
		clear(G)
		clear(bs)
		for i := 0; i < Cin; i++ {
			row := x[i*T : (i+1)*T]
			for j, u := range P {
				copy(XW[j*ck+i*K:j*ck+(i+1)*K], row[u:int(u)+K])
			}
		}
		for j := 0; j < np; j++ {
			dyv := DY[j*O : (j+1)*O]
			for o, v := range dyv {
				bs[o] += v
			}
			kern.Ger(G, ck, dyv, XW[j*ck:(j+1)*ck])
		}
		if dw != nil {
			for j, v := range G {
				dw[j] += v
			}
		}
		if db != nil {
			for o, v := range bs {
				db[o] += v
			}
		}
	}
	if dx == nil {
		return
	}
	for j := 0; j < np; j++ {
		kern.GemvT(DX[j*ck:(j+1)*ck], w, ck, DY[j*O:(j+1)*O])
	}
	clear(dx)
	for i := 0; i < Cin; i++ {
		row := dx[i*T : (i+1)*T]
		for j, u := range P {
			win := row[u : int(u)+K]
			for k, v := range DX[j*ck+i*K : j*ck+(i+1)*K] {
				win[k] += v
			}
		}
	}
}
