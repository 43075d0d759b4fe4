package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// evalSpec has convolution -> batchnorm (-> relu) groups that fold (a
// conv without a bias; a strided depthwise conv; a batchnorm read twice,
// which folds without its readers; a linear layer whose batchnorm is the
// output), relus that fold into a conv or an addition, and a conv read
// twice, which does not fold.
func evalSpec() Spec {
	n := nd
	return Spec{Name: "evalfold", InChannels: 2, InLen: 24, Nodes: []Node{
		n("c1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1, "bias": false}),
		n("bn1", "batchnorm1d", nil, nil),
		n("r1", "relu", nil, nil), // c1 > bn1 > r1
		n("dw", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "stride": 2, "groups": 4, "padding": []int64{1, 0}}),
		n("dbn", "batchnorm1d", nil, nil),
		n("dr", "relu", nil, nil), // dw > dbn > dr
		n("c2", "conv1d", nil, map[string]any{"out": 4, "kernel": 1}),
		n("bn2", "batchnorm1d", nil, nil), // c2 > bn2, read twice:
		n("t2", "tanh", []string{"bn2"}, nil),
		n("r2", "relu", []string{"bn2"}, nil),
		n("add", "add", []string{"t2", "r2"}, nil),
		n("ar", "relu", nil, nil),                                                   // add > ar
		n("c3", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1}), // read twice: kept
		n("bn3", "batchnorm1d", []string{"c3"}, nil),
		n("s3", "sigmoid", []string{"c3"}, nil),
		n("cat", "concat", []string{"bn3", "s3"}, nil),
		n("c4", "conv1d", nil, map[string]any{"out": 4, "kernel": 3}),
		n("r4", "relu", nil, nil), // c4 > r4, no batchnorm between
		n("gap", "globalavgpool", nil, nil),
		n("fc", "linear", nil, map[string]any{"out": 3}),
		n("fbn", "batchnorm1d", nil, nil), // fc > fbn, the output
	}}
}

// TestEvalFoldPlan: the groups that fold, and the folded pass's buffers:
// every value a node reads is in its slot when it runs.
func TestEvalFoldPlan(t *testing.T) {
	net := randomNet(t, evalSpec(), 1)
	want := [][]string{{"c1", "bn1", "r1"}, {"dw", "dbn", "dr"}, {"c2", "bn2"}, {"add", "ar"}, {"c4", "r4"}, {"fc", "fbn"}}
	if got := net.EvalFolds(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("folded groups %v, want %v", got, want)
	}
	if got := net.FoldEval(); got != 8 {
		t.Errorf("FoldEval folded %d nodes away, want 8", got)
	}
	checkEvalPlan(t, net)
	for j, g := range net.egroup { // a folded-away value has no buffer
		for _, i := range []int{j, g.aff, g.relu} {
			if i >= 0 && i != g.last && net.evSlot[i+1] >= 0 {
				t.Errorf("node %s's value, folded away, has slot %d", net.nodes[i].name, net.evSlot[i+1])
			}
		}
	}
	if folded, plain := sum(net.evSize), sum(net.fwdSize); folded > plain {
		t.Errorf("the folded pass holds %d values a sample, the unfolded %d", folded, plain)
	}
}

func sum(s []int) int {
	t := 0
	for _, v := range s {
		t += v
	}
	return t
}

// checkEvalPlan walks the folded pass over its slots: a node's inputs are
// still in their slots when it runs, and the value it writes does not
// overwrite one that it reads itself or that a later node (or finish)
// reads.
func checkEvalPlan(t *testing.T, n *Net) {
	t.Helper()
	lastRead := lastReads(n)
	owner := map[int]int{}
	for k := 0; k <= n.output; k++ {
		if n.eskip[k] {
			continue
		}
		for _, v := range n.nodes[k].inputs {
			if v > 0 && owner[n.evSlot[v]] != v {
				t.Errorf("graph %q: node %d reads value %d from slot %d, which holds value %d", n.spec.Name, k, v, n.evSlot[v], owner[n.evSlot[v]])
			}
		}
		v := n.egroup[k].last + 1
		s := n.evSlot[v]
		if s < 0 {
			t.Fatalf("graph %q: node %d writes value %d, which has no slot", n.spec.Name, k, v)
		}
		if u, ok := owner[s]; ok && (lastRead[u] > k || slices.Contains(n.nodes[k].inputs, u)) {
			t.Errorf("graph %q: node %d writes value %d into slot %d, which holds value %d, read by node %d later", n.spec.Name, k, v, s, u, lastRead[u])
		}
		owner[s] = v
	}
}

