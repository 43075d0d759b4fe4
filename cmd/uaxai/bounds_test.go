package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/memtest"
	"github.com/uaxai/uaxai/sdk/nn"
)

// onnxConvModel is the bytes of an ONNX model (opset 17) of input x (1,
// 1, t): a Conv of 2 output channels, kernel 1 and pads [padBegin, 0],
// then ReduceMean over time and Softmax: 2 classes. Written with
// protowire, field by field of onnx.proto (cmd cannot import sdk's
// generated schema).
func onnxConvModel(t int, padBegin int64) []byte {
	msg := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	bytesF := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	str := func(num protowire.Number, s string) []byte { return bytesF(num, []byte(s)) }
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	ints := func(name string, vs ...int64) []byte { // AttributeProto INTS (type 7)
		f := [][]byte{str(1, name), varint(20, 7)}
		for _, v := range vs {
			f = append(f, varint(8, uint64(v)))
		}
		return msg(f...)
	}
	intAttr := func(name string, v int64) []byte { return msg(str(1, name), varint(3, uint64(v)), varint(20, 2)) }
	node := func(name, op string, in []string, out string, attrs ...[]byte) []byte {
		var f [][]byte
		for _, i := range in {
			f = append(f, str(1, i))
		}
		f = append(f, str(2, out), str(3, name), str(4, op))
		for _, a := range attrs {
			f = append(f, bytesF(5, a))
		}
		return msg(f...)
	}
	valueInfo := func(name string, dims ...int64) []byte {
		var ds [][]byte
		for _, d := range dims {
			ds = append(ds, bytesF(1, varint(1, uint64(d)))) // TensorShapeProto.dim {dim_value}
		}
		tensorType := msg(varint(1, 1), bytesF(2, msg(ds...))) // elem_type FLOAT, shape
		return msg(str(1, name), bytesF(2, bytesF(1, tensorType)))
	}
	floats := func(name string, dims []int64, vs ...float32) []byte { // TensorProto FLOAT, float_data
		var f [][]byte
		for _, d := range dims {
			f = append(f, varint(1, uint64(d)))
		}
		f = append(f, varint(2, 1))
		for _, v := range vs {
			f = append(f, protowire.AppendFixed32(protowire.AppendTag(nil, 4, protowire.Fixed32Type), math.Float32bits(v)))
		}
		return msg(append(f, str(8, name))...)
	}
	graph := msg(
		bytesF(1, node("/conv/Conv", "Conv", []string{"x", "conv.weight", "conv.bias"}, "c", ints("kernel_shape", 1), ints("pads", padBegin, 0))),
		bytesF(1, node("/ReduceMean", "ReduceMean", []string{"c"}, "m", ints("axes", 2), intAttr("keepdims", 0))),
		bytesF(1, node("/Softmax", "Softmax", []string{"m"}, "y", intAttr("axis", 1))),
		str(2, "padded"),
		bytesF(5, floats("conv.weight", []int64{2, 1, 1}, 0.5, -0.25)),
		bytesF(5, floats("conv.bias", []int64{2}, 0.1, 0.2)),
		bytesF(11, valueInfo("x", 1, 1, int64(t))),
		bytesF(12, valueInfo("y", 1, 2)),
	)
	return msg(varint(1, 8), bytesF(7, graph), bytesF(8, msg(str(1, ""), varint(2, 17))))
}

