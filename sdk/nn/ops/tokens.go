package ops

import (
	"fmt"
	"math"
)

// This file holds the kernels of a Transformer's ops on values of rows:
// a sample is R rows of N values (R*N, row-major; for a (batch, tokens,
// features) value R is the tokens and N the features). The sums run in
// float64 unless a comment says otherwise.

// Transpose writes, for each of the B samples of x (R*N values each),
//
//	dst[b, n, r] = x[b, r, n]
//
// (dst holds B*N*R values). Its backward pass is Transpose with R and N
// swapped.
func Transpose[F Float](dst, x []F, R, N int) {
	positive("transpose R", R)
	positive("transpose N", N)
	B := len(x) / (R * N)
	need("transpose x", len(x), B*R*N)
	need("transpose dst", len(dst), len(x))
	for b := 0; b < B; b++ {
		xs, ys := x[b*R*N:(b+1)*R*N], dst[b*R*N:(b+1)*R*N]
		for r := 0; r < R; r++ {
			row := xs[r*N : (r+1)*N]
			for n, v := range row {
				ys[n*R+r] = v
			}
		}
	}
}

// LayerNorm is PyTorch's nn.LayerNorm over the last N values of each row:
// with m and v the row's mean and biased variance,
//
//	y[r,n] = (x[r,n] - m) / sqrt(v + Eps) * w[n] + b[n],
//
// in float64, rounded once; w (b) nil stands for ones (zeros).
type LayerNorm struct {
	N   int
	Eps float64
}

// Forward writes y (dst) from x, both a multiple of N values.
func (l LayerNorm) Forward(dst, x, w, b []float32) { layerNormForward(l, dst, x, w, b) }

// Backward writes dx and adds dw[n] += sum_r dy[r,n] xh[r,n] and db[n] +=
// sum_r dy[r,n], with xh the normalised input and, for g = dy w,
//
//	dx[r,n] = (g[n] - mean(g) - xh[r,n] mean(g xh)) / sqrt(v + Eps);
//
// any of dx, dw, db may be nil.
func (l LayerNorm) Backward(dx, dw, db, dy, x, w []float32) {
	layerNormBackward(l, dx, dw, db, dy, x, w)
}

func (l LayerNorm) rows(nx, ny int) int {
	positive("layernorm N", l.N)
	R := nx / l.N
	need("layernorm x", nx, R*l.N)
	need("layernorm y", ny, nx)
	return R
}

// rowStats returns a row's mean m and 1/sqrt(v + eps), v its biased
// variance, in float64.
func rowStats[F Float](xs []F, eps float64) (m, inv float64) {
	for _, v := range xs {
		m += float64(v)
	}
	m /= float64(len(xs))
	var v float64
	for _, e := range xs {
		d := float64(e) - m
		v += d * d
	}
	return m, 1 / math.Sqrt(v/float64(len(xs))+eps)
}

func layerNormForward[F Float](l LayerNorm, dst, x, w, b []F) {
	R := l.rows(len(x), len(dst))
	needOptF("layernorm w", w, l.N)
	needOptF("layernorm b", b, l.N)
	for r := 0; r < R; r++ {
		xs, ys := x[r*l.N:(r+1)*l.N], dst[r*l.N:(r+1)*l.N]
		m, inv := rowStats(xs, l.Eps)
		for n, e := range xs {
			y := (float64(e) - m) * inv
			if w != nil {
				y *= float64(w[n])
			}
			if b != nil {
				y += float64(b[n])
			}
			ys[n] = F(y)
		}
	}
}

func layerNormBackward[F Float](l LayerNorm, dx, dw, db, dy, x, w []F) {
	R := l.rows(len(x), len(dy))
	needOptF("layernorm dx", dx, len(x))
	needOptF("layernorm dw", dw, l.N)
	needOptF("layernorm db", db, l.N)
	needOptF("layernorm w", w, l.N)
	N := float64(l.N)
	for r := 0; r < R; r++ {
		xs, gs := x[r*l.N:(r+1)*l.N], dy[r*l.N:(r+1)*l.N]
		m, inv := rowStats(xs, l.Eps)
		var sg, sgx float64
		for n, e := range xs {
			xh := (float64(e) - m) * inv
			g := float64(gs[n])
			if db != nil {
				db[n] += F(g)
			}
			if dw != nil {
				dw[n] += F(g * xh)
			}
			if w != nil {
				g *= float64(w[n])
			}
			sg += g
			sgx += g * xh
		}
		if dx == nil {
			continue
		}
		sg, sgx = sg/N, sgx/N
		for n, e := range xs {
			xh := (float64(e) - m) * inv
			g := float64(gs[n])
			if w != nil {
				g *= float64(w[n])
			}
			dx[r*l.N+n] = F((g - sg - xh*sgx) * inv)
		}
	}
}

