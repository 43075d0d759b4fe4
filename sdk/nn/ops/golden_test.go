package ops

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// goldenCase is a case of testdata/golden/ops/manifest.json.
type goldenCase struct {
	Op                              string
	Cin, Cout, Kernel, Stride       int
	Dilation, Groups, PadL, PadR, T int
	Bias                            bool
	Left, Right, Pad, C             int
	Value, Slope, Eps               float64
	Act                             string
	Chans                           []int
	Inf, Outf                       int
	Shapes                          map[string][]int
	YShape                          []int
}

// closeTo checks |got - want| <= tol * max|want| over a tensor.
func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	worst, at := 0.0, 0
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if !(d <= worst) {
			worst, at = d, i
		}
	}
	if !(worst <= tol*scale) {
		t.Errorf("%s: value %d is %.9g, want %.9g (|diff| %.3g > %g x scale %.3g)", what, at, got[at], want[at], worst, tol, scale)
	}
}

func TestGoldenTorch(t *testing.T) {
	dir := golden.Dir(t, "ops")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man struct{ Cases map[string]goldenCase }
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(man.Cases))
	for n := range man.Cases {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, name := range names {
		c := man.Cases[name]
		seen[c.Op] = true
		t.Run(name, func(t *testing.T) {
			read := func(f string) []float32 {
				return golden.Flat(golden.CSV32(t, filepath.Join(dir, name, f+".csv")))
			}
			check := func(what string, got []float32) { closeTo(t, what, got, read(what), 1e-5) }
			y := make([]float32, len(read("y")))
			dy := read("dy")
			switch c.Op {
			case "conv1d":
				cv := Conv1D{Cin: c.Cin, Cout: c.Cout, Kernel: c.Kernel, Stride: c.Stride, Dilation: c.Dilation,
					Groups: c.Groups, PadLeft: c.PadL, PadRight: c.PadR}
				x, w := read("x"), read("w")
				var b, db []float32
				if c.Bias {
					b, db = read("b"), make([]float32, c.Cout)
				}
				if L, err := cv.OutLen(c.T); err != nil || L != c.YShape[2] {
					t.Fatalf("OutLen(%d) = %d, %v; torch gave %d", c.T, L, err, c.YShape[2])
				}
				cv.Forward(y, x, w, b, c.T)
				check("y", y)
				dx, dw := make([]float32, len(x)), make([]float32, len(w))
				cv.Backward(dx, dw, db, dy, x, w, c.T)
				check("dx", dx)
				check("dw", dw)
				if c.Bias {
					check("db", db)
				}
			case "pad":
				p := Pad{Left: c.Left, Right: c.Right, Value: float32(c.Value)}
				x := read("x")
				p.Forward(y, x, c.T)
				check("y", y)
				dx := make([]float32, len(x))
				p.Backward(dx, dy, c.T)
				check("dx", dx)
			case "maxpool":
				m := MaxPool1D{Kernel: c.Kernel, Stride: c.Stride, Pad: c.Pad}
				x := read("x")
				idx := make([]int32, len(y))
				m.Forward(y, idx, x, c.T)
				check("y", y)
				dx := make([]float32, len(x))
				m.Backward(dx, dy, idx, c.T)
				check("dx", dx)
			case "avgpool":
				a := AvgPool1D{Kernel: c.Kernel, Stride: c.Stride, Pad: c.Pad}
				x := read("x")
				a.Forward(y, x, c.T)
				check("y", y)
				dx := make([]float32, len(x))
				a.Backward(dx, dy, c.T)
				check("dx", dx)
			case "globalavg":
				x := read("x")
				GlobalAvgPool(y, x, c.T)
				check("y", y)
				dx := make([]float32, len(x))
				GlobalAvgPoolBackward(dx, dy, c.T)
				check("dx", dx)
			case "globalmax":
				x := read("x")
				idx := make([]int32, len(y))
				GlobalMaxPool(y, idx, x, c.T)
				check("y", y)
				dx := make([]float32, len(x))
				GlobalMaxPoolBackward(dx, dy, idx, c.T)
				check("dx", dx)
			case "act":
				x := read("x")
				dx := make([]float32, len(x))
				slope := float32(c.Slope)
				switch c.Act {
				case "relu":
					ReLU(y, x)
					ReLUBackward(dx, dy, x)
				case "leakyrelu":
					LeakyReLU(y, x, slope)
					LeakyReLUBackward(dx, dy, x, slope)
				case "gelu":
					GELU(y, x)
					GELUBackward(dx, dy, x)
				case "silu":
					SiLU(y, x)
					SiLUBackward(dx, dy, x)
				case "sigmoid":
					Sigmoid(y, x)
					SigmoidBackward(dx, dy, x)
				case "tanh":
					Tanh(y, x)
					TanhBackward(dx, dy, x)
				default:
					t.Fatalf("activation %q unknown to the test", c.Act)
				}
				check("y", y)
				check("dx", dx)
			case "softmax":
				x := read("x")
				Softmax(y, x, c.C, c.T)
				check("y", y)
				dx := make([]float32, len(x))
				SoftmaxBackward(dx, dy, y, c.C, c.T)
				check("dx", dx)
			case "add":
				a, b := read("a"), read("b")
				Add(y, a, b)
				check("y", y)
				da, db := make([]float32, len(a)), make([]float32, len(b))
				AddBackward(da, db, dy)
				check("da", da)
				check("db", db)
			case "concat":
				xs := [][]float32{read("a"), read("b"), read("c")}
				Concat(y, xs, c.Chans, c.T)
				check("y", y)
				dxs := make([][]float32, 3)
				for i := range dxs {
					dxs[i] = make([]float32, len(xs[i]))
				}
				ConcatBackward(dxs, dy, c.Chans, c.T)
				check("da", dxs[0])
				check("db", dxs[1])
				check("dc", dxs[2])
			case "linear":
				l := Linear{In: c.Inf, Out: c.Outf}
				x, w, b := read("x"), read("w"), read("b")
				l.Forward(y, x, w, b)
				check("y", y)
				dx, dw, db := make([]float32, len(x)), make([]float32, len(w)), make([]float32, len(b))
				l.Backward(dx, dw, db, dy, x, w)
				check("dx", dx)
				check("dw", dw)
				check("db", db)
			case "batchnorm":
				n := BatchNorm1D{C: c.C, Eps: c.Eps}
				x, g, b, m, v := read("x"), read("gamma"), read("beta"), read("mean"), read("var")
				n.Forward(y, x, g, b, m, v, c.T)
				check("y", y)
				dx, dg, db := make([]float32, len(x)), make([]float32, c.C), make([]float32, c.C)
				n.Backward(dx, dg, db, dy, x, g, m, v, c.T)
				check("dx", dx)
				check("dgamma", dg)
				check("dbeta", db)
			default:
				t.Fatalf("op %q unknown to the test", c.Op)
			}
		})
	}
	for _, op := range []string{"conv1d", "pad", "maxpool", "avgpool", "globalavg", "globalmax", "act", "softmax", "add", "concat", "linear", "batchnorm"} {
		if !seen[op] {
			t.Errorf("golden manifest has no %s case", op)
		}
	}
}

