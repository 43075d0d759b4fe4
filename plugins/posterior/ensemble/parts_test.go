package ensemble

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// joinParts is the union of part artifacts, failing if two parts share a
// tensor or disagree on a Meta key: the contract of sdk.Parted, checked
// independently of the plugin's code.
func joinParts(t *testing.T, parts []sdk.Artifact) sdk.Artifact {
	t.Helper()
	out := sdk.Artifact{Arch: parts[0].Arch, Tensors: map[string][]float32{}, Meta: map[string]string{}}
	for i, a := range parts {
		if fmt.Sprint(a.Arch) != fmt.Sprint(out.Arch) {
			t.Fatalf("part %d: arch %+v, part 0: %+v", i, a.Arch, out.Arch)
		}
		for name, v := range a.Tensors {
			if _, dup := out.Tensors[name]; dup {
				t.Fatalf("part %d: tensor %q is in an earlier part too (parts must be disjoint)", i, name)
			}
			out.Tensors[name] = v
		}
		for k, v := range a.Meta {
			if w, ok := out.Meta[k]; ok && w != v {
				t.Fatalf("part %d: meta %q = %q, an earlier part has %q", i, k, v, w)
			}
			out.Meta[k] = v
		}
	}
	return out
}

// sameArtifact fails unless a and b are equal bit for bit.
func sameArtifact(t *testing.T, what string, a, b sdk.Artifact) {
	t.Helper()
	if fmt.Sprint(a.Arch) != fmt.Sprint(b.Arch) {
		t.Errorf("%s: arch %+v vs %+v", what, a.Arch, b.Arch)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(a.Tensors)), slices.Sorted(maps.Keys(b.Tensors))) {
		t.Errorf("%s: tensors %v vs %v", what, slices.Sorted(maps.Keys(a.Tensors)), slices.Sorted(maps.Keys(b.Tensors)))
	}
	for name, v := range a.Tensors {
		// slices.Equal on float32 would take -0 for 0; compare the bits.
		w := b.Tensors[name]
		if len(v) != len(w) {
			t.Errorf("%s: tensor %q has %d values vs %d", what, name, len(v), len(w))
			continue
		}
		for j := range v {
			if math.Float32bits(v[j]) != math.Float32bits(w[j]) {
				t.Errorf("%s: tensor %q value %d: %v vs %v", what, name, j, v[j], w[j])
				break
			}
		}
	}
	if !maps.Equal(a.Meta, b.Meta) {
		t.Errorf("%s: meta %v vs %v", what, a.Meta, b.Meta)
	}
}

// TestPartsJoinToWhole: the K = 3 parts, each fitted with a worker count
// of its own, join to the whole fit's artifact bit for bit, with default
// seeds (derived from the recipe seed) and with listed ones; each part
// holds its member alone.
func TestPartsJoinToWhole(t *testing.T) {
	for _, cfg := range []sdk.Config{{"members": int64(3)}, {"seeds": []any{int64(5), int64(0), int64(17)}}} {
		// Batches of 24 are three chunks of nn's worker pool (8 samples
		// each), so that the workers do share the batches out: with
		// batches of 8 a worker count could not change anything.
		tc := trainCfg()
		tc.Batch = 24
		base := sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: tc, Config: cfg, Seed: 9}
		k, err := New().Parts(cfg)
		if err != nil || k != 3 {
			t.Fatalf("%v: Parts = %d, %v; want 3", cfg, k, err)
		}
		whole := base
		whole.Workers = 6 // two goroutines a member
		w := fitWithin(t, New(), whole)
		parts := make([]sdk.Artifact, k)
		for i := range parts {
			req := base
			req.Part, req.Parts, req.Workers = i, k, []int{1, 3, 2}[i]
			parts[i] = fitWithin(t, New(), req)
			if len(parts[i].Tensors) != 1 || parts[i].Tensors[memberName(i)] == nil {
				t.Errorf("%v: part %d has tensors %v, want %s alone", cfg, i, slices.Sorted(maps.Keys(parts[i].Tensors)), memberName(i))
			}
			if len(parts[i].Meta) != 2 || parts[i].Meta["members"] != "3" {
				t.Errorf("%v: part %d has meta %v, want members = 3 and its seed alone", cfg, i, parts[i].Meta)
			}
		}
		sameArtifact(t, fmt.Sprintf("%v: union of the parts vs the whole fit", cfg), joinParts(t, parts), w)
	}
}