// MatMul is a batched matrix product, sample by sample: a of M x K and b
// of K x N values give
//
//	y[m,n] = sum_k a[m,k] b[k,n]
//
// (ONNX's and PyTorch's matmul of two (batch, M, K) and (batch, K, N)
// values).
type MatMul struct{ M, K, N int }

func (p MatMul) batch(na, nb, ny int) int {
	positive("matmul M", p.M)
	positive("matmul K", p.K)
	positive("matmul N", p.N)
	B := na / (p.M * p.K)
	need("matmul a", na, B*p.M*p.K)
	need("matmul b", nb, B*p.K*p.N)
	need("matmul y", ny, B*p.M*p.N)
	return B
}

// Forward writes y (dst) from a and b.
func (p MatMul) Forward(dst, a, b []float32) { matMulForward(p, dst, a, b) }

// Backward writes da[m,k] = sum_n dy[m,n] b[k,n] and db[k,n] = sum_m
// a[m,k] dy[m,n]; either may be nil.
func (p MatMul) Backward(da, db, dy, a, b []float32) { matMulBackward(p, da, db, dy, a, b) }

func matMulForward[F Float](p MatMul, dst, a, b []F) {
	B := p.batch(len(a), len(b), len(dst))
	for s := 0; s < B; s++ {
		as, bs, ys := a[s*p.M*p.K:], b[s*p.K*p.N:], dst[s*p.M*p.N:]
		for m := 0; m < p.M; m++ {
			for n := 0; n < p.N; n++ {
				var v float64
				for k := 0; k < p.K; k++ {
					v += float64(as[m*p.K+k]) * float64(bs[k*p.N+n])
				}
				ys[m*p.N+n] = F(v)
			}
		}
	}
}

func matMulBackward[F Float](p MatMul, da, db, dy, a, b []F) {
	B := p.batch(len(a), len(b), len(dy))
	needOptF("matmul da", da, len(a))
	needOptF("matmul db", db, len(b))
	for s := 0; s < B; s++ {
		as, bs, gs := a[s*p.M*p.K:], b[s*p.K*p.N:], dy[s*p.M*p.N:]
		if da != nil {
			ds := da[s*p.M*p.K:]
			for m := 0; m < p.M; m++ {
				for k := 0; k < p.K; k++ {
					var v float64
					for n := 0; n < p.N; n++ {
						v += float64(gs[m*p.N+n]) * float64(bs[k*p.N+n])
					}
					ds[m*p.K+k] = F(v)
				}
			}
		}
		if db != nil {
			ds := db[s*p.K*p.N:]
			for k := 0; k < p.K; k++ {
				for n := 0; n < p.N; n++ {
					var v float64
					for m := 0; m < p.M; m++ {
						v += float64(as[m*p.K+k]) * float64(gs[m*p.N+n])
					}
					ds[k*p.N+n] = F(v)
				}
			}
		}
	}
}

// Attention is PyTorch's nn.MultiheadAttention as self-attention of one
// (L tokens, E features) sample, batch_first, without masks: with
// [q k v] = x Wᵀ + bi (W the in-projection, 3E x E, bi its bias), for
// each head h of the Heads (d = E/Heads features each, the columns
// h*d..(h+1)*d-1 of q, k and v),
//
//	P_h = softmax_rows(q_h k_hᵀ / sqrt(d)),  o_h = P_h v_h,
//	y = [o_1 .. o_H] Woᵀ + bo
//
// (Wo, E x E, and bo the out-projection). In float64, rounded once.
type Attention struct{ L, E, Heads int }

