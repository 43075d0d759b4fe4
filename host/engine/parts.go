package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// Parted is a posterior whose fit is made of parts fitted on their own
// (sdk.Parted: a deep ensemble's members): each part is a fit unit.
type Parted interface {
	Parts(cfg sdk.Config) (int, error)
}

// FitParts sets p.Parts: the number of parts of each posterior's fit, as
// its plugin says (1 for a posterior that is not parted, or that is
// fitted post hoc on a base).
func FitParts(ctx context.Context, p *Plan, res Plugins) error {
	p.Parts = make([]int, len(p.Posteriors))
	for pi, ps := range p.Posteriors {
		p.Parts[pi] = 1
		post, err := res.Posterior(ctx, ps.ID)
		if err != nil {
			return err
		}
		pp, ok := post.(Parted)
		if !ok || post.Info().Base != "" {
			continue
		}
		k, err := pp.Parts(ps.Config)
		if err != nil {
			return fmt.Errorf("posterior %s: %w", ps.Name(), err)
		}
		p.Parts[pi] = max(k, 1)
	}
	return nil
}

// JoinParts is the artifact of a parted fit: the union of its parts'
// tensors (which must be disjoint) and Meta (which must agree where
// keys are shared), under their common architecture.
func JoinParts(parts []sdk.Artifact) (sdk.Artifact, error) {
	if len(parts) == 0 {
		return sdk.Artifact{}, errors.New("no parts to join")
	}
	a := sdk.Artifact{Arch: parts[0].Arch, Tensors: map[string][]float32{}, Meta: map[string]string{}}
	for k, pa := range parts {
		if !pa.Arch.Same(a.Arch) {
			return sdk.Artifact{}, fmt.Errorf("part %d has architecture %q, part 0 %q", k, pa.Arch.Name, a.Arch.Name)
		}
		for name, t := range pa.Tensors {
			if _, dup := a.Tensors[name]; dup {
				return sdk.Artifact{}, fmt.Errorf("part %d has tensor %q, which an earlier part has too (parts must be disjoint)", k, name)
			}
			a.Tensors[name] = t
		}
		for key, v := range pa.Meta {
			if old, dup := a.Meta[key]; dup && old != v {
				return sdk.Artifact{}, fmt.Errorf("part %d has meta %s = %q, an earlier part %q (parts must agree)", k, key, v, old)
			}
			a.Meta[key] = v
		}
	}
	return a, nil
}
