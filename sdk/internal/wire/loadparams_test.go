package wire

import (
	"reflect"
	"strings"
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestLoadParams: a Load's parameters are Params's (the same arch_json and
// data bytes) plus the layers' output shapes, which a Go plugin's
// DecodeParams passes over (the same nn.Params after the wire); an
// architecture without output shapes is an error that says so.
func TestLoadParams(t *testing.T) {
	a := nn.PaperArch()
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := nn.Params{Arch: a, Data: make([]float32, lay.Size)}
	for i := range p.Data {
		p.Data[i] = float32(i%7) - 3
	}
	m, err := LoadParams(p)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Params(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.GetArchJson()) != string(plain.GetArchJson()) || string(m.GetData()) != string(plain.GetData()) {
		t.Error("LoadParams's arch_json or data differ from Params's")
	}
	want, err := a.OutputShapes()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.GetLayers()) != len(want) {
		t.Fatalf("%d layers, want %d", len(m.GetLayers()), len(want))
	}
	for i, w := range want {
		if g := m.GetLayers()[i]; g.GetName() != w.Name || g.GetChannels() != int64(w.C) || g.GetLength() != int64(w.T) {
			t.Errorf("layer %d: %q %d x %d, want %q %d x %d", i, g.GetName(), g.GetChannels(), g.GetLength(), w.Name, w.C, w.T)
		}
	}
	raw, err := gproto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back pb.Params
	if err := gproto.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	q, err := DecodeParams(&back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Arch, p.Arch) || !reflect.DeepEqual(q.Data, p.Data) {
		t.Error("DecodeParams of LoadParams is not the draw")
	}

	only := nn.Params{Arch: nn.Arch{Name: "torch", InChannels: 1, InLen: 8, Outputs: 3}}
	if m, err := LoadParams(only); err == nil || m != nil || !strings.Contains(err.Error(), "the layers' output shapes") {
		t.Errorf("LoadParams of a model known by its shape only = %v, %v; want an error naming the output shapes", m, err)
	}
}