// Check says whether the sizes are accepted.
func (a Attention) Check() error {
	if a.L < 1 || a.E < 1 || a.Heads < 1 || a.E%a.Heads != 0 {
		return fmt.Errorf("attention of %d tokens of %d features in %d heads: needs tokens, features and heads >= 1, the heads dividing the features", a.L, a.E, a.Heads)
	}
	return nil
}

// ScratchLen is the number of float64 scratch values Forward and Backward
// need (whatever the batch).
func (a Attention) ScratchLen() int {
	return 3*a.L*a.E + a.Heads*a.L*a.L + a.L*a.E + // qkv, P, o
		3*a.L*a.E + a.L*a.L + a.L*a.E // dqkv, dP, do
}

// split cuts the scratch (ScratchLen values) into the forward pass's
// q, k, v, attention weights and head outputs, and the backward pass's
// gradients of them (dP one head at a time).
func (a Attention) split(s []float64) (qkv, P, o, dqkv, dP, do []float64) {
	L, E := a.L, a.E
	take := func(n int) []float64 { t := s[:n:n]; s = s[n:]; return t }
	return take(3 * L * E), take(a.Heads * L * L), take(L * E), take(3 * L * E), take(L * L), take(L * E)
}

func (a Attention) batch(nx, ny, nw, nbi, nwo, nbo, ns int) int {
	if err := a.Check(); err != nil {
		panic("ops: " + err.Error())
	}
	S := a.L * a.E
	B := nx / S
	need("attention x", nx, B*S)
	need("attention y", ny, nx)
	need("attention in_proj_weight", nw, 3*a.E*a.E)
	need("attention in_proj_bias", nbi, 3*a.E)
	need("attention out_proj.weight", nwo, a.E*a.E)
	need("attention out_proj.bias", nbo, a.E)
	if ns < a.ScratchLen() {
		panic(fmt.Sprintf("ops: attention scratch of %d values, needs %d", ns, a.ScratchLen()))
	}
	return B
}

// Forward writes y (dst) from x; keep, if not nil (B*Heads*L*L values),
// receives each sample's attention weights P. A dropout mask (B*Heads*L*L
// values: 0, or 1/(1-p) for a kept weight) multiplies P before its
// product with v when drop is not nil (a training pass's attention
// dropout).
func (a Attention) Forward(dst, x, w, bi, wo, bo, drop []float32, scratch []float64) {
	attentionForward(a, dst, x, w, bi, wo, bo, drop, scratch)
}

// Backward writes dx (if not nil) and adds the parameters' gradients
// (dw, dbi, dwo, dbo; each may be nil), recomputing the forward pass's
// intermediates from x (and drop, as in Forward).
func (a Attention) Backward(dx, dw, dbi, dwo, dbo, dy, x, w, bi, wo, bo, drop []float32, scratch []float64) {
	attentionBackward(a, dx, dw, dbi, dwo, dbo, dy, x, w, bi, wo, bo, drop, scratch)
}

// attentionInner writes qkv (L x 3E) = x Wᵀ + bi, and P and o of every
// head, for one sample xs.
func attentionInner[F Float](a Attention, xs []F, w, bi []F, drop []F, qkv, P, o []float64) {
	L, E, H := a.L, a.E, a.Heads
	d := E / H
	for l := 0; l < L; l++ {
		row := xs[l*E : (l+1)*E]
		for j := 0; j < 3*E; j++ {
			wr := w[j*E : (j+1)*E]
			v := float64(bi[j])
			for k, xv := range row {
				v += float64(wr[k]) * float64(xv)
			}
			qkv[l*3*E+j] = v
		}
	}
	scale := 1 / math.Sqrt(float64(d))
	for h := 0; h < H; h++ {
		Ph := P[h*L*L : (h+1)*L*L]
		for i := 0; i < L; i++ {
			q := qkv[i*3*E+h*d : i*3*E+h*d+d]
			m := math.Inf(-1)
			for j := 0; j < L; j++ {
				k := qkv[j*3*E+E+h*d : j*3*E+E+h*d+d]
				var s float64
				for t := range q {
					s += q[t] * k[t]
				}
				s *= scale
				Ph[i*L+j] = s
				m = max(m, s)
			}
			var z float64
			for j := 0; j < L; j++ {
				Ph[i*L+j] = math.Exp(Ph[i*L+j] - m)
				z += Ph[i*L+j]
			}
			for j := 0; j < L; j++ {
				Ph[i*L+j] /= z
			}
		}
		for i := 0; i < L; i++ {
			oi := o[i*E+h*d : i*E+h*d+d]
			clear(oi)
			for j := 0; j < L; j++ {
				p := Ph[i*L+j]
				if drop != nil {
					p *= float64(drop[h*L*L+i*L+j])
				}
				v := qkv[j*3*E+2*E+h*d : j*3*E+2*E+h*d+d]
				for t := range oi {
					oi[t] += p * v[t]
				}
			}
		}
	}
}