// hostileInputs writes the refused inputs of issue 34's item 3 into dir:
// pad.onnx, pad0.onnx with its Conv's pads [2^26, 0] (3 bytes more),
// whose Conv gives 2 x (2^26 + 640) values a sample; pad20.onnx with pads
// [2^20, 0], the most a graph's padding may be (graph.MaxExtent); long.csv, one line
// of 5,000,000 samples; long.npy, one waveform of as many; wave.csv, two
// waveforms of 640 samples.
func hostileInputs(t *testing.T, dir string) {
	t.Helper()
	const long = 5000000
	line := bytes.Repeat([]byte("0,"), long)
	line[len(line)-1] = '\n'
	var npyBuf bytes.Buffer
	if err := npy.WriteFloat32(&npyBuf, []int{1, 1, long}, make([]float32, long)); err != nil {
		t.Fatal(err)
	}
	var wave bytes.Buffer
	for i := range 2 {
		for j := range 640 {
			if j > 0 {
				wave.WriteByte(',')
			}
			wave.WriteString(strconv.FormatFloat(math.Sin(float64(j+i)/10), 'g', -1, 64))
		}
		wave.WriteByte('\n')
	}
	for name, b := range map[string][]byte{
		"pad.onnx": onnxConvModel(640, 1<<26), "pad0.onnx": onnxConvModel(640, 0), "pad20.onnx": onnxConvModel(640, 1<<20),
		"long.csv": line, "long.npy": npyBuf.Bytes(), "wave.csv": wave.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runAlloc runs uaxai with args in this process and returns its exit
// code, its stderr and the bytes it allocated.
func runAlloc(args ...string) (int, string, uint64) {
	var errb bytes.Buffer
	code := 0
	alloc := memtest.Allocated(func() { code = run(args, &bytes.Buffer{}, &errb) })
	return code, errb.String(), alloc
}

// TestPredictExplainBounds (issue 34, item 3): predict and explain apply a
// recipe's bounds (recipe.DefaultSizeBounds) before allocating: an ONNX
// network whose Conv pads [2^26, 0] make a forward pass of 64 GiB, a CSV
// line and a .npy waveform of 5,000,000 samples, are refused with the
// file (and line), the bound and the flag that raises it, allocating a
// few MiB; the same network without the pad is accepted.
func TestPredictExplainBounds(t *testing.T) {
	dir := t.TempDir()
	hostileInputs(t, dir)
	weights := filepath.Join(golden.Dir(t, "paper-1dcnn"), "model.safetensors")
	in := func(name string) string { return filepath.Join(dir, name) }
	// pad20.onnx's Conv output, 2 channels of 2^20+640, beside the input,
	// the mean and the softmax: a sample's values; 64 of them are above
	// a --max-batch-values of 10^8 and below the default bound.
	padValues := 640 + 2*(1<<20+640) + 2 + 2
	const lowBatchValues = 100000000
	cases := []struct {
		name string
		args []string
		want []string
	}{
		// The case: pads of 2^26 samples, 64 GiB a forward pass,
		// are refused by the importer before a graph is compiled.
		{"onnx pads", []string{"--model", in("pad.onnx"), "--input", in("wave.csv")},
			[]string{in("pad.onnx"), `node "/conv/Conv" (Conv): attribute "pads" = [67108864 0]`, "onnx.MaxLen"}},
		{"onnx batch values", []string{"--model", in("pad20.onnx"), "--input", in("wave.csv"), "--max-batch-values", strconv.Itoa(lowBatchValues)},
			[]string{in("pad20.onnx"), fmt.Sprintf("values (the input and every layer's or node's output) are %d", padValues), fmt.Sprintf("holds %d of them", 64*padValues), fmt.Sprintf("above the bound of %d values", lowBatchValues), "--max-batch-values raises it"}},
		{"csv line", []string{"--weights", weights, "--input", in("long.csv")},
			[]string{in("long.csv") + ": line 1 (record 0): 5000000 values, above the bound of 65536", "--max-in-len 65536", "--max-in-len raises it"}},
		{"npy waveform", []string{"--weights", weights, "--input", in("long.npy")},
			[]string{in("long.npy"), "shape [1 1 5000000]", "5000000 samples, above the bound of 65536 samples", "--max-in-len raises it"}},
	}
	for _, c := range cases {
		for _, cmd := range [][]string{{"predict"}, {"explain", "--explainer", "occlusion", "--target", "0"}} {
			t.Run(cmd[0]+" "+c.name, func(t *testing.T) {
				code, msg, alloc := runAlloc(append(cmd, c.args...)...)
				if code != 1 {
					t.Errorf("exit %d, want 1: %s", code, msg)
				}
				for _, w := range c.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%q, want %q", msg, w)
					}
				}
				if alloc > 32<<20 {
					t.Errorf("the refusal allocated %d MiB", alloc>>20)
				}
			})
		}
	}
	if code, msg, _ := runAlloc("predict", "--model", in("pad0.onnx"), "--input", in("wave.csv")); code != 0 {
		t.Errorf("predict --model pad0.onnx: exit %d: %s", code, msg)
	}
}

// TestBoundFlags: --max-in-len, --max-params and --max-batch-values are
// the bounds: each accepts the golden network and waveforms at exactly
// what they need (the waveforms' 640 samples; the parameters and values
// recipe.ArchSize counts of the paper's network) and refuses them one
// below, naming the flag; a bound below 1 is refused.
func TestBoundFlags(t *testing.T) {
	g := golden.Dir(t, "paper-1dcnn")
	a, err := nn.LookupArch(nn.PaperArchName)
	if err != nil {
		t.Fatal(err)
	}
	size, err := recipe.ArchSize(a)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"predict", "--weights", filepath.Join(g, "model.safetensors"), "--input", filepath.Join(g, "waveforms.csv"), "--out", filepath.Join(t.TempDir(), "p.csv")}
	for _, c := range []struct {
		flag string
		need int
		want string
	}{
		{"max-in-len", 640, "line 1 (record 0): 640 values, above the bound of 639 (1 channel(s) x --max-in-len 639 samples"},
		{"max-params", size.Params, fmt.Sprintf("has %d parameters, above the bound of %d", size.Params, size.Params-1)},
		{"max-batch-values", 64 * size.Values, fmt.Sprintf("holds %d of them, above the bound of %d values", 64*size.Values, 64*size.Values-1)},
	} {
		if code, msg, _ := runAlloc(append(base, "--"+c.flag, strconv.Itoa(c.need))...); code != 0 {
			t.Errorf("--%s %d: exit %d: %s", c.flag, c.need, code, msg)
		}
		code, msg, _ := runAlloc(append(base, "--"+c.flag, strconv.Itoa(c.need-1))...)
		if code != 1 || !strings.Contains(msg, c.want) || !strings.Contains(msg, "--"+c.flag+" raises it") {
			t.Errorf("--%s %d: exit %d, %q; want %q and the flag", c.flag, c.need-1, code, msg, c.want)
		}
		if code, msg, _ := runAlloc(append(base, "--"+c.flag, "0")...); code != 1 || !strings.Contains(msg, "--"+c.flag+" 0: want a count >= 1") {
			t.Errorf("--%s 0: exit %d, %q", c.flag, code, msg)
		}
	}
}
