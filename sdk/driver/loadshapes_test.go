package driver

import (
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestLoadSendsLayerShapes: a draw sent as parameters carries the output
// shape of each layer (a network of layers) or node (a graph network),
// named, as nn.Arch.OutputShapes gives them, its last the classes x 1;
// so a plugin needs no shape rules of its own.
func TestLoadSendsLayerShapes(t *testing.T) {
	graphArch, err := nn.GraphArch(graphtest.PaperGraph()).Reshaped(2, 40, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []nn.Arch{nn.PaperArch(), graphArch} {
		lay, err := nn.NewLayout(a)
		if err != nil {
			t.Fatal(err)
		}
		p := nn.Params{Arch: a, Data: make([]float32, lay.Size)}
		remote := serveTest(t, &fakeExplainer{}).(Explainer)
		sp := spy(t, remote)
		m := load(t, remote, p)
		want, err := a.OutputShapes()
		if err != nil {
			t.Fatal(err)
		}
		got := sp.lastLoad.Load().GetModel().GetLayers()
		if len(got) != len(want) {
			t.Fatalf("arch %q: the Load sent %d layer shapes, want %d", a.Name, len(got), len(want))
		}
		for i, w := range want {
			if g := got[i]; g.GetName() != w.Name || g.GetChannels() != int64(w.C) || g.GetLength() != int64(w.T) {
				t.Errorf("arch %q entry %d: sent %q %d x %d, want %q %d x %d", a.Name, i, g.GetName(), g.GetChannels(), g.GetLength(), w.Name, w.C, w.T)
			}
		}
		if last := got[len(got)-1]; last.GetChannels() != int64(a.Classes()) || last.GetLength() != 1 {
			t.Errorf("arch %q: last shape %d x %d, want the %d classes x 1", a.Name, last.GetChannels(), last.GetLength(), a.Classes())
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
}