func attentionForward[F Float](a Attention, dst, x, w, bi, wo, bo, drop []F, scratch []float64) {
	B := a.batch(len(x), len(dst), len(w), len(bi), len(wo), len(bo), len(scratch))
	L, E, H := a.L, a.E, a.Heads
	needOptF("attention dropout mask", drop, B*H*L*L)
	qkv, P, o, _, _, _ := a.split(scratch)
	for b := 0; b < B; b++ {
		var db []F
		if drop != nil {
			db = drop[b*H*L*L : (b+1)*H*L*L]
		}
		attentionInner(a, x[b*L*E:(b+1)*L*E], w, bi, db, qkv, P, o)
		ys := dst[b*L*E : (b+1)*L*E]
		for l := 0; l < L; l++ {
			or := o[l*E : (l+1)*E]
			for j := 0; j < E; j++ {
				wr := wo[j*E : (j+1)*E]
				v := float64(bo[j])
				for k, ov := range or {
					v += float64(wr[k]) * ov
				}
				ys[l*E+j] = F(v)
			}
		}
	}
}

func attentionBackward[F Float](a Attention, dx, dw, dbi, dwo, dbo, dy, x, w, bi, wo, bo, drop []F, scratch []float64) {
	B := a.batch(len(x), len(dy), len(w), len(bi), len(wo), len(bo), len(scratch))
	L, E, H := a.L, a.E, a.Heads
	d := E / H
	needOptF("attention dx", dx, len(x))
	needOptF("attention dw", dw, len(w))
	needOptF("attention dbi", dbi, len(bi))
	needOptF("attention dwo", dwo, len(wo))
	needOptF("attention dbo", dbo, len(bo))
	needOptF("attention dropout mask", drop, B*H*L*L)
	qkv, P, o, dqkv, dP, do := a.split(scratch)
	scale := 1 / math.Sqrt(float64(d))
	for b := 0; b < B; b++ {
		var db []F
		if drop != nil {
			db = drop[b*H*L*L : (b+1)*H*L*L]
		}
		xs := x[b*L*E : (b+1)*L*E]
		attentionInner(a, xs, w, bi, db, qkv, P, o)
		gs := dy[b*L*E : (b+1)*L*E]
		// y = o Woᵀ + bo
		clear(do)
		for l := 0; l < L; l++ {
			for j := 0; j < E; j++ {
				g := float64(gs[l*E+j])
				if dbo != nil {
					dbo[j] += F(g)
				}
				wr := wo[j*E : (j+1)*E]
				for k := 0; k < E; k++ {
					do[l*E+k] += g * float64(wr[k])
					if dwo != nil {
						dwo[j*E+k] += F(g * o[l*E+k])
					}
				}
			}
		}
		clear(dqkv)
		for h := 0; h < H; h++ {
			Ph := P[h*L*L : (h+1)*L*L]
			// o_h = (P_h ∘ mask) v_h
			for i := 0; i < L; i++ {
				doi := do[i*E+h*d : i*E+h*d+d]
				for j := 0; j < L; j++ {
					v := qkv[j*3*E+2*E+h*d : j*3*E+2*E+h*d+d]
					var s float64
					for t := range doi {
						s += doi[t] * v[t]
					}
					m := 1.0
					if db != nil {
						m = float64(db[h*L*L+i*L+j])
					}
					dP[i*L+j] = s * m
					p := Ph[i*L+j] * m
					dv := dqkv[j*3*E+2*E+h*d : j*3*E+2*E+h*d+d]
					for t := range dv {
						dv[t] += p * doi[t]
					}
				}
			}
			// softmax rows: dS = P (dP - sum_j dP P)
			for i := 0; i < L; i++ {
				var s float64
				for j := 0; j < L; j++ {
					s += dP[i*L+j] * Ph[i*L+j]
				}
				q := qkv[i*3*E+h*d : i*3*E+h*d+d]
				dq := dqkv[i*3*E+h*d : i*3*E+h*d+d]
				for j := 0; j < L; j++ {
					g := Ph[i*L+j] * (dP[i*L+j] - s) * scale
					k := qkv[j*3*E+E+h*d : j*3*E+E+h*d+d]
					dk := dqkv[j*3*E+E+h*d : j*3*E+E+h*d+d]
					for t := range q {
						dq[t] += g * k[t]
						dk[t] += g * q[t]
					}
				}
			}
		}
		// qkv = x Wᵀ + bi
		var dxs []F
		if dx != nil {
			dxs = dx[b*L*E : (b+1)*L*E]
		}
		for l := 0; l < L; l++ {
			row := xs[l*E : (l+1)*E]
			g := dqkv[l*3*E : (l+1)*3*E]
			for j, gj := range g {
				if dbi != nil {
					dbi[j] += F(gj)
				}
				if dw != nil {
					wr := dw[j*E : (j+1)*E]
					for k, xv := range row {
						wr[k] += F(gj * float64(xv))
					}
				}
			}
			if dxs != nil {
				for k := 0; k < E; k++ {
					var s float64
					for j, gj := range g {
						s += gj * float64(w[j*E+k])
					}
					dxs[l*E+k] = F(s)
				}
			}
		}
	}
}

