package ops

// Add: dst[j] = a[j] + b[j] (same shapes; dst may be a or b).
func Add(dst, a, b []float32) { addForward(dst, a, b) }

// AddBackward writes the gradient of both inputs, da = db = dy (either
// may be nil).
func AddBackward(da, db, dy []float32) {
	needOpt("add da", da, len(dy))
	needOpt("add db", db, len(dy))
	copy(da, dy)
	copy(db, dy)
}

func addForward[F Float](dst, a, b []F) {
	need("add b", len(b), len(a))
	need("add dst", len(dst), len(a))
	for j := range a {
		dst[j] = a[j] + b[j]
	}
}

// Concat joins inputs xs[i] of (B, chans[i], T) along channels into dst of
// (B, sum chans, T) (PyTorch's torch.cat(xs, dim=1)):
//
//	y[b, c_i + c, t] = xs[i][b, c, t],  c_i = chans[0] + ... + chans[i-1].
func Concat(dst []float32, xs [][]float32, chans []int, T int) { concatForward(dst, xs, chans, T) }

// ConcatBackward splits dy back: dxs[i][b,c,t] = dy[b, c_i + c, t]; a nil
// dxs[i] is skipped.
func ConcatBackward(dxs [][]float32, dy []float32, chans []int, T int) {
	concatBackward(dxs, dy, chans, T)
}

func concatDims(n int, chans []int, T, total int) (B, C int) {
	need("concat chans", len(chans), n)
	positive("concat T", T)
	for _, c := range chans {
		positive("concat channels", c)
		C += c
	}
	B = total / (C * T)
	need("concat output", total, B*C*T)
	return B, C
}

func concatForward[F Float](dst []F, xs [][]F, chans []int, T int) {
	B, C := concatDims(len(xs), chans, T, len(dst))
	for i, x := range xs {
		need("concat input", len(x), B*chans[i]*T)
	}
	for b := 0; b < B; b++ {
		off := b * C * T
		for i, x := range xs {
			n := chans[i] * T
			copy(dst[off:off+n], x[b*n:(b+1)*n])
			off += n
		}
	}
}

func concatBackward[F Float](dxs [][]F, dy []F, chans []int, T int) {
	B, C := concatDims(len(dxs), chans, T, len(dy))
	for i, dx := range dxs {
		if dx != nil {
			need("concat input gradient", len(dx), B*chans[i]*T)
		}
	}
	for b := 0; b < B; b++ {
		off := b * C * T
		for i, dx := range dxs {
			n := chans[i] * T
			if dx != nil {
				copy(dx[b*n:(b+1)*n], dy[off:off+n])
			}
			off += n
		}
	}
}
