package ops

// Pad is constant padding of every channel (PyTorch's F.pad(x, (Left,
// Right), value=Value) on (B, C, T)):
//
//	y[b,c,t] = x[b,c,t-Left] for Left <= t < Left+T, else Value;  t = 0..T+Left+Right-1.
type Pad struct {
	Left, Right int
	Value       float32
}

// OutLen is PadOutLen.
func (p Pad) OutLen(T int) (int, error) { return PadOutLen(T, p.Left, p.Right) }

// Forward writes y (dst, rows*(T+Left+Right) values) from x (rows*T values,
// rows = B*C).
func (p Pad) Forward(dst, x []float32, T int) { padForward(p, dst, x, T) }

// Backward writes dx[b,c,t] = dy[b,c,t+Left] (the constant gets no gradient).
func (p Pad) Backward(dx, dy []float32, T int) { padBackward(p, dx, dy, T) }

func (p Pad) mustOut(T int) int {
	L, err := p.OutLen(T)
	if err != nil {
		panic("ops: " + err.Error())
	}
	return L
}

func padForward[F Float](p Pad, dst, x []F, T int) {
	L := p.mustOut(T)
	rows := len(x) / T
	need("pad x", len(x), rows*T)
	need("pad dst", len(dst), rows*L)
	v := F(p.Value)
	for r := 0; r < rows; r++ {
		y := dst[r*L : (r+1)*L]
		for t := 0; t < p.Left; t++ {
			y[t] = v
		}
		copy(y[p.Left:p.Left+T], x[r*T:(r+1)*T])
		for t := p.Left + T; t < L; t++ {
			y[t] = v
		}
	}
}

func padBackward[F Float](p Pad, dx, dy []F, T int) {
	L := p.mustOut(T)
	rows := len(dx) / T
	need("pad dx", len(dx), rows*T)
	need("pad dy", len(dy), rows*L)
	for r := 0; r < rows; r++ {
		copy(dx[r*T:(r+1)*T], dy[r*L+p.Left:r*L+p.Left+T])
	}
}