// Broadcast describes an elementwise binary op on samples of R x N
// values whose operands are R x N, R x 1, 1 x N or 1 x 1 values (each
// axis of an operand the output's, or 1: ONNX's and PyTorch's
// broadcasting on the sample's axes).
type Broadcast struct {
	R, N   int
	AR, AN int // a's sizes
	BR, BN int // b's sizes
	Op     byte
}

// BinaryOps are the Op bytes Binary accepts: '+', '-', '*', '/'.
const BinaryOps = "+-*/"

// at is the index of (r, n) in an operand of sizes (rr, nn).
func at(r, n, rr, nn int) int {
	if rr == 1 {
		r = 0
	}
	if nn == 1 {
		n = 0
	}
	return r*nn + n
}

func (p Broadcast) sizes(na, nb, ny int) int {
	positive("binary R", p.R)
	positive("binary N", p.N)
	B := ny / (p.R * p.N)
	need("binary y", ny, B*p.R*p.N)
	need("binary a", na, B*p.AR*p.AN)
	need("binary b", nb, B*p.BR*p.BN)
	return B
}

// Binary writes, for each sample, y[r,n] = a[r,n] op b[r,n], the operands
// broadcast (float32 arithmetic, as PyTorch's).
func Binary[F Float](p Broadcast, dst, a, b []F) {
	B := p.sizes(len(a), len(b), len(dst))
	sa, sb, sy := p.AR*p.AN, p.BR*p.BN, p.R*p.N
	for s := 0; s < B; s++ {
		as, bs, ys := a[s*sa:(s+1)*sa], b[s*sb:(s+1)*sb], dst[s*sy:(s+1)*sy]
		for r := 0; r < p.R; r++ {
			for n := 0; n < p.N; n++ {
				x, y := as[at(r, n, p.AR, p.AN)], bs[at(r, n, p.BR, p.BN)]
				var v F
				switch p.Op {
				case '+':
					v = x + y
				case '-':
					v = x - y
				case '*':
					v = x * y
				case '/':
					v = x / y
				default:
					panic("ops: binary op " + string(p.Op))
				}
				ys[r*p.N+n] = v
			}
		}
	}
}