// TestPartProgress: a part reports its own member's epochs, numbered as in
// the whole fit, and counts up to its own total.
func TestPartProgress(t *testing.T) {
	var msgs []string
	var last sdk.Progress
	req := sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(),
		Config: sdk.Config{"seeds": []any{int64(3), int64(4), int64(8)}}, Workers: 1, Part: 2, Parts: 3,
		Progress: func(p sdk.Progress) { msgs, last = append(msgs, p.Message), p }}
	fitWithin(t, New(), req)
	e := trainCfg().Epochs
	if len(msgs) != e || last.Done != e || last.Total != e {
		t.Fatalf("%d reports, last %+v; want %d, ending at %d of %d", len(msgs), last, e, e, e)
	}
	for _, m := range msgs {
		if !strings.HasPrefix(m, "member 3/3 (seed 8) ") {
			t.Errorf("report %q, want it to name member 3/3 (seed 8)", m)
		}
	}
}

// TestPartsAnswer: Parts is the number of members, read as Check reads
// the table, and fails where Check fails, with Check's error.
func TestPartsAnswer(t *testing.T) {
	for _, c := range []struct {
		p    *Posterior
		cfg  sdk.Config
		want int
	}{
		{New(), sdk.Config{}, 5},
		{New(), sdk.Config{"members": int64(4)}, 4},
		{New(), sdk.Config{"seeds": []any{int64(1), int64(2)}}, 2},
		{New(), sdk.Config{"members": int64(1)}, 1},
		{NewDeterministic(), sdk.Config{}, 1},
		{NewDeterministic(), sdk.Config{"seed": int64(3)}, 1},
	} {
		if k, err := c.p.Parts(c.cfg); err != nil || k != c.want {
			t.Errorf("%s %v: Parts = %d, %v; want %d", c.p.id, c.cfg, k, err, c.want)
		}
	}
	for _, c := range []struct {
		p   *Posterior
		cfg sdk.Config
	}{
		{New(), sdk.Config{"members": int64(0)}},
		{New(), sdk.Config{"seeds": "x"}},
		{New(), sdk.Config{"members": int64(2), "seeds": []any{int64(1)}}},
		{New(), sdk.Config{"member": int64(2)}},
		{NewDeterministic(), sdk.Config{"members": int64(2)}},
		{NewDeterministic(), sdk.Config{"seed": int64(-1)}},
	} {
		_, err := c.p.Parts(c.cfg)
		cerr := c.p.Check(c.cfg, 1)
		if err == nil || cerr == nil || err.Error() != cerr.Error() {
			t.Errorf("%s %v: Parts error %v, Check error %v; want Check's error", c.p.id, c.cfg, err, cerr)
		}
	}
}

// TestPartRefused: a part of another number of parts than members, or out
// of range, is an error naming the numbers, from the plugin itself and
// (out of range) from the driver before the plugin sees it.
func TestPartRefused(t *testing.T) {
	req := sdk.FitRequest{Arch: tinyArch(), Train: tinyData(48, 1), Val: tinyData(12, 2), Training: trainCfg(),
		Config: sdk.Config{"members": int64(3)}, Workers: 1}
	for _, c := range []struct {
		part, parts int
		want        []string
	}{
		{0, 2, []string{"2 parts", "3 member"}},
		{0, 4, []string{"4 parts", "3 member"}},
		{3, 3, []string{"part 3 of 3", "0..2"}},
		{-1, 3, []string{"part -1 of 3", "0..2"}},
	} {
		r := req
		r.Part, r.Parts = c.part, c.parts
		_, err := New().Fit(context.Background(), r)
		if err == nil {
			t.Errorf("part %d of %d: accepted", c.part, c.parts)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), ID+": ") {
				t.Errorf("part %d of %d: error %q does not name %q and the plugin", c.part, c.parts, err, w)
			}
		}
	}
	local, err := sdktest.HostPosterior(New())
	if err != nil {
		t.Fatal(err)
	}
	r := req
	r.Part, r.Parts = 3, 3
	if _, err := local.Fit(context.Background(), r); err == nil || !strings.Contains(err.Error(), ID+": Fit: bad request: part = 3 of 3 parts") {
		t.Errorf("driver: part 3 of 3: %v", err)
	}
	if k, err := local.(sdk.Parted).Parts(sdk.Config{"members": int64(3)}); err != nil || k != 3 {
		t.Errorf("driver: Parts = %d, %v; want 3", k, err)
	}
}
