package checked

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exact reports the result of op on a and b in big.Int and whether it
// fits an int64: the independent reference for every function here.
func exact(a, b int, op string) (int, bool) {
	x, y := big.NewInt(int64(a)), big.NewInt(int64(b))
	var z big.Int
	switch op {
	case "+":
		z.Add(x, y)
	case "-":
		z.Sub(x, y)
	case "*":
		z.Mul(x, y)
	}
	if !z.IsInt64() {
		return 0, false
	}
	return int(z.Int64()), true
}

func edges() []int {
	return []int{0, 1, -1, 2, -2, 3, 1 << 31, -(1 << 31), 1<<32 + 1, 1 << 62, -(1 << 62),
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 3037000499, 3037000500, -3037000500}
}

func TestAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := edges()
	for range 200 {
		vals = append(vals, int(r.Uint64()), int(r.Uint64()>>uint(r.IntN(64))), r.IntN(1<<20)-1<<19)
	}
	fns := map[string]func(a, b int) (int, bool){"+": Add, "-": Sub, "*": Mul}
	for op, f := range fns {
		for _, a := range vals {
			for _, b := range vals {
				got, ok := f(a, b)
				want, wok := exact(a, b, op)
				if ok != wok || (ok && got != want) {
					t.Fatalf("%d %s %d = %d, %v; want %d, %v", a, op, b, got, ok, want, wok)
				}
			}
		}
	}
}

func TestProdSum(t *testing.T) {
	if p, ok := Prod(); !ok || p != 1 {
		t.Errorf("Prod() = %d, %v; want 1, true", p, ok)
	}
	if p, ok := Prod(640, 64, 128); !ok || p != 640*64*128 {
		t.Errorf("Prod(640, 64, 128) = %d, %v", p, ok)
	}
	if _, ok := Prod(1<<40, 1<<30); ok {
		t.Error("Prod(2^40, 2^30) did not report overflow")
	}
	// An overflow in a partial product is reported even when a later zero
	// would make the exact product fit.
	if _, ok := Prod(1<<40, 1<<30, 0); ok {
		t.Error("Prod(2^40, 2^30, 0) did not report the partial overflow")
	}
	if s, ok := Sum(1, 2, -4); !ok || s != -1 {
		t.Errorf("Sum(1, 2, -4) = %d, %v", s, ok)
	}
	if _, ok := Sum(math.MaxInt64, 1, -1); ok {
		t.Error("Sum(MaxInt64, 1, -1) did not report the partial overflow")
	}
	if s, ok := Sum(math.MaxInt64, -1, 1); !ok || s != math.MaxInt64 {
		t.Errorf("Sum(MaxInt64, -1, 1) = %d, %v", s, ok)
	}
}