// BinaryBackward writes da and db (either may be nil) from dy: each
// operand's gradient summed over the axes it is broadcast along,
//
//	+: da = dy, db = dy;  -: da = dy, db = -dy;  *: da = dy b, db = dy a;
//	/: da = dy / b, db = -dy a / b²,
//
// the sums in float64.
func BinaryBackward[F Float](p Broadcast, da, db, dy, a, b []F) {
	B := p.sizes(len(a), len(b), len(dy))
	needOptF("binary da", da, len(a))
	needOptF("binary db", db, len(b))
	sa, sb, sy := p.AR*p.AN, p.BR*p.BN, p.R*p.N
	acc := func(dst []F, i int, v float64) { dst[i] = F(float64(dst[i]) + v) }
	for s := 0; s < B; s++ {
		as, bs, gs := a[s*sa:(s+1)*sa], b[s*sb:(s+1)*sb], dy[s*sy:(s+1)*sy]
		var das, dbs []F
		if da != nil {
			das = da[s*sa : (s+1)*sa]
			clear(das)
		}
		if db != nil {
			dbs = db[s*sb : (s+1)*sb]
			clear(dbs)
		}
		for r := 0; r < p.R; r++ {
			for n := 0; n < p.N; n++ {
				ia, ib := at(r, n, p.AR, p.AN), at(r, n, p.BR, p.BN)
				g, x, y := float64(gs[r*p.N+n]), float64(as[ia]), float64(bs[ib])
				var ga, gb float64
				switch p.Op {
				case '+':
					ga, gb = g, g
				case '-':
					ga, gb = g, -g
				case '*':
					ga, gb = g*y, g*x
				case '/':
					ga, gb = g/y, -g*x/(y*y)
				}
				if das != nil {
					acc(das, ia, ga)
				}
				if dbs != nil {
					acc(dbs, ib, gb)
				}
			}
		}
	}
}

// Affine writes, for each sample, y[r,n] = (x[r,n] w[r,n] + c[r,n]) s + t,
// w and c broadcast from WR x WN and CR x CN values (nil: ones, zeros; the
// sizes then ignored), s and t scalars (float32 arithmetic, in that
// order: an ONNX Mul, Add and the scalar Mul and Add of a constant).
type Affine struct {
	R, N   int
	WR, WN int
	CR, CN int
	S, T   float32
}

// Forward writes y (dst) from x.
func (p Affine) Forward(dst, x, w, c []float32) { affineForward(p, dst, x, w, c) }

// Backward writes dx = dy w s (if dx is not nil) and adds dw += sum dy x s
// and dc += sum dy s over the broadcast axes (the sums in float64).
func (p Affine) Backward(dx, dw, dc, dy, x, w []float32) { affineBackward(p, dx, dw, dc, dy, x, w) }

func (p Affine) check(nx, ny int) int {
	positive("affine R", p.R)
	positive("affine N", p.N)
	S := p.R * p.N
	B := nx / S
	need("affine x", nx, B*S)
	need("affine y", ny, nx)
	return B
}

func affineForward[F Float](p Affine, dst, x, w, c []F) {
	B := p.check(len(x), len(dst))
	needOptF("affine w", w, p.WR*p.WN)
	needOptF("affine c", c, p.CR*p.CN)
	S := p.R * p.N
	s, t := F(p.S), F(p.T)
	for b := 0; b < B; b++ {
		xs, ys := x[b*S:(b+1)*S], dst[b*S:(b+1)*S]
		for r := 0; r < p.R; r++ {
			for n := 0; n < p.N; n++ {
				v := xs[r*p.N+n]
				if w != nil {
					v *= w[at(r, n, p.WR, p.WN)]
				}
				if c != nil {
					v += c[at(r, n, p.CR, p.CN)]
				}
				if s != 1 {
					v *= s
				}
				if t != 0 {
					v += t
				}
				ys[r*p.N+n] = v
			}
		}
	}
}

func affineBackward[F Float](p Affine, dx, dw, dc, dy, x, w []F) {
	B := p.check(len(x), len(dy))
	needOptF("affine dx", dx, len(x))
	needOptF("affine dw", dw, p.WR*p.WN)
	needOptF("affine dc", dc, p.CR*p.CN)
	S := p.R * p.N
	s := float64(p.S)
	for b := 0; b < B; b++ {
		xs, gs := x[b*S:(b+1)*S], dy[b*S:(b+1)*S]
		for r := 0; r < p.R; r++ {
			for n := 0; n < p.N; n++ {
				g := float64(gs[r*p.N+n]) * s
				if dc != nil {
					i := at(r, n, p.CR, p.CN)
					dc[i] = F(float64(dc[i]) + g)
				}
				if dw != nil {
					i := at(r, n, p.WR, p.WN)
					dw[i] = F(float64(dw[i]) + g*float64(xs[r*p.N+n]))
				}
				if dx != nil {
					if w != nil {
						g *= float64(w[at(r, n, p.WR, p.WN)])
					}
					dx[b*S+r*p.N+n] = F(g)
				}
			}
		}
	}
}

