package nn

import "github.com/uaxai/uaxai/sdk/nn/graph"

// PathStats is how a model computed the perturbed copies of occlusion's
// windows and LIME's spans (graph.Path's figures, for callers that know
// models only as Model): how many copies, how many by the incremental
// path, the first node computed in full, and the floating-point work done
// against full forward passes of every copy.
type PathStats graph.Path

// PathStatsOf is the PathStats of m's perturbed copies so far, and false
// for a model that does not count them (one that is not a GraphModel).
func PathStatsOf(m Model) (PathStats, bool) {
	if g, ok := m.(*GraphModel); ok {
		return PathStats(g.Path()), true
	}
	return PathStats{}, false
}

// Add returns the figures of p's and q's copies together.
func (p PathStats) Add(q PathStats) PathStats {
	return PathStats(graph.Path(p).Add(graph.Path(q)))
}

// Fraction is the share of the full passes' work done (1 when nothing was
// computed).
func (p PathStats) Fraction() float64 { return graph.Path(p).Fraction() }

func (p PathStats) String() string { return graph.Path(p).String() }
