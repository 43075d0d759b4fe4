package wire

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn"
)

func TestFloatsKeepTheirBits(t *testing.T) {
	f32 := []float32{0, float32(math.Copysign(0, -1)), 1.5, -3e-39, math.MaxFloat32, math.Float32frombits(0x7fc00123)}
	g32, err := Float32s(Float32Bytes(f32))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f32 {
		if math.Float32bits(f32[i]) != math.Float32bits(g32[i]) {
			t.Errorf("float32 %d: bits %#x, want %#x", i, math.Float32bits(g32[i]), math.Float32bits(f32[i]))
		}
	}
	f64 := []float64{math.Copysign(0, -1), math.SmallestNonzeroFloat64, -1e300, math.Float64frombits(0x7ff8000000000abc)}
	g64, err := Float64s(Float64Bytes(f64))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f64 {
		if math.Float64bits(f64[i]) != math.Float64bits(g64[i]) {
			t.Errorf("float64 %d: bits %#x, want %#x", i, math.Float64bits(g64[i]), math.Float64bits(f64[i]))
		}
	}
	if b := Float32Bytes([]float32{1}); !reflect.DeepEqual(b, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("1.0f encodes as %x, want little-endian 0000803f", b)
	}
	if _, err := Float32s(make([]byte, 6)); err == nil {
		t.Error("6 bytes decoded as float32s")
	}
	if _, err := Float64s(make([]byte, 12)); err == nil {
		t.Error("12 bytes decoded as float64s")
	}
	if v, _ := Float64s(nil); v != nil {
		t.Error("empty input should decode to nil")
	}
	rows, err := Float64Rows(Float64Bytes([]float64{1, 2, 3, 4, 5, 6}), 2, 3)
	if err != nil || !reflect.DeepEqual(rows, [][]float64{{1, 2, 3}, {4, 5, 6}}) || cap(rows[0]) != 3 {
		t.Errorf("rows %v (cap %d), %v", rows, cap(rows[0]), err)
	}
	if _, err := Float64Rows(make([]byte, 40), 2, 3); err == nil {
		t.Error("40 bytes decoded as 2 x 3 float64s")
	}
}

func TestConfig(t *testing.T) {
	b, err := Config(map[string]any{"window": int64(60), "name": "x", "on": true, "list": []any{int64(1), 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"window": 60.0, "name": "x", "on": true, "list": []any{1.0, 2.5}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config %v, want %v", c, want)
	}
	if b, _ := Config(nil); b != nil {
		t.Error("nil config should encode to nothing")
	}
	if c, _ := DecodeConfig([]byte("{}")); c == nil || len(c) != 0 {
		t.Errorf("empty table decodes to %v", c)
	}
	if _, err := Config(map[string]any{"x": math.NaN()}); err == nil {
		t.Error("NaN config encoded")
	}
}

func TestParams(t *testing.T) {
	p := nn.Params{Arch: nn.PaperArchDropout(0.3), Data: []float32{1, -2, 3}}
	m, err := Params(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := DecodeParams(m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("params round trip: %+v, want %+v", q, p)
	}
	if _, err := DecodeArch([]byte(`{"name":"a","in_channels":1,"in_len":8,"layerz":[]}`)); err == nil || !strings.Contains(err.Error(), "layerz") {
		t.Errorf("unknown architecture field: %v", err)
	}
}
