package mcdropout

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// tinyArch keeps Fit fast: conv, global max, dense 6, dense 3.
func tinyArch() nn.Arch {
	return nn.Arch{Name: "tiny", InChannels: 1, InLen: 16, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 4, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc1", Out: 6},
		{Kind: nn.KindReLU},
		{Kind: nn.KindDense, Name: "fc2", Out: 3},
	}}
}

func tinyData(n int, seed uint64) sdk.Dataset {
	r := rng.New(seed)
	d := sdk.Dataset{N: n, Len: 16, X: make([]float32, n*16), Y: make([]int, n)}
	for i := range n {
		d.Y[i] = i % 3
		for j := range 16 {
			d.X[i*16+j] = float32(r.NormFloat64() + float64(d.Y[i])*math.Sin(float64(j)))
		}
	}
	return d
}

func fitRequest(cfg sdk.Config) sdk.FitRequest {
	return sdk.FitRequest{
		Arch: tinyArch(), Train: tinyData(12, 1), Val: tinyData(6, 2), Config: cfg, Seed: 5, Workers: 1,
		Training: nn.TrainConfig{Epochs: 2, Batch: 4, LR: 0.01, WeightDecay: 1e-4, StepEvery: 10, StepGamma: 0.5, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
	}
}

// TestWithDropout: the paper's network with MC dropout is the paper's
// dropout architecture (nn.PaperArchDropout) but for the dropout node's
// name: the same layout, the same dropout (64 units, p), and a draw's
// folded parameters are the same for the same mask. A second dropout and
// an output that is not linear are refused.
func TestWithDropout(t *testing.T) {
	a, err := WithDropout(nn.PaperArch(), 0.2)
	if err != nil {
		t.Fatal(err)
	}
	want := nn.PaperArchDropout(0.2)
	la, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	lw, _ := nn.NewLayout(want)
	if !reflect.DeepEqual(la.Tensors, lw.Tensors) {
		t.Errorf("layout %+v, want the paper's dropout arch's %+v", la.Tensors, lw.Tensors)
	}
	ua, pa, err := nn.DropoutInputs(a)
	if err != nil || len(ua) != 1 || ua[0] != 64 || pa[0] != 0.2 {
		t.Errorf("dropout inputs %v %v %v, want 64 units of p 0.2", ua, pa, err)
	}
	if n := a.Graph.Nodes[len(a.Graph.Nodes)-2]; n.Name != DropoutNode || n.Op != "dropout" {
		t.Errorf("the node before the output is %s %q, want the dropout %q", n.Op, n.Name, DropoutNode)
	}
	theta := make([]float32, la.Size)
	nn.Init(la, theta, rng.New(3))
	mask := Mask(make([]bool, 64), 0.2, 7)
	_, fa, err := nn.FoldDropout(a, theta, [][]bool{mask})
	if err != nil {
		t.Fatal(err)
	}
	_, fw, err := nn.FoldDropout(want, theta, [][]bool{mask})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fa, fw) {
		t.Error("a draw's folded parameters differ from the paper's dropout arch's")
	}
	if _, err := WithDropout(want, 0.2); err == nil || !strings.Contains(err.Error(), `already has a dropout node "_16"`) {
		t.Errorf("dropout twice: %v", err)
	}
	noDense := nn.Arch{Name: "x", InChannels: 1, InLen: 4, Layers: []nn.Layer{{Kind: nn.KindConv1D, Name: "c", Out: 3, Kernel: 1}, {Kind: nn.KindGlobalMaxPool}, {Kind: nn.KindFlatten}}}
	if _, err := WithDropout(noDense, 0.2); err == nil || !strings.Contains(err.Error(), `needs a linear output node (a dense last layer), whose input the dropout masks; the output "_2" is flatten`) {
		t.Errorf("no dense layer: %v", err)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		cfg   sdk.Config
		draws int
		want  string
	}{
		{sdk.Config{}, 20, ""},
		{sdk.Config{"p": 0.5, "seed": int64(3)}, 1, ""},
		{sdk.Config{"p": 0.0}, 1, `key "p": 0 is out of range (accepted: 0 < p < 1)`},
		{sdk.Config{"p": 1.0}, 1, `key "p": 1 is out of range`},
		{sdk.Config{"seed": int64(-1)}, 1, `key "seed": want a nonnegative integer`},
		{sdk.Config{"members": int64(3)}, 1, `unknown key "members"`},
		{sdk.Config{}, 0, `key "draws": 0 (accepted: >= 1)`},
	} {
		err := New().Check(c.cfg, c.draws)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%v, %d): %v, want %q", c.cfg, c.draws, err, c.want)
		}
	}
}