// readTable reads a CSV of integers with a header row.
func readTable(t *testing.T, path string) (head []string, rows [][]int) {
	t.Helper()
	recs := golden.Records(t, path)
	for _, r := range recs[1:] {
		row := make([]int, len(r))
		for i, s := range r {
			var err error
			if row[i], err = strconv.Atoi(s); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		rows = append(rows, row)
	}
	return recs[0], rows
}

// TestShapesTorch: the shape rules give torch's output lengths, and refuse
// (with an error) exactly where torch raises (written as 0).
func TestShapesTorch(t *testing.T) {
	dir := golden.Dir(t, "ops")
	_, conv := readTable(t, filepath.Join(dir, "conv_shapes.csv"))
	refused := 0
	for _, r := range conv {
		T, k, s, p, d, want := r[0], r[1], r[2], r[3], r[4], r[5]
		got, err := ConvOutLen(T, k, s, p, p, d)
		if want == 0 {
			refused++
			if err == nil {
				t.Errorf("ConvOutLen(T=%d k=%d s=%d p=%d d=%d) = %d, torch refuses", T, k, s, p, d, got)
			} else if refused == 1 {
				t.Logf("refusal: %v", err)
			}
		} else if err != nil || got != want {
			t.Errorf("ConvOutLen(T=%d k=%d s=%d p=%d d=%d) = %d, %v; torch %d", T, k, s, p, d, got, err, want)
		}
	}
	_, pool := readTable(t, filepath.Join(dir, "pool_shapes.csv"))
	for _, r := range pool {
		T, k, s, p := r[0], r[1], r[2], r[3]
		for j, want := range r[4:] {
			got, err := PoolOutLen(T, k, s, p)
			if want == 0 {
				refused++
				if err == nil {
					t.Errorf("PoolOutLen(T=%d k=%d s=%d p=%d) = %d, torch refuses (pool %d)", T, k, s, p, got, j)
				}
			} else if err != nil || got != want {
				t.Errorf("PoolOutLen(T=%d k=%d s=%d p=%d) = %d, %v; torch %d (pool %d)", T, k, s, p, got, err, want, j)
			}
		}
	}
	if refused == 0 || refused == len(conv)+2*len(pool) {
		t.Fatalf("%d of the grid refused: the grid does not test both sides", refused)
	}
}
