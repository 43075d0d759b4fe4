package recipe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/memtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestGraphHostile (issue 34, items 2 and 4): a graph, in a [model] graph
// file or in [[model.nodes]], whose numbers overflow a shape or pass a
// bound is refused at its key with the node, the attribute and the bound
// named, before the parameters or buffers it asks for are allocated
// (counted: the old code made the parameter vector of linear out = 2^31,
// 8 GiB, before MaxParams refused it, and spent 250 MB on a file of 100k
// nodes).
func TestGraphHostile(t *testing.T) {
	dir := t.TempDir()
	const head = "name = \"h\"\nin_channels = 1\nin_len = 640\n"
	node := func(name, op, attrs string) string {
		return fmt.Sprintf("[[nodes]]\nname = %q\nop = %q\n%s\n", name, op, attrs)
	}
	tail := node("gap", "globalavgpool", "") + node("fc", "linear", "out = 16")
	var many strings.Builder
	for i := range 100000 {
		many.WriteString(node("r"+strconv.Itoa(i), "relu", ""))
	}
	ext, out := strconv.Itoa(graph.MaxExtent), strconv.Itoa(graph.MaxOut)
	cases := []struct {
		name, spec string
		want       []string
	}{
		{"dilation 2^62", node("conv1", "conv1d", "out = 4\nkernel = 3\ndilation = 4611686018427387904") + tail,
			[]string{`"conv1"`, "attribute dilation", "dilation <= " + ext + " = graph.MaxExtent"}},
		{"padding 2^62", node("conv1", "conv1d", "out = 4\nkernel = 3\npadding = [4611686018427387904, 4611686018427387904]") + tail,
			[]string{`"conv1"`, "attribute padding", "padding <= " + ext + " = graph.MaxExtent"}},
		{"linear out 2^31", node("gap0", "globalavgpool", "") + node("big", "linear", "out = 2147483648") + tail,
			[]string{`"big"`, "attribute out", "out <= " + out + " = graph.MaxOut"}},
		{"conv1d out 2^40", node("conv1", "conv1d", "out = 1099511627776\nkernel = 3") + tail,
			[]string{`"conv1"`, "attribute out", "out <= " + out + " = graph.MaxOut"}},
		{"parameters", node("conv1", "conv1d", "out = 64\nkernel = 1") + node("flat", "flatten", "") + node("wide", "linear", "out = 65536") + tail,
			[]string{`"wide"`, "wide.weight", "bound of " + strconv.Itoa(MaxParams), "graph.MaxParams"}},
		{"100k nodes", many.String() + tail, []string{"100002 node tables", "bound of " + strconv.Itoa(MaxNodes) + " nodes (graph.MaxNodes)"}},
	}
	for _, c := range cases {
		file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".toml")
		if err := os.WriteFile(file, []byte(head+c.spec), 0o600); err != nil {
			t.Fatal(err)
		}
		// A file: the error at [model] graph names it.
		text := minimal + "[model]\ngraph = \"" + filepath.Base(file) + "\"\n"
		var err error
		n := memtest.Allocated(func() { _, err = Parse("h.toml", []byte(text), dir) })
		if bound := 16<<20 + 4*uint64(len(head+c.spec)); n > bound {
			t.Errorf("%s: %d bytes allocated before refusing; want at most %d", c.name, n, bound)
		}
		wantErr(t, err, lineOf(t, text, "graph ="), append(c.want, filepath.Base(file))...)
		if c.name == "100k nodes" {
			continue // [[model.nodes]] have their own bound, below
		}
		// The same nodes inline: the error at the node's table.
		inline := minimal + "[model]\narch = \"h\"\nin_channels = 1\nin_len = 640\n" + strings.ReplaceAll(c.spec, "[[nodes]]", "[[model.nodes]]")
		n = memtest.Allocated(func() { _, err = Parse("h.toml", []byte(inline), dir) })
		if bound := uint64(16 << 20); n > bound {
			t.Errorf("%s inline: %d bytes allocated before refusing; want at most %d", c.name, n, bound)
		}
		name := c.want[0][1 : len(c.want[0])-1]
		wantErr(t, err, lineOf(t, inline, "name = \""+name+"\"")-1, c.want...)
	}
	// [[model.nodes]] beyond the bound: refused at the first node past it.
	var b strings.Builder
	for i := range MaxNodes + 1 {
		fmt.Fprintf(&b, "[[model.nodes]]\nname = \"r%d\"\nop = \"relu\"\n", i)
	}
	inline := minimal + "[model]\narch = \"h\"\nin_channels = 1\nin_len = 640\n" + b.String()
	_, err := Parse("h.toml", []byte(inline), dir)
	wantErr(t, err, lineOf(t, inline, fmt.Sprintf("\"r%d\"", MaxNodes))-1, strconv.Itoa(MaxNodes+1)+" nodes are above the bound "+strconv.Itoa(MaxNodes))
}