// TestDraws: a draw is the trained network with the last layer's weight
// columns kept and scaled by 1/(1-p) or zeroed; everything else is the
// trained network's. Columns are dropped with frequency p, the same seed
// gives the same draw, and the training seed is the recipe's unless set.
func TestDraws(t *testing.T) {
	const p = 0.3
	post := New()
	art, err := post.Fit(context.Background(), fitRequest(sdk.Config{"p": p}))
	if err != nil {
		t.Fatal(err)
	}
	if art.Meta["p"] != "0.3" || art.Meta["seed"] != "5" || art.Arch.Graph == nil || art.Arch.Graph.Nodes[len(art.Arch.Graph.Nodes)-2].Op != "dropout" {
		t.Fatalf("artifact meta %v, arch %+v", art.Meta, art.Arch)
	}
	lay, err := nn.NewLayout(tinyArch())
	if err != nil {
		t.Fatal(err)
	}
	fc2, _ := lay.Lookup("fc2.weight")
	trained := art.Tensors["map"]
	const S = 400
	seeds := make([]uint64, S)
	for s := range seeds {
		seeds[s] = rng.Key(9, "test", "", s, -1)
	}
	draws, err := post.Sample(context.Background(), art, sdk.SampleRequest{Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	dropped, columns := 0, 0
	plain, err := tinyArch().GraphNet()
	if err != nil {
		t.Fatal(err)
	}
	for s, d := range draws {
		net, err := d.Arch.GraphNet()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(net.Spec().Nodes, plain.Spec().Nodes) {
			t.Fatalf("draw %d arch %+v, want the arch without dropout %+v", s, net.Spec().Nodes, plain.Spec().Nodes)
		}
		for i, v := range d.Data {
			if i < fc2.Offset || i >= fc2.Offset+fc2.Size {
				if v != trained[i] {
					t.Fatalf("draw %d parameter %d: %v, trained %v; only fc2.weight may change", s, i, v, trained[i])
				}
			}
		}
		in := fc2.Shape[1]
		for col := range in {
			kept := d.Data[fc2.Offset+col] != 0
			columns++
			if !kept {
				dropped++
			}
			for o := range fc2.Shape[0] {
				k := fc2.Offset + o*in + col
				want := float32(0)
				if kept {
					want = trained[k] / float32(1-p)
				}
				if math.Abs(float64(d.Data[k]-want)) > 1e-6*math.Abs(float64(want)) {
					t.Fatalf("draw %d fc2.weight[%d,%d] = %v, want %v (column %s)", s, o, col, d.Data[k], want, map[bool]string{true: "kept", false: "dropped"}[kept])
				}
			}
		}
	}
	// Binomial(columns, p): within 4 standard deviations.
	mean, sd := p*float64(columns), math.Sqrt(p*(1-p)*float64(columns))
	if math.Abs(float64(dropped)-mean) > 4*sd {
		t.Errorf("%d of %d columns dropped, want %.0f ± %.0f (p = %v)", dropped, columns, mean, 4*sd, p)
	}
	again, err := post.Sample(context.Background(), art, sdk.SampleRequest{Seeds: seeds[:3]})
	if err != nil || !reflect.DeepEqual(again, draws[:3]) {
		t.Errorf("the same seeds gave other draws (%v)", err)
	}
	if reflect.DeepEqual(draws[0].Data, draws[1].Data) && reflect.DeepEqual(draws[1].Data, draws[2].Data) {
		t.Errorf("three seeds gave one draw")
	}
	other, err := post.Fit(context.Background(), fitRequest(sdk.Config{"p": p, "seed": int64(6)}))
	if err != nil || other.Meta["seed"] != "6" || reflect.DeepEqual(other.Tensors["map"], trained) {
		t.Errorf("training seed 6: meta %v, same network %v, %v", other.Meta, reflect.DeepEqual(other.Tensors["map"], trained), err)
	}
	if _, err := post.Sample(context.Background(), sdk.Artifact{Arch: art.Arch}, sdk.SampleRequest{Seeds: seeds[:1]}); err == nil || !strings.Contains(err.Error(), `no tensor "map"`) {
		t.Errorf("artifact without map: %v", err)
	}
}

// TestMask: a mask keeps each unit with probability 1-p, and depends on
// the seed only.
func TestMask(t *testing.T) {
	a, b := Mask(make([]bool, 1000), 0.25, 1), Mask(make([]bool, 1000), 0.25, 1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two masks")
	}
	kept := 0
	for _, k := range a {
		if k {
			kept++
		}
	}
	if math.Abs(float64(kept)-750) > 4*math.Sqrt(1000*0.25*0.75) {
		t.Errorf("%d of 1000 kept at p = 0.25", kept)
	}
	if reflect.DeepEqual(a, Mask(make([]bool, 1000), 0.25, 2)) {
		t.Error("two seeds gave one mask")
	}
}

func TestConformance(t *testing.T) {
	req := fitRequest(sdk.Config{"p": 0.4})
	sdktest.Posterior(t, New(), sdktest.PosteriorCase{Arch: req.Arch, Train: req.Train, Val: req.Val, Training: req.Training, Config: req.Config, Seed: 3, Draws: 4})
}

// TestEdges: seed 0 is a seed; p is recorded exactly; a network that is a
// single dense layer gets its dropout on the input itself; Fit reports
// epochs 1..E of E.
func TestEdges(t *testing.T) {
	if err := New().Check(sdk.Config{"seed": int64(0)}, 1); err != nil {
		t.Errorf("seed 0: %v", err)
	}
	req := fitRequest(sdk.Config{"p": 0.25, "seed": int64(0)})
	var done []int
	req.Progress = func(p sdk.Progress) {
		if p.Total != req.Training.Epochs {
			t.Errorf("progress total %d, want %d epochs", p.Total, req.Training.Epochs)
		}
		done = append(done, p.Done)
	}
	art, err := New().Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if art.Meta["p"] != "0.25" || art.Meta["seed"] != "0" || !reflect.DeepEqual(done, []int{1, 2}) {
		t.Errorf("meta %v, progress %v", art.Meta, done)
	}
	dense := nn.Arch{Name: "dense", InChannels: 4, InLen: 1, Layers: []nn.Layer{{Kind: nn.KindDense, Name: "d", Out: 3}}}
	a, err := WithDropout(dense, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float32, lay.Size)
	for i := range w {
		w[i] = 1
	}
	draws, err := New().Sample(context.Background(), sdk.Artifact{Arch: a, Tensors: map[string][]float32{"map": w}}, sdk.SampleRequest{Seeds: []uint64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	for s, d := range draws {
		mask := Mask(make([]bool, 4), 0.5, []uint64{1, 2, 3}[s])
		for i, keep := range mask {
			want := float32(0)
			if keep {
				want = 2 // 1 / (1 - 0.5)
			}
			if d.Data[i] != want { // row 0 of d.weight, column i
				t.Errorf("draw %d column %d: %v, want %v", s, i, d.Data[i], want)
			}
		}
	}
}