// Pow writes y = x^e elementwise (x*x when e is 2, sqrt(x) when e is 0.5,
// as PyTorch computes them; math.Pow in float64 otherwise).
func Pow[F Float](dst, x []F, e float64) {
	need("pow dst", len(dst), len(x))
	for i, v := range x {
		switch e {
		case 2:
			dst[i] = v * v
		case 1:
			dst[i] = v
		default:
			dst[i] = F(math.Pow(float64(v), e))
		}
	}
}

// PowBackward writes dx = dy e x^(e-1).
func PowBackward[F Float](dx, dy, x []F, e float64) {
	need("pow dx", len(dx), len(x))
	need("pow dy", len(dy), len(x))
	for i, v := range x {
		var g float64
		switch e {
		case 2:
			g = 2 * float64(v)
		case 1:
			g = 1
		default:
			g = e * math.Pow(float64(v), e-1)
		}
		dx[i] = F(float64(dy[i]) * g)
	}
}

// MeanRows writes, for each sample of R x N values, the mean of its rows,
// y[n] = (1/R) sum_r x[r,n] (N values a sample), in float64.
func MeanRows[F Float](dst, x []F, R, N int) {
	positive("meanrows R", R)
	positive("meanrows N", N)
	B := len(x) / (R * N)
	need("meanrows x", len(x), B*R*N)
	need("meanrows dst", len(dst), B*N)
	for b := 0; b < B; b++ {
		xs := x[b*R*N : (b+1)*R*N]
		for n := 0; n < N; n++ {
			var s float64
			for r := 0; r < R; r++ {
				s += float64(xs[r*N+n])
			}
			dst[b*N+n] = F(s / float64(R))
		}
	}
}

// MeanRowsBackward writes dx[r,n] = dy[n] / R.
func MeanRowsBackward[F Float](dx, dy []F, R, N int) {
	B := len(dy) / N
	need("meanrows dx", len(dx), B*R*N)
	for b := 0; b < B; b++ {
		for r := 0; r < R; r++ {
			for n := 0; n < N; n++ {
				dx[(b*R+r)*N+n] = F(float64(dy[b*N+n]) / float64(R))
			}
		}
	}
}

// Sqrt writes y = sqrt(x); SqrtBackward dx = dy / (2 y) from the output y.
func Sqrt(dst, x []float32) { pointwise(dst, x, math.Sqrt) }

// SqrtBackward writes dx = dy / (2 sqrt(x)).
func SqrtBackward(dx, dy, x []float32) {
	pointwiseGrad(dx, dy, x, func(v float64) float64 { return 0.5 / math.Sqrt(v) })
}

// Erf writes y = erf(x).
func Erf(dst, x []float32) { pointwise(dst, x, math.Erf) }

// ErfBackward writes dx = dy 2/sqrt(pi) exp(-x²).
func ErfBackward(dx, dy, x []float32) {
	pointwiseGrad(dx, dy, x, func(v float64) float64 { return 2 / math.Sqrt(math.Pi) * math.Exp(-v*v) })
}

// GELUTanh writes PyTorch's gelu(x, approximate="tanh"),
//
//	y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))).
func GELUTanh(dst, x []float32) { pointwise(dst, x, geluTanh) }

// GELUTanhBackward writes dx = dy y'(x).
func GELUTanhBackward(dx, dy, x []float32) { pointwiseGrad(dx, dy, x, geluTanhGrad) }

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func geluTanhGrad(x float64) float64 {
	k := math.Sqrt(2 / math.Pi)
	u := k * (x + 0.044715*x*x*x)
	t := math.Tanh(u)
	return 0.5*(1+t) + 0.5*x*(1-t*t)*k*(1+3*0.044715*x*x)
}