// foldedProbs runs x forward unfolded and folded on workers goroutines.
func foldedProbs(t *testing.T, net *Net, x []float32, workers int) (plain, folded []float32) {
	t.Helper()
	B := len(x) / net.InShape().Size()
	plain, folded = make([]float32, B*net.Classes()), make([]float32, B*net.Classes())
	net.Workers = workers
	net.UnfoldEval()
	if err := net.Forward(plain, x); err != nil {
		t.Fatal(err)
	}
	net.FoldEval()
	if err := net.Forward(folded, x); err != nil {
		t.Fatal(err)
	}
	return plain, folded
}

// TestFoldEvalProbs: the folded pass gives the unfolded pass's
// probabilities up to float32 rounding (within 1e-6), the same bytes on
// 1 and 2 workers; a change of Theta is not seen until FoldEval again
// (the pass runs on the folded parameters), and is after it; UnfoldEval
// gives the unfolded bytes back. On the golden networks with
// PyTorch's parameters the folded probabilities are PyTorch's within 1e-5.
func TestFoldEvalProbs(t *testing.T) {
	net := randomNet(t, evalSpec(), 2)
	x := randVec(rand.New(rand.NewPCG(3, 1)), 5*net.InShape().Size())
	plain, folded := foldedProbs(t, net, x, 1)
	if d, ok := closeTo(folded, plain, 1e-6); !ok {
		t.Errorf("folded probabilities differ from unfolded by %g", d)
	}
	_, folded2 := foldedProbs(t, net, x, 2)
	if !slices.Equal(folded, folded2) {
		t.Error("folded: 2 workers give other bytes than 1")
	}
	var at int
	for _, p := range net.Params() {
		if p.Name == "bn1.running_mean" {
			at = p.Offset
		}
	}
	old := net.Theta[at]
	net.Theta[at] += 5 // not seen until FoldEval again
	stale := make([]float32, len(plain))
	if err := net.Forward(stale, x); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stale, folded) {
		t.Error("folded: a change of Theta after FoldEval was seen")
	}
	net.UnfoldEval()
	again := make([]float32, len(plain))
	if err := net.Forward(again, x); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(again, plain) {
		t.Error("UnfoldEval: the change of Theta was not seen")
	}
	net.Theta[at] = old
	if err := net.Forward(again, x); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, plain) {
		t.Error("UnfoldEval: not the unfolded bytes")
	}
	for _, p := range net.Params() { // a new draw of the batchnorms' running statistics
		if p.Name == "fbn.running_mean" || p.Name == "bn1.running_var" {
			for j := range p.Len {
				net.Theta[p.Offset+j] += 0.3
			}
		}
	}
	plain2, folded3 := foldedProbs(t, net, x, 1)
	if d, ok := closeTo(folded3, plain2, 1e-6); !ok || slices.Equal(plain2, plain) {
		t.Errorf("after a change of Theta: folded differs from unfolded by %g (or the change changed nothing)", d)
	}

	for _, a := range golden.TorchArchs {
		if a.Name == "lstm" {
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			net, x := goldenNet(t, a)
			want := golden.Flat(golden.CSV32(t, golden.File(t, "archs", a.Name+"/probs.csv")))
			plain, folded := foldedProbs(t, net, x, 2)
			if len(net.EvalFolds()) == 0 {
				t.Fatal("nothing folded")
			}
			checkEvalPlan(t, net)
			worst := 0.0
			for j := range want {
				worst = max(worst, math.Abs(float64(folded[j]-want[j])))
			}
			if !(worst <= 1e-5) {
				t.Errorf("folded: %g from PyTorch's probabilities, want <= 1e-5", worst)
			}
			if d, ok := closeTo(folded, plain, 2e-6); !ok {
				t.Errorf("folded probabilities differ from unfolded by %g", d)
			}
		})
	}
}
