package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sparseCase is a direct convolution on B samples with a random hot
// gradient (one step a row, some rows zero) or steps gradient (a random
// support a sample; one dense sample and one over the supportShare
// bound), and a ReLU output to mask by.
type sparseCase struct {
	c          Conv1D
	B, T, L    int
	x, w, relu []float32
}

func newSparseCase(r *rand.Rand, pl, pr int) sparseCase {
	c := Conv1D{Cin: 3, Cout: 5, Kernel: 3, Stride: 1, Dilation: 1, Groups: 1, PadLeft: pl, PadRight: pr}
	const B, T = 5, 48
	L, err := c.OutLen(T)
	if err != nil {
		panic(err)
	}
	s := sparseCase{c: c, B: B, T: T, L: L}
	s.x, s.w, s.relu = make([]float32, B*c.Cin*T), make([]float32, c.WeightLen()), make([]float32, B*c.Cout*L)
	for _, v := range [][]float32{s.x, s.w, s.relu} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	for i := range s.relu {
		s.relu[i] = max(s.relu[i], 0) // a ReLU's output: -0 never, +0 often
	}
	return s
}

// dense is the reference: the float64 generic backward of the formed
// gradient dy, masked by relu if asked.
func (s sparseCase) dense(dy []float32, relu bool) (dx, dw, db []float64) {
	g := to64(dy)
	if relu {
		for i, y := range s.relu {
			if !(y > 0) {
				g[i] = 0
			}
		}
	}
	dx, dw, db = make([]float64, len(s.x)), make([]float64, len(s.w)), make([]float64, s.c.Cout)
	convBackward(s.c, dx, dw, db, g, to64(s.x), to64(s.w), s.T)
	return dx, dw, db
}

// checkClose compares a float32 result with the float64 reference up to
// float32 rounding of sums of magnitude abs.
func checkClose(t *testing.T, what string, got []float32, want, abs []float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= 1e-5*(abs[i]+1)) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestConvBackwardHot: BackwardHot equals the dense backward of the
// formed gradient (GlobalMaxPoolBackward of the hot values) up to
// rounding, with and without the ReLU's mask and padding; dx is written
// on dxSteps and is zero off them (stale values elsewhere are left);
// the steps are the taps' reach of the nonzero rows, in order.
func TestConvBackwardHot(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, pad := range [][2]int{{0, 0}, {1, 2}, {2, 0}} {
		for _, masked := range []bool{false, true} {
			s := newSparseCase(r, pad[0], pad[1])
			rows := s.B * s.c.Cout
			v, at := make([]float32, rows), make([]int32, rows)
			for i := range v {
				at[i] = int32(r.IntN(s.L))
				if i%4 != 2 {
					v[i] = float32(r.NormFloat64())
				}
			}
			at[0], at[1] = 0, int32(s.L-1) // the edges (rows with values), the padding's taps left out
			dy := make([]float32, rows*s.L)
			DensifyHot(dy, v, at, s.L)
			wantDX, wantDW, wantDB := s.dense(dy, masked)
			if masked {
				ReLUBackwardHot(v, at, s.relu, s.L)
			}
			dx, dw, db := make([]float32, len(s.x)), make([]float32, len(s.w)), make([]float32, s.c.Cout)
			for i := range dx {
				dx[i] = float32(math.NaN()) // stale
			}
			steps := make([][]int32, s.B)
			for b := range steps {
				steps[b] = make([]int32, 0, s.T)
			}
			s.c.BackwardHot(dx, dw, db, v, at, s.x, s.w, s.T, steps)
			for b, P := range steps {
				reach := map[int32]bool{}
				for o := 0; o < s.c.Cout; o++ {
					if v[b*s.c.Cout+o] == 0 {
						continue
					}
					for k := 0; k < s.c.Kernel; k++ {
						if u := int(at[b*s.c.Cout+o]) - pad[0] + k; u >= 0 && u < s.T {
							reach[int32(u)] = true
						}
					}
				}
				if len(P) != len(reach) {
					t.Fatalf("pad %v: sample %d: %d steps, the taps reach %d", pad, b, len(P), len(reach))
				}
				for j, u := range P {
					if !reach[u] || (j > 0 && P[j-1] >= u) {
						t.Fatalf("pad %v: sample %d: steps %v not the taps' reach in order", pad, b, P)
					}
				}
			}
			Densify(dx, s.c.Cin, s.T, steps)
			checkClose(t, "dx", dx, wantDX, abs64(wantDX))
			checkClose(t, "dw", dw, wantDW, abs64(wantDW))
			checkClose(t, "db", db, wantDB, abs64(wantDB))
			// Without dx (no steps asked for): the same dw and db.
			dw2, db2 := make([]float32, len(s.w)), make([]float32, s.c.Cout)
			s.c.BackwardHot(nil, dw2, db2, v, at, s.x, s.w, s.T, nil)
			if !slices.Equal(dw2, dw) || !slices.Equal(db2, db) {
				t.Fatalf("pad %v: dw, db without dx differ from those with it", pad)
			}
		}
	}
	// A hot step past the output is refused.
	s := newSparseCase(r, 0, 0)
	at := make([]int32, s.B*s.c.Cout)
	at[3] = int32(s.L)
	v := make([]float32, len(at))
	v[3] = 1
	defer func() {
		if recover() == nil {
			t.Error("a hot step at L was taken")
		}
	}()
	s.c.BackwardHot(make([]float32, len(s.x)), nil, nil, v, at, s.x, s.w, s.T, make([][]int32, s.B))
}

