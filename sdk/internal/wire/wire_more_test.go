package wire

import (
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	gproto "google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/nn"
)

// le64 is an independent little-endian encoder of float64 values.
func le64(v ...float64) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// le32 is an independent little-endian encoder of float32 values.
func le32(v ...float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s[%d]: bits %#08x, want %#08x", what, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

func TestFloat32BytesLayout(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := math.Float32frombits(0xffc0beef) // negative quiet NaN with a payload
	snan := math.Float32frombits(0x7f800001)
	v := []float32{1, -2.5, negZero, nan, snan, float32(math.Inf(-1)), math.SmallestNonzeroFloat32}
	b := Float32Bytes(v)
	if want := le32(v...); !reflect.DeepEqual(b, want) {
		t.Fatalf("Float32Bytes = %x, want %x", b, want)
	}
	if len(b) != 4*len(v) {
		t.Errorf("%d values encode to %d bytes, want %d", len(v), len(b), 4*len(v))
	}
	if !reflect.DeepEqual(b[:8], []byte{0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0}) {
		t.Errorf("1, -2.5 encode to %x, want 0000803f000020c0", b[:8])
	}
	g, err := Float32s(b)
	if err != nil {
		t.Fatal(err)
	}
	sameBits32(t, "round trip", g, v)
	for _, empty := range [][]float32{nil, {}} {
		if b := Float32Bytes(empty); b != nil {
			t.Errorf("Float32Bytes(%#v) = %#v, want nil", empty, b)
		}
	}
}

func TestFloat32sLengths(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 6, 7, 9} {
		_, err := Float32s(make([]byte, n))
		if err == nil {
			t.Errorf("%d bytes decoded as float32s", n)
			continue
		}
		want := []string{"float32 array of", itoa(n) + " bytes", "multiple of 4"}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d bytes: error %q does not say %q", n, err, w)
			}
		}
	}
	for _, n := range []int{4, 8, 12} {
		v, err := Float32s(make([]byte, n))
		if err != nil || len(v) != n/4 {
			t.Errorf("%d bytes: %d values, %v; want %d values", n, len(v), err, n/4)
		}
	}
	for _, empty := range [][]byte{nil, {}} {
		v, err := Float32s(empty)
		if err != nil || v != nil {
			t.Errorf("Float32s(%#v) = %#v, %v; want nil, nil", empty, v, err)
		}
	}
	v, err := Float32s([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x80, 0x01, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{0x7fc00000, 0x80800000, 1}
	for i, w := range want {
		if math.Float32bits(v[i]) != w {
			t.Errorf("value %d: bits %#08x, want %#08x", i, math.Float32bits(v[i]), w)
		}
	}
}

func TestFloat64BytesLayout(t *testing.T) {
	v := []float64{1, math.Copysign(0, -1), math.Float64frombits(0xfff0000000000001), math.Inf(1), -math.MaxFloat64, math.SmallestNonzeroFloat64}
	b := Float64Bytes(v)
	if want := le64(v...); !reflect.DeepEqual(b, want) {
		t.Fatalf("Float64Bytes = %x, want %x", b, want)
	}
	if !reflect.DeepEqual(b[:8], []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) {
		t.Errorf("1.0 encodes as %x, want 000000000000f03f", b[:8])
	}
	g, err := Float64s(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != len(v) {
		t.Fatalf("%d values decode to %d", len(v), len(g))
	}
	for i := range v {
		if math.Float64bits(g[i]) != math.Float64bits(v[i]) {
			t.Errorf("value %d: bits %#016x, want %#016x", i, math.Float64bits(g[i]), math.Float64bits(v[i]))
		}
	}
	for _, empty := range [][]float64{nil, {}} {
		if b := Float64Bytes(empty); b != nil {
			t.Errorf("Float64Bytes(%#v) = %#v, want nil", empty, b)
		}
	}
}

func TestFloat64sLengths(t *testing.T) {
	for _, n := range []int{1, 4, 7, 9, 12, 15, 17} {
		_, err := Float64s(make([]byte, n))
		if err == nil {
			t.Errorf("%d bytes decoded as float64s", n)
			continue
		}
		for _, w := range []string{"float64 array of", itoa(n) + " bytes", "multiple of 8"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d bytes: error %q does not say %q", n, err, w)
			}
		}
	}
	for _, n := range []int{8, 16, 24} {
		v, err := Float64s(make([]byte, n))
		if err != nil || len(v) != n/8 {
			t.Errorf("%d bytes: %d values, %v; want %d values", n, len(v), err, n/8)
		}
	}
	for _, empty := range [][]byte{nil, {}} {
		v, err := Float64s(empty)
		if err != nil || v != nil {
			t.Errorf("Float64s(%#v) = %#v, %v; want nil, nil", empty, v, err)
		}
	}
	v, err := Float64s([]byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0x80})
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(v[0]) != 0x7ff8000000000001 || math.Float64bits(v[1]) != 0x8000000000000000 {
		t.Errorf("bits %#016x %#016x, want 0x7ff8000000000001 0x8000000000000000", math.Float64bits(v[0]), math.Float64bits(v[1]))
	}
}

