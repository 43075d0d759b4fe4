package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

func tinyArch() nn.Arch {
	return nn.Arch{Name: "tiny", InChannels: 1, InLen: 16, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 3, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindBatchNorm1D, Name: "bn1"},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 4},
	}}
}

// randomParams are PyTorch-initialised parameters of a drawn from seed.
func randomParams(t *testing.T, a nn.Arch, seed uint64) nn.Params {
	t.Helper()
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	nn.Init(lay, p, rand.New(rand.NewPCG(seed, 1)))
	return nn.Params{Arch: a, Data: p}
}

// writeMembers writes k random networks of a to dir and returns their
// paths and parameters.
func writeMembers(t *testing.T, dir string, a nn.Arch, k int) ([]string, []nn.Params) {
	t.Helper()
	var paths []string
	var ps []nn.Params
	for i := range k {
		p := randomParams(t, a, uint64(100+i))
		path := filepath.Join(dir, "m"+strconv.Itoa(i)+".safetensors")
		if err := nn.SaveParams(path, p, nil); err != nil {
			t.Fatal(err)
		}
		paths, ps = append(paths, path), append(ps, p)
	}
	return paths, ps
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func tinyData(n int) sdk.Dataset {
	d := sdk.Dataset{N: n, Len: 16, Y: make([]int, n), X: make([]float32, n*16)}
	for i := range d.X {
		d.X[i] = float32(i%7) / 7
	}
	return d
}

func TestConformance(t *testing.T) {
	paths, _ := writeMembers(t, t.TempDir(), tinyArch(), 3)
	sdktest.Posterior(t, New(), sdktest.PosteriorCase{Arch: tinyArch(), Train: tinyData(4), Val: tinyData(2),
		Training: nn.PaperTrainConfig(), Config: sdk.Config{"files": anyList(paths)}, Draws: 3})
}

// TestMembersAreTheFiles: draw s is the network of file s, bit for bit,
// whichever key names the files; the meta records each file's SHA-256 (of
// its bytes as on disk); fewer draws are the first members.
func TestMembersAreTheFiles(t *testing.T) {
	paths, want := writeMembers(t, t.TempDir(), tinyArch(), 3)
	ctx := context.Background()
	for _, cfg := range []sdk.Config{{"files": anyList(paths)}, {"weights": paths[1]}} {
		members := want
		if _, ok := cfg["weights"]; ok {
			members = want[1:2]
		}
		var reports []sdk.Progress
		a, err := New().Fit(ctx, sdk.FitRequest{Arch: tinyArch(), Config: cfg, Progress: func(p sdk.Progress) { reports = append(reports, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if a.Meta["members"] != strconv.Itoa(len(members)) || len(a.Tensors) != len(members) {
			t.Errorf("%v: meta %v and %d tensors, want %d members", cfg, a.Meta, len(a.Tensors), len(members))
		}
		if len(reports) != len(members) || reports[len(reports)-1].Done != len(members) || reports[0].Total != len(members) {
			t.Errorf("%v: progress %+v, want one report a file", cfg, reports)
		}
		for s := range members {
			draws, err := New().Sample(ctx, a, sdk.SampleRequest{Seeds: make([]uint64, s+1)})
			if err != nil {
				t.Fatal(err)
			}
			for r := range draws {
				if !slices.Equal(draws[r].Data, members[r].Data) || draws[r].Arch.Name != "tiny" {
					t.Errorf("%v: %d draws: draw %d is not file %d", cfg, s+1, r, r)
				}
			}
		}
		for i := range members {
			path := paths[i]
			if len(members) == 1 {
				path = paths[1]
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got := a.Meta["sha256."+strconv.Itoa(i)]; got != hex.EncodeToString(sum[:]) {
				t.Errorf("member %d: sha256 %q, want %x", i, got, sum)
			}
		}
		if _, err := New().Sample(ctx, a, sdk.SampleRequest{Seeds: make([]uint64, len(members)+1)}); err == nil || !strings.Contains(err.Error(), "draws must be <= "+strconv.Itoa(len(members))) {
			t.Errorf("%v: one draw too many: %v", cfg, err)
		}
	}
}

// TestGoldenModel: the PyTorch state dict of the golden set loads as the
// paper's network, as nn.LoadParams loads it.
func TestGoldenModel(t *testing.T) {
	p, _, _, dir := paper.Model(t)
	a, err := New().Fit(context.Background(), sdk.FitRequest{Arch: nn.PaperArch(), Config: sdk.Config{"weights": filepath.Join(dir, "model.safetensors")}})
	if err != nil {
		t.Fatal(err)
	}
	draws, err := New().Sample(context.Background(), a, sdk.SampleRequest{Seeds: []uint64{7}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(draws[0].Data, p.Data) {
		t.Error("the golden model read through the plugin differs from nn.LoadParams")
	}
}

func TestCheck(t *testing.T) {
	ok := []struct {
		cfg   sdk.Config
		draws int
	}{
		{sdk.Config{"weights": "w.safetensors"}, 1},
		{sdk.Config{"files": []any{"a", "b", "c"}}, 3},
		{sdk.Config{"files": []any{"a", "b", "c"}}, 1},
	}
	for _, c := range ok {
		if err := New().Check(c.cfg, c.draws); err != nil {
			t.Errorf("%v with %d draws: %v", c.cfg, c.draws, err)
		}
	}
	bad := []struct {
		cfg   sdk.Config
		draws int
		want  string
	}{
		{sdk.Config{}, 1, `no key "weights" or "files"`},
		{sdk.Config{"weights": "a", "files": []any{"b"}}, 1, `key "weights" and key "files" are both set`},
		{sdk.Config{"weights": ""}, 1, `key "weights" is string`},
		{sdk.Config{"weights": int64(3)}, 1, `key "weights" is int64 3`},
		{sdk.Config{"files": []any{}}, 1, `key "files" is []interface {} []`},
		{sdk.Config{"files": "a"}, 1, `key "files" is string a`},
		{sdk.Config{"files": []any{"a", int64(2)}}, 1, `key "files" entry 1 is int64 2`},
		{sdk.Config{"files": []any{"a", ""}}, 1, `key "files" entry 1 is string`},
		{sdk.Config{"weights": "a", "seed": int64(1)}, 1, `unknown key "seed"`},
		{sdk.Config{"weights": "a"}, 2, `key "draws": 2 draws of a finite posterior of 1 file(s) (accepted: 1..1)`},
		{sdk.Config{"files": []any{"a", "b"}}, 3, `(accepted: 1..2)`},
		{sdk.Config{"files": []any{"a", "b"}}, 0, `key "draws": 0 draws`},
	}
	for _, c := range bad {
		err := New().Check(c.cfg, c.draws)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ID+": ") {
			t.Errorf("%v with %d draws: %v; want an error containing %q", c.cfg, c.draws, err, c.want)
		}
	}
}

// TestFitErrors: a file that is missing, not safetensors, or made for
// another architecture is an error naming the member and the file, and for
// a wrong shape the tensor and the shape the architecture wants.
func TestFitErrors(t *testing.T) {
	dir := t.TempDir()
	paths, _ := writeMembers(t, dir, tinyArch(), 1)
	wide := tinyArch()
	wide.Layers[0].Kernel = 5
	other, _ := writeMembers(t, t.TempDir(), wide, 1)
	garbage := filepath.Join(dir, "garbage.safetensors")
	if err := os.WriteFile(garbage, []byte("not a safetensors file"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file holding every tensor but one, and one with an extra tensor.
	ts, err := randomParams(t, tinyArch(), 1).Tensors()
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.safetensors")
	if err := safetensors.WriteFile(short, ts[:len(ts)-1], nil); err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(dir, "extra.safetensors")
	if err := safetensors.WriteFile(extra, append(ts, safetensors.Tensor{Name: "fc3.weight", DType: "F32", Shape: []int{1}, Data: []float32{1}}), nil); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.safetensors")
	for _, c := range []struct {
		files []string
		want  []string
	}{
		{[]string{paths[0], missing}, []string{"member 1", missing, "no such file"}},
		{[]string{garbage}, []string{"member 0", garbage}},
		{[]string{paths[0], other[0]}, []string{"member 1", other[0], `tensor "conv1.weight" has shape [3 1 5], want [3 1 3] for arch "tiny"`}},
		{[]string{short}, []string{short, `missing parameter "fc.bias"`}},
		{[]string{extra}, []string{extra, `tensor "fc3.weight" is not a parameter of arch "tiny"`}},
	} {
		_, err := New().Fit(context.Background(), sdk.FitRequest{Arch: tinyArch(), Config: sdk.Config{"files": anyList(c.files)}})
		if err == nil {
			t.Errorf("%v: no error", c.files)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v; want it to contain %q", c.files, err, w)
			}
		}
	}
	if _, err := New().Fit(context.Background(), sdk.FitRequest{Arch: tinyArch(), Config: sdk.Config{}}); err == nil {
		t.Error("Fit without files: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Fit(ctx, sdk.FitRequest{Arch: tinyArch(), Config: sdk.Config{"weights": paths[0]}}); err == nil {
		t.Error("Fit after cancellation: no error")
	}
}

// TestSampleErrors: an artifact that is not this plugin's is refused.
func TestSampleErrors(t *testing.T) {
	a := sdk.Artifact{Arch: tinyArch(), Tensors: map[string][]float32{"member.0": {1, 2}}, Meta: map[string]string{"members": "1"}}
	if _, err := New().Sample(context.Background(), a, sdk.SampleRequest{Seeds: []uint64{1}}); err == nil || !strings.Contains(err.Error(), "member.0 has 2 values") {
		t.Errorf("short member: %v", err)
	}
	for _, m := range []string{"", "0", "x"} {
		a.Meta["members"] = m
		if _, err := New().Sample(context.Background(), a, sdk.SampleRequest{Seeds: []uint64{1}}); err == nil || !strings.Contains(err.Error(), `meta "members"`) {
			t.Errorf("members %q: %v", m, err)
		}
	}
}
