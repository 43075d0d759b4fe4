package onnx

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// chainBytes is a model of n unnamed Relu nodes in a chain on x of shape
// (1, 2, 8), then a mean over time and a softmax (also unnamed): the
// shape of a long export whose nodes torch left without module scopes.
func chainBytes(tb testing.TB, n int) []byte {
	tb.Helper()
	b := newBuilder()
	prev := "x"
	for i := 0; i < n; i++ {
		out := fmt.Sprintf("v%d", i)
		b.g.Node = append(b.g.Node, &onnxpb.NodeProto{OpType: proto.String("Relu"), Input: []string{prev}, Output: []string{out}})
		prev = out
	}
	b.g.Node = append(b.g.Node,
		&onnxpb.NodeProto{OpType: proto.String("ReduceMean"), Input: []string{prev}, Output: []string{"m"}, Attribute: []*onnxpb.AttributeProto{intsAttr1("axes", 2), intAttr("keepdims", 0)}},
		&onnxpb.NodeProto{OpType: proto.String("Softmax"), Input: []string{"m"}, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{intAttr("axis", 1)}})
	raw, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: b.g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}}})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// convertChain decodes and converts a chain of n unnamed nodes and
// returns the conversion.
func convertChain(tb testing.TB, n int) *converter {
	tb.Helper()
	m, err := Decode(chainBytes(tb, n), "chain.onnx")
	if err != nil {
		tb.Fatal(err)
	}
	c, err := convert(m)
	if err != nil {
		tb.Fatal(err)
	}
	if len(c.spec.Nodes) != n+2 {
		tb.Fatalf("%d nodes, want %d", len(c.spec.Nodes), n+2)
	}
	return c
}

// TestImportLinear checks that naming the nodes of a long chain of
// unnamed nodes (all of the root module, so named relu, relu_2, …) is
// linear: the names tried for 100,000 nodes are at most 10 times (and a
// little) those for 10,000, where probing every name from _2 made them
// 100 times. It counts work, not time; the names are checked distinct
// and in order.
func TestImportLinear(t *testing.T) {
	small, large := convertChain(t, 10_000), convertChain(t, 100_000)
	if small.probes < 10_000 || large.probes > 10*small.probes+100 {
		t.Errorf("name probes: %d for 10k nodes, %d for 100k: want at least one a node and a ratio of at most 10", small.probes, large.probes)
	}
	seen := map[string]bool{}
	for i, nd := range large.spec.Nodes[:100_000] {
		want := "relu"
		if i > 0 {
			want = fmt.Sprintf("relu_%d", i+1)
		}
		if nd.Name != want || seen[nd.Name] {
			t.Fatalf("node %d is named %q, want %q", i, nd.Name, want)
		}
		seen[nd.Name] = true
	}
}

// BenchmarkImportChain decodes and converts a chain of 10k and 100k
// unnamed nodes.
func BenchmarkImportChain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		raw := chainBytes(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				m, err := Decode(raw, "chain.onnx")
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := ToSpec(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