func TestFloat64Rows(t *testing.T) {
	flat := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	for _, shape := range [][2]int{{1, 12}, {12, 1}, {2, 6}, {3, 4}, {4, 3}, {6, 2}} {
		r, c := shape[0], shape[1]
		rows, err := Float64Rows(le64(flat...), r, c)
		if err != nil {
			t.Errorf("%d x %d: %v", r, c, err)
			continue
		}
		if len(rows) != r {
			t.Errorf("%d x %d: %d rows", r, c, len(rows))
			continue
		}
		for i, row := range rows {
			want := flat[i*c : i*c+c]
			if !reflect.DeepEqual(row, want) || len(row) != c || cap(row) != c {
				t.Errorf("%d x %d: row %d = %v (len %d, cap %d), want %v (cap %d)", r, c, i, row, len(row), cap(row), want, c)
			}
		}
		// One backing array: row i+1 starts where row i ends.
		for i := 1; i < r; i++ {
			prev := unsafe.Pointer(unsafe.SliceData(rows[i-1]))
			if got, want := unsafe.Pointer(unsafe.SliceData(rows[i])), unsafe.Add(prev, 8*c); got != want {
				t.Errorf("%d x %d: row %d does not follow row %d in one array", r, c, i, i-1)
			}
		}
		// Capacity is length: appending to a row must not overwrite the next.
		if r > 1 {
			_ = append(rows[0], -1)
			if rows[1][0] != flat[c] {
				t.Errorf("%d x %d: appending to row 0 overwrote row 1: %v", r, c, rows[1])
			}
		}
	}

	// Bit-exact values, NaN payloads and -0 included.
	odd := []float64{math.Float64frombits(0x7ff4000000000abc), math.Copysign(0, -1), math.Float64frombits(0xfff8000000000001), 0}
	rows, err := Float64Rows(le64(odd...), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range odd {
		if got := rows[i/2][i%2]; math.Float64bits(got) != math.Float64bits(x) {
			t.Errorf("value %d: bits %#016x, want %#016x", i, math.Float64bits(got), math.Float64bits(x))
		}
	}

	// Zero rows or zero columns: no bytes, and exactly that many rows.
	for _, shape := range [][2]int{{0, 0}, {0, 5}, {3, 0}, {1, 0}} {
		r, c := shape[0], shape[1]
		for _, b := range [][]byte{nil, {}} {
			rows, err := Float64Rows(b, r, c)
			if err != nil {
				t.Errorf("%d x %d from %#v: %v", r, c, b, err)
				continue
			}
			if rows == nil || len(rows) != r {
				t.Errorf("%d x %d: rows %#v, want %d non-nil rows slice", r, c, rows, r)
			}
			for i, row := range rows {
				if len(row) != 0 || cap(row) != 0 {
					t.Errorf("%d x %d: row %d = %v (cap %d), want empty", r, c, i, row, cap(row))
				}
			}
		}
		if _, err := Float64Rows(make([]byte, 8), r, c); err == nil {
			t.Errorf("8 bytes decoded as %d x %d", r, c)
		}
	}

	// One value too many or too few is refused, naming the sizes.
	bad := []struct {
		n, rows, cols int
	}{
		{88, 3, 4}, {104, 3, 4}, {95, 3, 4}, {97, 3, 4}, {0, 1, 1}, {16, 1, 1}, {8, 2, 1}, {8, 1, 2},
		// Negative dimensions, even when their product matches.
		{48, -2, -3}, {0, -1, 0}, {0, 0, -1}, {0, -1, 5}, {0, 5, -1}, {8, -1, -1},
	}
	for _, c := range bad {
		rows, err := Float64Rows(make([]byte, c.n), c.rows, c.cols)
		if err == nil {
			t.Errorf("%d bytes decoded as %d x %d float64s: %v", c.n, c.rows, c.cols, rows)
			continue
		}
		if rows != nil {
			t.Errorf("%d bytes as %d x %d: rows %v with the error", c.n, c.rows, c.cols, rows)
		}
		want := itoa(c.n) + " bytes do not hold " + itoa(c.rows) + " x " + itoa(c.cols) + " float64 values"
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestInts(t *testing.T) {
	in := []int64{0, 1, -1, math.MaxInt32 + 1, math.MinInt64, math.MaxInt64, 42}
	got := Ints(in)
	want := []int{0, 1, -1, 1 << 31, math.MinInt64, math.MaxInt64, 42}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Ints = %v, want %v", got, want)
	}
	back := Int64s(want)
	if !reflect.DeepEqual(back, in) {
		t.Errorf("Int64s = %v, want %v", back, in)
	}
	if got := Ints([]int64{7}); !reflect.DeepEqual(got, []int{7}) {
		t.Errorf("Ints([7]) = %v", got)
	}
	if got := Int64s([]int{-7}); !reflect.DeepEqual(got, []int64{-7}) {
		t.Errorf("Int64s([-7]) = %v", got)
	}
	if got := Ints(nil); got != nil {
		t.Errorf("Ints(nil) = %#v, want nil", got)
	}
	if got := Ints([]int64{}); got != nil {
		t.Errorf("Ints([]) = %#v, want nil", got)
	}
	if got := Int64s(nil); got != nil {
		t.Errorf("Int64s(nil) = %#v, want nil", got)
	}
	if got := Int64s([]int{}); got != nil {
		t.Errorf("Int64s([]) = %#v, want nil", got)
	}
	// The result is a copy: changing it leaves the input alone.
	src := []int64{5, 6}
	Ints(src)[0] = 9
	if src[0] != 5 {
		t.Error("Ints aliases its input")
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := Config(map[string]any{"x": math.Inf(1)})
	if err == nil || !strings.HasPrefix(err.Error(), "encoding config: ") {
		t.Errorf("Inf config: %v, want an error starting 'encoding config: '", err)
	}
	if _, err := Config(map[string]any{"f": func() {}}); err == nil || !strings.Contains(err.Error(), "encoding config") {
		t.Errorf("func config: %v", err)
	}
	b, err := Config(map[string]any{})
	if err != nil || string(b) != "{}" {
		t.Errorf("empty table encodes to %q, %v; want {}", b, err)
	}
	b, err = Config(map[string]any{"a": 1.5, "b": "s"})
	if err != nil || string(b) != `{"a":1.5,"b":"s"}` {
		t.Errorf("table encodes to %q, %v", b, err)
	}

	for _, s := range []string{"[1]", "{", `{"a":}`, "3", `"x"`} {
		c, err := DecodeConfig([]byte(s))
		if err == nil || !strings.HasPrefix(err.Error(), "decoding config: ") || c != nil {
			t.Errorf("DecodeConfig(%q) = %v, %v; want nil and a 'decoding config: ' error", s, c, err)
		}
	}
	for _, empty := range [][]byte{nil, {}} {
		c, err := DecodeConfig(empty)
		if c != nil || err != nil {
			t.Errorf("DecodeConfig(%#v) = %#v, %v; want nil, nil", empty, c, err)
		}
	}
	// JSON null is a table with nothing in it, not a missing one.
	c, err := DecodeConfig([]byte("null"))
	if err != nil || c == nil || len(c) != 0 {
		t.Errorf("DecodeConfig(null) = %#v, %v; want an empty non-nil table", c, err)
	}
	c, err = DecodeConfig([]byte(`{"t":{"n":2},"a":[1,"x"],"z":null}`))
	want := map[string]any{"t": map[string]any{"n": 2.0}, "a": []any{1.0, "x"}, "z": nil}
	if err != nil || !reflect.DeepEqual(c, want) {
		t.Errorf("nested config = %#v, %v; want %#v", c, err, want)
	}
}

// nanArch is an architecture JSON cannot encode.
func nanArch() nn.Arch {
	return nn.Arch{Name: "bad", InChannels: 1, InLen: 4, Layers: []nn.Layer{{Kind: nn.KindDropout, P: math.NaN()}}}
}

func smallArch() nn.Arch {
	return nn.Arch{Name: "small", InChannels: 2, InLen: 5, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "c", Out: 3, Kernel: 2},
		{Kind: nn.KindReLU},
		{Kind: nn.KindDropout, P: 0.25},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Out: 4},
	}}
}

