package sdktest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

// partedMembers is memberPosterior made parted: part k is member k, with
// Meta "members" = 3. Its fields break it on purpose.
type partedMembers struct {
	memberPosterior
	whole     bool          // a part returns the whole fit
	metaClash bool          // each part's Meta "members" is its own index
	shifted   bool          // part k holds member k+1's values under member k's name
	empty     bool          // the last part holds nothing
	workers   bool          // a part's values depend on its workers
	failParts bool          // Parts fails
	two       bool          // Parts answers 2 for 3 members (and Fit does not refuse)
	failPart  bool          // Fit of a part fails
	calls     *atomic.Int64 // Parts answers 3, then 4
	one       bool          // Parts answers 1 (not parted) and Fit refuses parts
}

func (p partedMembers) Parts(sdk.Config) (int, error) {
	switch {
	case p.failParts:
		return 0, errors.New("cannot count")
	case p.two:
		return 2, nil
	case p.one:
		return 1, nil
	case p.calls != nil && p.calls.Add(1) > 1:
		return 4, nil
	}
	return 3, nil
}

func (p partedMembers) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	a, err := p.memberPosterior.Fit(ctx, req)
	a.Meta = map[string]string{"members": "3"}
	if err != nil || req.Parts == 0 || p.whole {
		return a, err
	}
	if p.failPart || p.one {
		return sdk.Artifact{}, errors.New("no parts today")
	}
	k := req.Part
	part := sdk.Artifact{Arch: a.Arch, Tensors: map[string][]float32{}, Meta: map[string]string{"members": "3"}}
	src := k
	if p.shifted {
		src = (k + 1) % 3
	}
	part.Tensors[fmt.Sprint(k)] = a.Tensors[fmt.Sprint(src)]
	if p.workers {
		part.Tensors[fmt.Sprint(k)] = tinyParams(req.Seed + uint64(k) + uint64(req.Workers)).Data
	}
	if p.metaClash {
		part.Meta["members"] = fmt.Sprint(k)
	}
	if p.empty && k == req.Parts-1 {
		part.Tensors = map[string][]float32{}
	}
	return part, nil
}

// TestPartedPosterior: a parted posterior whose parts join to the whole
// conforms; one that breaks any clause of sdk.Parted is reported, with
// the parts and the clause named.
func TestPartedPosterior(t *testing.T) {
	c := posteriorCase()
	expect(t, "parted", run(t, func(tb testing.TB) { Posterior(tb, partedMembers{}, c) }))
	// One part is no parted fit: the kit asks for no part of it.
	expect(t, "one part", run(t, func(tb testing.TB) { Posterior(tb, partedMembers{one: true}, c) }))
	for _, b := range []struct {
		name string
		p    partedMembers
		want []string
	}{
		{"whole for a part", partedMembers{whole: true}, []string{`in process: parts 0 and 1 of 3 both hold tensor "0" (the parts' tensors must be disjoint)`}},
		{"meta clash", partedMembers{metaClash: true}, []string{`in process: parts 0 and 1 of 3 disagree on meta "members": "0" vs "1"`}},
		{"shifted", partedMembers{shifted: true}, []string{`in process: the union of the 3 parts is not the whole fit's artifact (tensor "`}},
		{"empty part", partedMembers{empty: true}, []string{"in process: the union of the 3 parts is not the whole fit's artifact (2 tensors vs 3)"}},
		{"worker dependent", partedMembers{workers: true}, []string{"in process: the union of the 3 parts is not the whole fit's artifact", "remote: part 0 of 3 differs from the in-process part"}},
		{"parts fail", partedMembers{failParts: true}, []string{"in process: Parts of the case's config: posterior.members: Parts: cannot count"}},
		{"failing part", partedMembers{failPart: true}, []string{"in process: Fit of part 0 of 3: posterior.members: Fit: no parts today"}},
		{"Parts changes its mind", partedMembers{calls: new(atomic.Int64)}, []string{"remote: Parts = 4, in process 3"}},
		{"two parts of three members", partedMembers{two: true}, []string{"in process: the union of the 2 parts is not the whole fit's artifact (2 tensors vs 3)"}},
	} {
		expect(t, b.name, run(t, func(tb testing.TB) { Posterior(tb, b.p, c) }), b.want...)
	}
}