// TestConvBackwardSteps: BackwardSteps equals the dense backward of the
// formed gradient (Densify of dy's steps) up to rounding, for supports
// under the supportShare bound, over it, and dense samples, with and
// without the ReLU's mask and padding; dx is a steps gradient on
// dxSteps (nil for the samples that went dense).
func TestConvBackwardSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	for _, pad := range [][2]int{{0, 0}, {1, 2}, {0, 2}} {
		for _, masked := range []bool{false, true} {
			s := newSparseCase(r, pad[0], pad[1])
			m := s.c.Cout * s.L
			steps := make([][]int32, s.B)
			for b := range steps {
				var n int
				switch b {
				case 0:
					n = 1
				case 1:
					n = s.L / supportShare // the bound
				case 2:
					n = s.L/supportShare + 1 // over it: dense
				case 3:
					steps[b] = nil // dense
					continue
				default:
					n = 5
				}
				for _, u := range r.Perm(s.L)[:n] {
					steps[b] = append(steps[b], int32(u))
				}
				steps[b] = sortSteps(steps[b])
			}
			steps[0][0] = int32(s.L - 1) // an edge
			dy := make([]float32, s.B*m)
			for i := range dy {
				dy[i] = float32(r.NormFloat64())
			}
			formed := append([]float32(nil), dy...)
			Densify(formed, s.c.Cout, s.L, steps)
			wantDX, wantDW, wantDB := s.dense(formed, masked)
			var relu []float32
			if masked {
				relu = s.relu
			}
			dx, dw, db := make([]float32, len(s.x)), make([]float32, len(s.w)), make([]float32, s.c.Cout)
			for i := range dx {
				dx[i] = float32(math.NaN())
			}
			dxSteps := make([][]int32, s.B)
			for b := range dxSteps {
				dxSteps[b] = make([]int32, 0, s.T)
			}
			s.c.BackwardSteps(dx, dw, db, dy, relu, steps, s.x, s.w, s.T, dxSteps)
			for b := range steps {
				dense := steps[b] == nil || supportShare*len(steps[b]) > s.L
				if dense != (dxSteps[b] == nil) {
					t.Fatalf("pad %v: sample %d of %d steps: dx steps %v (nil: dense)", pad, b, len(steps[b]), dxSteps[b])
				}
			}
			Densify(dx, s.c.Cin, s.T, dxSteps)
			checkClose(t, "dx", dx, wantDX, abs64(wantDX))
			checkClose(t, "dw", dw, wantDW, abs64(wantDW))
			checkClose(t, "db", db, wantDB, abs64(wantDB))
			// Without dx (no steps asked for): the same dw and db.
			dw2, db2 := make([]float32, len(s.w)), make([]float32, s.c.Cout)
			s.c.BackwardSteps(nil, dw2, db2, append([]float32(nil), dy...), relu, steps, s.x, s.w, s.T, nil)
			if !slices.Equal(dw2, dw) || !slices.Equal(db2, db) {
				t.Fatalf("pad %v: dw, db without dx differ from those with it", pad)
			}
		}
	}
}

// TestReLUBackwardSparse: the ReLU's mask on a hot and a steps gradient
// gives ReLUBackward's bits at the values given (NaN passing, ±0
// blocking), and leaves the other steps alone.
func TestReLUBackwardSparse(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	const C, T, B = 3, 17, 3
	y := make([]float32, B*C*T)
	dy := make([]float32, B*C*T)
	for i := range y {
		y[i] = float32(r.NormFloat64())
		dy[i] = float32(r.NormFloat64())
	}
	y[2], y[5], y[9] = float32(math.NaN()), 0, float32(math.Copysign(0, -1))
	y[T+3], y[2*T+4] = float32(math.Copysign(0, -1)), 0
	want := make([]float32, len(dy))
	ReLUBackward(want, dy, y)
	steps := [][]int32{{2, 5, 9, 16}, nil, {0}}
	got := make([]float32, len(dy))
	for i := range got {
		got[i] = 42
	}
	ReLUBackwardSteps(got, dy, y, C, T, steps)
	for b, P := range steps {
		on := map[int]bool{}
		for _, u := range P {
			on[int(u)] = true
		}
		for i := b * C * T; i < (b+1)*C*T; i++ {
			if P != nil && !on[(i%(C*T))%T] {
				if got[i] != 42 {
					t.Fatalf("value %d off the steps written", i)
				}
				continue
			}
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("steps: dx[%d] = %v, ReLUBackward %v", i, got[i], want[i])
			}
		}
	}
	at := make([]int32, B*C)
	v := make([]float32, B*C)
	for r0 := range at {
		at[r0] = int32(r.IntN(T))
		v[r0] = dy[r0*T+int(at[r0])]
	}
	// rows 0, 1 and 2 at a NaN, a -0 and a +0 of y
	at[0], at[1], at[2] = 2, 3, 4
	for r0 := range 3 {
		v[r0] = dy[r0*T+int(at[r0])]
	}
	ReLUBackwardHot(v, at, y, T)
	for r0 := range at {
		if w := want[r0*T+int(at[r0])]; math.Float32bits(v[r0]) != math.Float32bits(w) {
			t.Fatalf("hot row %d: %v, ReLUBackward %v", r0, v[r0], w)
		}
	}
}