func TestArch(t *testing.T) {
	a := smallArch()
	b, err := Arch(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"small","in_channels":2,"in_len":5,"layers":[{"kind":"conv1d","name":"c","out":3,"kernel":2},{"kind":"relu"},{"kind":"dropout","p":0.25},{"kind":"flatten"},{"kind":"dense","out":4}]}`
	if string(b) != want {
		t.Errorf("Arch = %s, want %s", b, want)
	}
	got, err := DecodeArch(b)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Errorf("DecodeArch = %+v, %v; want %+v", got, err, a)
	}
	if _, err := Arch(nanArch()); err == nil || !strings.HasPrefix(err.Error(), "encoding architecture: ") {
		t.Errorf("NaN architecture: %v, want an 'encoding architecture: ' error", err)
	}
	for _, s := range []string{"", "{", "[]", `{"name":1}`, `{"layers":[{"kind":"relu","size":3}]}`, `{"name":"a","extra":true}`} {
		got, err := DecodeArch([]byte(s))
		if err == nil || !strings.HasPrefix(err.Error(), "decoding architecture: ") {
			t.Errorf("DecodeArch(%q): %v, want a 'decoding architecture: ' error", s, err)
		}
		if !reflect.DeepEqual(got, nn.Arch{}) {
			t.Errorf("DecodeArch(%q) returned %+v with its error, want the zero Arch", s, got)
		}
	}
	if _, err := DecodeArch([]byte(`{"name":"a","extra":true}`)); err == nil || !strings.Contains(err.Error(), `"extra"`) {
		t.Errorf("unknown field: %v, want the field named", err)
	}
}

func TestParamsErrors(t *testing.T) {
	if m, err := Params(nn.Params{Arch: nanArch(), Data: []float32{1}}); err == nil || m != nil || !strings.Contains(err.Error(), "encoding architecture") {
		t.Errorf("Params with a NaN architecture = %v, %v; want nil and an encoding error", m, err)
	}

	p := nn.Params{Arch: smallArch(), Data: []float32{float32(math.Copysign(0, -1)), math.Float32frombits(0x7fa00001), 3}}
	m, err := Params(p)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Arch(p.Arch); string(m.GetArchJson()) != string(want) {
		t.Errorf("arch_json %s, want %s", m.GetArchJson(), want)
	}
	if want := le32(p.Data...); !reflect.DeepEqual(m.GetData(), want) {
		t.Errorf("data %x, want %x", m.GetData(), want)
	}
	// Through the wire and back.
	raw, err := gproto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var m2 pb.Params
	if err := gproto.Unmarshal(raw, &m2); err != nil {
		t.Fatal(err)
	}
	q, err := DecodeParams(&m2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Arch, p.Arch) {
		t.Errorf("arch %+v, want %+v", q.Arch, p.Arch)
	}
	sameBits32(t, "params data", q.Data, p.Data)

	// No data at all.
	m, err = Params(nn.Params{Arch: smallArch()})
	if err != nil || m.GetData() != nil {
		t.Fatalf("no data: %v, %v", m.GetData(), err)
	}
	if q, err := DecodeParams(m); err != nil || q.Data != nil || !reflect.DeepEqual(q.Arch, smallArch()) {
		t.Errorf("no data decodes to %+v, %v", q, err)
	}

	if q, err := DecodeParams(nil); err == nil || err.Error() != "missing model parameters" || !reflect.DeepEqual(q, nn.Params{}) {
		t.Errorf("DecodeParams(nil) = %+v, %v; want a 'missing model parameters' error", q, err)
	}
	good, _ := Arch(smallArch())
	q, err = DecodeParams(&pb.Params{ArchJson: []byte(`{"name":"x","bogus":1}`), Data: le32(1)})
	if err == nil || !strings.HasPrefix(err.Error(), "decoding architecture: ") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad arch: %v", err)
	}
	if !reflect.DeepEqual(q, nn.Params{}) {
		t.Errorf("bad arch returned %+v with its error", q)
	}
	q, err = DecodeParams(&pb.Params{ArchJson: good, Data: []byte{1, 2, 3, 4, 5}})
	if err == nil || err.Error() != "parameters: float32 array of 5 bytes is not a multiple of 4" {
		t.Errorf("5 data bytes: %v", err)
	}
	if !reflect.DeepEqual(q, nn.Params{}) {
		t.Errorf("bad data returned %+v with its error", q)
	}
}

func TestArtifactRoundTrip(t *testing.T) {
	arch := smallArch()
	tensors := map[string][]float32{
		"w":     {1, float32(math.Copysign(0, -1)), math.Float32frombits(0xff800001), math.Float32frombits(0x7fc0abcd)},
		"b":     {-3.25},
		"empty": {},
	}
	meta := map[string]string{"members": "5", "note": "ünïcode ✓", "": "blank key"}
	a, err := Artifact(arch, tensors, meta)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Arch(arch); string(a.GetArchJson()) != string(want) {
		t.Errorf("arch_json %s, want %s", a.GetArchJson(), want)
	}
	if len(a.GetTensors()) != 3 {
		t.Errorf("%d tensors encoded, want 3", len(a.GetTensors()))
	}
	for k, v := range tensors {
		if got := a.GetTensors()[k]; !reflect.DeepEqual(got, Float32Bytes(v)) || len(got) != 4*len(v) {
			t.Errorf("tensor %q encodes to %x, want %x", k, got, le32(v...))
		}
	}
	if !reflect.DeepEqual(a.GetMeta(), meta) {
		t.Errorf("meta %v, want %v", a.GetMeta(), meta)
	}

	raw, err := gproto.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var a2 pb.Artifact
	if err := gproto.Unmarshal(raw, &a2); err != nil {
		t.Fatal(err)
	}
	for _, in := range []*pb.Artifact{a, &a2} {
		gotArch, gotT, gotMeta, err := DecodeArtifact(in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotArch, arch) {
			t.Errorf("arch %+v, want %+v", gotArch, arch)
		}
		if len(gotT) != len(tensors) {
			t.Errorf("%d tensors decoded, want %d", len(gotT), len(tensors))
		}
		for k, v := range tensors {
			g, ok := gotT[k]
			if !ok {
				t.Errorf("tensor %q lost", k)
				continue
			}
			sameBits32(t, "tensor "+k, g, v)
		}
		if e, ok := gotT["empty"]; !ok || e == nil || len(e) != 0 {
			t.Errorf("empty tensor decodes to %#v (present %v), want an empty non-nil slice", e, ok)
		}
		if !reflect.DeepEqual(gotMeta, meta) {
			t.Errorf("meta %v, want %v", gotMeta, meta)
		}
	}
}

func TestArtifactNoTensors(t *testing.T) {
	for _, tensors := range []map[string][]float32{nil, {}} {
		a, err := Artifact(smallArch(), tensors, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (tensors == nil) != (a.GetTensors() == nil) {
			t.Errorf("tensors %#v encode to %#v", tensors, a.GetTensors())
		}
		if a.GetMeta() != nil {
			t.Errorf("nil meta encodes to %#v", a.GetMeta())
		}
		arch, got, meta, err := DecodeArtifact(a)
		if err != nil {
			t.Fatal(err)
		}
		if got != nil {
			t.Errorf("no tensors decode to %#v, want a nil map", got)
		}
		if meta != nil {
			t.Errorf("no meta decodes to %#v, want nil", meta)
		}
		if !reflect.DeepEqual(arch, smallArch()) {
			t.Errorf("arch %+v", arch)
		}
	}
}

func TestArtifactErrors(t *testing.T) {
	if a, err := Artifact(nanArch(), map[string][]float32{"w": {1}}, nil); err == nil || a != nil || !strings.HasPrefix(err.Error(), "encoding architecture: ") {
		t.Errorf("Artifact with a NaN architecture = %v, %v; want nil and an encoding error", a, err)
	}

	check := func(name string, a *pb.Artifact, want string, exact bool) {
		t.Helper()
		arch, tensors, meta, err := DecodeArtifact(a)
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		if exact && err.Error() != want || !exact && !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %q, want %q", name, err, want)
		}
		if !reflect.DeepEqual(arch, nn.Arch{}) || tensors != nil || meta != nil {
			t.Errorf("%s: returned %+v, %v, %v with the error", name, arch, tensors, meta)
		}
	}
	good, _ := Arch(smallArch())
	check("nil", nil, "missing artifact", true)
	check("bad arch JSON", &pb.Artifact{ArchJson: []byte("{not json"), Meta: map[string]string{"k": "v"}}, "artifact: decoding architecture: ", false)
	check("empty arch JSON", &pb.Artifact{}, "artifact: decoding architecture: ", false)
	check("unknown field", &pb.Artifact{ArchJson: []byte(`{"name":"x","in_channels":1,"in_len":2,"layers":[],"epochs":3}`)}, "artifact: decoding architecture: ", false)
	_, _, _, err := DecodeArtifact(&pb.Artifact{ArchJson: []byte(`{"name":"x","epochs":3}`)})
	if err == nil || !strings.Contains(err.Error(), `"epochs"`) {
		t.Errorf("unknown field error %v does not name it", err)
	}
	for _, n := range []int{1, 2, 3, 5, 7} {
		check("odd tensor", &pb.Artifact{ArchJson: good, Tensors: map[string][]byte{"ok": le32(1, 2), "member/3": make([]byte, n)}, Meta: map[string]string{"k": "v"}},
			`artifact tensor "member/3": float32 array of `+itoa(n)+" bytes is not a multiple of 4", true)
	}
}
