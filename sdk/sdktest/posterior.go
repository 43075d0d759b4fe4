package sdktest

import (
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// PosteriorCase is a small fit-and-sample case: keep it to a few epochs on
// a few rows, as the posterior is fitted three times (in process with 1
// and 2 workers, and over the wire), and a parted one (sdk.Parted) twice
// more, part by part. Draws is the number of draws asked
// (default 3; at most the members of a finite posterior).
type PosteriorCase struct {
	Arch     nn.Arch
	Train    sdk.Dataset
	Val      sdk.Dataset
	Training nn.TrainConfig
	Config   sdk.Config
	Seed     uint64
	Draws    int
	// Base is the fitted artifact of the base posterior, for a post-hoc
	// posterior (Info.Base): Fit gets a copy of it as FitRequest.Base
	// and must leave it as it is.
	Base *sdk.Artifact
}

// Posterior runs the conformance checks on a posterior (see the package
// documentation). Besides them it checks that Fit gives the same artifact
// with 1 and 2 workers, that progress reports are sane (0 <= Done <=
// Total) and reach the host over the wire, that every draw builds with
// nn.Open, and, for a continuous (not Finite) posterior, that draw s
// depends on Seeds[s] only and changes with it. (A finite posterior's draw
// s is its member s.) For a parted posterior (sdk.Parted) of K > 1 parts
// it fits each part, in process and over the wire, and checks that the
// parts are disjoint in their tensors, agree on their shared Meta keys,
// and join to the whole fit's artifact bit for bit.
func Posterior(t testing.TB, impl sdk.Posterior, c PosteriorCase) {
	t.Helper()
	info := impl.Info()
	h, cancel := newHarness(t, impl, sdk.KindPosterior)
	defer cancel()
	ctx := h.ctx
	local, err := driver.LocalPosterior(impl)
	if err != nil {
		h.fatalf("%v", err)
	}
	if c.Draws == 0 {
		c.Draws = 3
	}
	h.checkConfig("in process", func(cfg sdk.Config) error { return local.Check(cfg, c.Draws) }, c.Config)
	if err := c.Arch.Validate(); err != nil {
		h.fatalf("bad case: %v", err)
	}
	if info.Base != "" && c.Base == nil {
		h.fatalf("bad case: a post-hoc posterior (Info.Base %q) needs PosteriorCase.Base, its base's artifact", info.Base)
	}

	fit := func(p sdk.Posterior, workers, part, parts, replicate int) (sdk.Artifact, []sdk.Progress, error) {
		var (
			mu   sync.Mutex
			prog []sdk.Progress
		)
		req := sdk.FitRequest{
			Arch: c.Arch, Train: c.Train, Val: c.Val, Training: c.Training,
			Config: c.Config, Seed: c.Seed, Workers: workers, Part: part, Parts: parts, Replicate: replicate,
			Progress: func(p sdk.Progress) {
				mu.Lock()
				defer mu.Unlock()
				prog = append(prog, p)
			},
		}
		if c.Base != nil {
			base := cloneArtifact(*c.Base)
			req.Base = &base
		}
		a, err := p.Fit(ctx, req)
		if c.Base != nil {
			if d := diffArtifact(*req.Base, *c.Base); d != "" {
				h.errorf("Fit modified its base artifact (%s); treat the request as read-only", d)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return a, slices.Clone(prog), err
	}
	art, prog, err := fit(local, 1, 0, 0, 0)
	if err != nil {
		h.fatalf("in process: Fit: %v", err)
	}
	for i, p := range prog {
		if p.Done < 0 || p.Total < 0 || p.Total > 0 && p.Done > p.Total {
			h.errorf("progress report %d: done %d of %d (want 0 <= done <= total)", i, p.Done, p.Total)
			break
		}
	}
	if a2, _, err := fit(local, 2, 0, 0, 0); err != nil {
		h.errorf("in process: Fit with 2 workers: %v", err)
	} else if d := diffArtifact(a2, art); d != "" {
		h.errorf("Fit with 2 workers gives another artifact than with 1 (%s); results must not depend on the number of workers", d)
	}

	// A parted posterior's parts, each fitted with another number of
	// workers than the whole, join to the whole fit's artifact.
	k := partsOf(h, "in process", local, c.Config)
	var parts []sdk.Artifact
	if k > 1 {
		parts = checkParts(h, "in process", k, art, func(part int) (sdk.Artifact, error) {
			a, _, err := fit(local, 2-part%2, part, k, 0)
			return a, err
		})
	}

	seeds := defaultSeeds(c.Draws, "sample")
	sample := func(p sdk.Posterior, a sdk.Artifact, seeds []uint64) ([]nn.Params, error) {
		return p.Sample(ctx, a, sdk.SampleRequest{Seeds: slices.Clone(seeds), Config: c.Config})
	}
	draws, err := sample(local, art, seeds)
	if err != nil {
		h.fatalf("in process: Sample: %v", err)
	}
	for s, d := range draws {
		if _, err := nn.Open(d); err != nil {
			h.errorf("draw %d does not build a model: %v", s, err)
		}
	}
	if got, err := sample(local, art, seeds); err != nil {
		h.errorf("in process: second Sample: %v", err)
	} else if d := diffParams(got, draws); d != "" {
		h.errorf("Sample is not deterministic: the same seeds gave different draws (%s)", d)
	}
	// A finite posterior's draw s is member s, whatever the seeds; a
	// continuous one's draw s is a function of Seeds[s].
	if c.Draws >= 2 && !info.Finite {
		if got, err := sample(local, art, seeds[1:]); err != nil {
			h.errorf("in process: Sample of seeds 1..: %v", err)
		} else if d := diffParams(got, draws[1:]); d != "" {
			h.errorf("draw s must depend only on Seeds[s]: sampling seeds 1.. alone gives other draws (%s, draw index relative to 1)", d)
		}
	}
	if info.Finite {
		checkMembers(h, draws, func(seeds []uint64) ([]nn.Params, error) { return sample(local, art, seeds) }, seeds)
	}
	if !info.Finite {
		if got, err := sample(local, art, otherSeeds(seeds)); err != nil {
			h.errorf("in process: Sample with other seeds: %v", err)
		} else if diffParams(got, draws) == "" {
			h.errorf("a continuous (not Finite) posterior gave the same draws for different seeds")
		}
	}

	v, stop := h.serve(impl, sdk.KindPosterior)
	defer stop()
	remote := v.(sdk.Posterior)
	if ri := remote.Info(); !sameInfo(ri, info) {
		h.errorf("remote Info %+v differs from in-process Info %+v", ri, info)
	}
	h.checkConfig("remote", func(cfg sdk.Config) error { return remote.Check(cfg, c.Draws) }, c.Config)
	ra, rprog, err := fit(remote, 2, 0, 0, 0)
	if err != nil {
		h.errorf("remote: Fit: %v", err)
	} else {
		if d := diffArtifact(ra, art); d != "" {
			h.errorf("remote artifact differs from the in-process one (%s)", d)
		}
		if len(prog) > 0 && len(rprog) == 0 {
			h.errorf("progress reports did not reach the host over the wire (%d in process, none remote)", len(prog))
		}
	}
	if rk := partsOf(h, "remote", remote, c.Config); rk != k {
		h.errorf("remote: Parts = %d, in process %d", rk, k)
	} else if parts != nil {
		for i := range k {
			if a, _, err := fit(remote, 1, i, k, 0); err != nil {
				h.errorf("remote: Fit of part %d of %d: %v", i, k, err)
			} else if d := diffArtifact(a, parts[i]); d != "" {
				h.errorf("remote: part %d of %d differs from the in-process part (%s)", i, k, d)
			}
		}
	}
	if got, err := sample(remote, art, seeds); err != nil {
		h.errorf("remote: Sample: %v", err)
	} else if d := diffParams(got, draws); d != "" {
		h.errorf("remote draws differ from in-process draws (%s)", d)
	}
	if info.Replicates {
		checkReplicate(h, art, func(p sdk.Posterior) (sdk.Artifact, error) {
			a, _, err := fit(p, 1, 0, 0, 1)
			return a, err
		}, local, remote)
	}
}

// checkReplicate checks a posterior that sets Info.Replicates: replicate
// 1 of the case (same seed, FitRequest.Replicate = 1) trains another
// artifact than replicate 0 (whole, the case's fit), the same one twice,
// and the same one over the wire as in process.
func checkReplicate(h *harness, whole sdk.Artifact, fit1 func(sdk.Posterior) (sdk.Artifact, error), local, remote sdk.Posterior) {
	h.t.Helper()
	r1, err := fit1(local)
	if err != nil {
		h.errorf("in process: Fit of replicate 1: %v", err)
		return
	}
	if diffArtifact(r1, whole) == "" {
		h.errorf("replicate 1 gave the same artifact as replicate 0; a posterior that sets Info.Replicates derives every training seed through sdk.ReplicateSeed")
	}
	if again, err := fit1(local); err != nil {
		h.errorf("in process: second Fit of replicate 1: %v", err)
	} else if d := diffArtifact(again, r1); d != "" {
		h.errorf("replicate 1 is not deterministic: the same request gave another artifact (%s)", d)
	}
	if ra, err := fit1(remote); err != nil {
		h.errorf("remote: Fit of replicate 1: %v", err)
	} else if d := diffArtifact(ra, r1); d != "" {
		h.errorf("remote: replicate 1 differs from the in-process replicate 1 (%s)", d)
	}
}

// partsOf returns the number of parts of p's fit for cfg, 0 if p is not
// parted (sdk.Parted) or Parts fails (which it reports).
func partsOf(h *harness, where string, p sdk.Posterior, cfg sdk.Config) int {
	h.t.Helper()
	pp, ok := p.(sdk.Parted)
	if !ok {
		return 0
	}
	k, err := pp.Parts(cfg)
	if err != nil {
		h.errorf("%s: Parts of the case's config: %v", where, err)
		return 0
	}
	return k
}

// checkParts checks the contract of sdk.Parted on the k parts that
// fitPart fits: their artifacts have the whole fit's architecture, are
// disjoint in their tensors, agree on every Meta key they share, and
// their union is the whole fit's artifact, bit for bit. It returns the
// parts, or nil if one failed to fit.
func checkParts(h *harness, where string, k int, whole sdk.Artifact, fitPart func(part int) (sdk.Artifact, error)) []sdk.Artifact {
	h.t.Helper()
	parts := make([]sdk.Artifact, k)
	union := sdk.Artifact{Arch: whole.Arch, Tensors: map[string][]float32{}, Meta: map[string]string{}}
	tensorOf, metaOf := map[string]int{}, map[string]int{}
	for i := range k {
		a, err := fitPart(i)
		if err != nil {
			h.errorf("%s: Fit of part %d of %d: %v", where, i, k, err)
			return nil
		}
		parts[i] = a
		if !a.Arch.Same(whole.Arch) {
			h.errorf("%s: part %d of %d has another architecture than the whole fit: %s vs %s", where, i, k, archJSON(a.Arch), archJSON(whole.Arch))
		}
		for _, name := range slices.Sorted(maps.Keys(a.Tensors)) {
			if j, dup := tensorOf[name]; dup {
				h.errorf("%s: parts %d and %d of %d both hold tensor %q (the parts' tensors must be disjoint)", where, j, i, k, name)
				continue
			}
			tensorOf[name] = i
			union.Tensors[name] = a.Tensors[name]
		}
		for _, key := range slices.Sorted(maps.Keys(a.Meta)) {
			if j, ok := metaOf[key]; ok && union.Meta[key] != a.Meta[key] {
				h.errorf("%s: parts %d and %d of %d disagree on meta %q: %q vs %q (parts must agree on the keys they share)", where, j, i, k, key, union.Meta[key], a.Meta[key])
				continue
			}
			metaOf[key] = i
			union.Meta[key] = a.Meta[key]
		}
	}
	if d := diffArtifact(union, whole); d != "" {
		h.errorf("%s: the union of the %d parts is not the whole fit's artifact (%s)", where, k, d)
	}
	return parts
}

// checkMembers checks what makes a finite posterior's draw s its member
// s: the draws are distinct networks (an ensemble that repeats one member
// is one network), a request for fewer draws gives the first ones, in
// order, and the seeds change nothing.
func checkMembers(h *harness, draws []nn.Params, sample func([]uint64) ([]nn.Params, error), seeds []uint64) {
	h.t.Helper()
	for s := range draws {
		for r := range s {
			if diffParams(draws[s:s+1], draws[r:r+1]) == "" {
				h.errorf("finite posterior: draws %d and %d are the same network; draw s must be member s, and members differ", r, s)
			}
		}
	}
	if len(draws) >= 2 {
		if got, err := sample(seeds[:len(seeds)-1]); err != nil {
			h.errorf("in process: Sample of %d draws: %v", len(seeds)-1, err)
		} else if d := diffParams(got, draws[:len(draws)-1]); d != "" {
			h.errorf("finite posterior: %d draws are not the first %d of %d draws (%s); draw s must be member s", len(got), len(got), len(draws), d)
		}
	}
	if got, err := sample(otherSeeds(seeds)); err != nil {
		h.errorf("in process: Sample with other seeds: %v", err)
	} else if d := diffParams(got, draws); d != "" {
		h.errorf("finite posterior: other seeds gave other draws (%s); draw s must be member s whatever the seeds", d)
	}
}

// cloneArtifact returns a deep copy of a.
func cloneArtifact(a sdk.Artifact) sdk.Artifact {
	out := sdk.Artifact{Arch: a.Arch, Tensors: map[string][]float32{}, Meta: maps.Clone(a.Meta)}
	out.Arch.Layers = slices.Clone(a.Arch.Layers)
	if g := a.Arch.Graph; g != nil {
		c := *g
		c.Nodes = slices.Clone(g.Nodes)
		out.Arch.Graph = &c
	}
	for k, v := range a.Tensors {
		out.Tensors[k] = slices.Clone(v)
	}
	return out
}

// HostPosterior is p as the host calls it in process: every request and
// answer goes through the host's checks (the plugin's errors prefixed
// with its ID, requests refused before they reach p), so that a plugin's
// own tests can see what the host will see without importing the host's
// side of the protocol.
func HostPosterior(p sdk.Posterior) (sdk.Posterior, error) {
	return driver.LocalPosterior(p)
}
