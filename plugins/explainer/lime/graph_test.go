package lime

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestGraphModelSpans: LIME on a graph network (two channels: padding,
// stride, a residual addition, concatenated branches, max pooling) calls
// the model's SpanProbs (features of every channel) or ChannelSpanProbs
// (one channel each), and its maps equal those of forward passes of the
// perturbed inputs (the model with its span paths hidden), for narrow
// features and wide ones.
func TestGraphModelSpans(t *testing.T) {
	spec := graphtest.Local("lime", "globalavgpool")
	net := graphtest.RandomNet(t, spec, 3)
	m := nn.NewGraphModel(net)
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 2*m.InputLen())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	req := sdk.ExplainRequest{X: x, Targets: []int{2, 0}, Seeds: []uint64{5, 6}}
	for _, features := range []string{ChannelSegment, Segment} {
		for _, width := range []int64{4, 32} {
			req.Config = sdk.Config{"samples": int64(100), "feature": width, "features": features, "surrogate": "ols"}
			what := fmt.Sprintf("features %s of %d samples", features, width)
			before := m.Path()
			got, err := New().Explain(context.Background(), m, req)
			if err != nil {
				t.Fatal(err)
			}
			if p := m.Path(); p.Copies-before.Copies != 200 {
				t.Fatalf("%s: the model's span path computed %d copies, want 200", what, p.Copies-before.Copies)
			}
			want, err := New().Explain(context.Background(), plainModel{m}, req)
			if err != nil {
				t.Fatal(err)
			}
			for b := range want {
				top := 0.0
				for _, v := range want[b] {
					top = max(top, math.Abs(v))
				}
				for i := range want[b] {
					if d := math.Abs(got[b][i] - want[b][i]); d > 1e-4*top {
						t.Fatalf("%s: input %d: map[%d] = %v, by forward passes %v", what, b, i, got[b][i], want[b][i])
					}
				}
			}
		}
	}
}
