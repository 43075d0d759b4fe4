package graph

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/memtest"
)

// specTOML writes spec as a spec file writes it (see ReadSpecFile).
func specTOML(s Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name = %q\nin_channels = %d\nin_len = %d\n", s.Name, s.InChannels, s.InLen)
	for _, n := range s.Nodes {
		fmt.Fprintf(&b, "\n[[nodes]]\nname = %q\nop = %q\n", n.Name, n.Op)
		if n.Inputs != nil {
			q := make([]string, len(n.Inputs))
			for i, in := range n.Inputs {
				q[i] = strconv.Quote(in)
			}
			fmt.Fprintf(&b, "inputs = [%s]\n", strings.Join(q, ", "))
		}
		var keys []string
		for k := range n.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := n.Attrs[k].(type) {
			case []int64:
				fmt.Fprintf(&b, "%s = [%d, %d]\n", k, v[0], v[1])
			default:
				fmt.Fprintf(&b, "%s = %v\n", k, v)
			}
		}
	}
	return b.String()
}

// hostileBound is the bound of every case of TestHostileSpecs on what
// Compile or DecodeSpec may allocate before refusing: a few KiB of
// nodes, attributes and error text, far below any buffer the spec asks
// for (the old code made 8 GiB for linear out = 2^31).
const hostileBound = 1 << 20

// TestHostileSpecs (issue 34, items 2 and 4): a spec whose numbers
// overflow a shape expression or pass a bound is refused, from TOML and as
// a Spec alike, with an error naming the node, the attribute and the
// bound, before anything the numbers size is allocated.
func TestHostileSpecs(t *testing.T) {
	conv := func(attrs map[string]any) Node { return Node{Name: "conv1", Op: "conv1d", Attrs: attrs} }
	spec := func(inLen int, nodes ...Node) Spec {
		return Spec{Name: "hostile", InChannels: 1, InLen: inLen, Nodes: append(nodes, gap, fc)}
	}
	ext, out := strconv.Itoa(MaxExtent)+" = graph.MaxExtent", strconv.Itoa(MaxOut)+" = graph.MaxOut"
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"dilation 2^62", spec(640, conv(map[string]any{"out": 4, "kernel": 3, "dilation": int64(1) << 62})),
			[]string{`"conv1"`, "attribute dilation", "= 4611686018427387904", "1 <= dilation <= " + ext}},
		{"padding 2^62", spec(640, conv(map[string]any{"out": 4, "kernel": 3, "padding": []int64{1 << 62, 1 << 62}})),
			[]string{`"conv1"`, "attribute padding", "0 <= padding <= " + ext}},
		{"kernel 2^62", spec(640, conv(map[string]any{"out": 4, "kernel": int64(1) << 62})),
			[]string{`"conv1"`, "attribute kernel", "1 <= kernel <= " + ext}},
		{"stride 2^62", spec(640, conv(map[string]any{"out": 4, "kernel": 3, "stride": int64(1) << 62})),
			[]string{`"conv1"`, "attribute stride", "1 <= stride <= " + ext}},
		{"pad 2^62", spec(640, Node{Name: "p", Op: "pad", Attrs: map[string]any{"left": int64(1) << 62, "right": 1}}),
			[]string{`"p"`, "attribute left", "0 <= left <= " + ext}},
		{"pool stride 2^62", spec(640, Node{Name: "mp", Op: "maxpool1d", Attrs: map[string]any{"kernel": 2, "stride": int64(1) << 62}}),
			[]string{`"mp"`, "attribute stride", "1 <= stride <= " + ext}},
		{"pool kernel 2^62", spec(640, Node{Name: "ap", Op: "avgpool1d", Attrs: map[string]any{"kernel": int64(1) << 62}}),
			[]string{`"ap"`, "attribute kernel", "1 <= kernel <= " + ext}},
		{"linear out 2^31", spec(640, Node{Name: "gap0", Op: "globalavgpool"}, Node{Name: "big", Op: "linear", Attrs: map[string]any{"out": int64(1) << 31}}),
			[]string{`"big"`, "attribute out", "1 <= out <= " + out}},
		{"conv1d out 2^40", spec(640, conv(map[string]any{"out": int64(1) << 40, "kernel": 3})),
			[]string{`"conv1"`, "attribute out", "1 <= out <= " + out}},
		{"groups 2^40", spec(640, conv(map[string]any{"out": 4, "kernel": 3, "groups": int64(1) << 40})),
			[]string{`"conv1"`, "attribute groups", "1 <= groups <= " + out}},
		// Within every attribute's bound, beyond the counts: 64 x 640
		// flattened into 2^16 features is 2.7 G weights (10 GiB).
		{"parameters", spec(640, conv(map[string]any{"out": 64, "kernel": 1}), Node{Name: "flat", Op: "flatten"},
			Node{Name: "wide", Op: "linear", Attrs: map[string]any{"out": MaxOut}}),
			[]string{`"wide"`, "wide.weight of shape [65536 40960]", "bound of " + strconv.Itoa(MaxParams) + " parameters (graph.MaxParams"}},
		{"values", spec(1<<16, conv(map[string]any{"out": MaxOut, "kernel": 1})),
			[]string{`"conv1"`, "65536 x 65536", "bound of " + strconv.Itoa(MaxValues) + " values a sample (graph.MaxValues"}},
		{"input", spec(1 << 40), []string{"in_channels x in_len", "1 x 1099511627776", "graph.MaxValues"}},
		{"concat inputs", spec(640, Node{Name: "cat", Op: "concat", Inputs: strings.Split(strings.Repeat("input,", MaxInputs)+"input", ",")}),
			[]string{`"cat"`, "inputs: " + strconv.Itoa(MaxInputs+1), "bound of " + strconv.Itoa(MaxInputs) + " (graph.MaxInputs)"}},
	}
	for _, c := range cases {
		var err error
		if n := memtest.Allocated(func() { _, err = Compile(c.spec) }); n > hostileBound {
			t.Errorf("%s: Compile allocated %d bytes before refusing; want at most %d", c.name, n, hostileBound)
		}
		wantErr(t, c.name, err, c.want)
		text := []byte(specTOML(c.spec))
		if n := memtest.Allocated(func() { _, err = DecodeSpec(text, "hostile.toml") }); n > hostileBound+uint64(64*len(text)) {
			t.Errorf("%s: DecodeSpec allocated %d bytes before refusing; want at most %d", c.name, n, hostileBound+64*len(text))
		}
		wantErr(t, c.name+" (TOML)", err, append(c.want, "hostile.toml"))
	}
}

// TestSpecFileCounted (issue 34, item 4): a spec text with more node
// tables, keys or nesting than the bounds is refused before the TOML
// library reads it, naming the file, the count and the bound; the
// allocation is counted (the old code took 250 MB on 100k nodes).
func TestSpecFileCounted(t *testing.T) {
	head := "name = \"many\"\nin_channels = 1\nin_len = 16\n"
	tail := "[[nodes]]\nname = \"gap\"\nop = \"globalavgpool\"\n[[nodes]]\nname = \"fc\"\nop = \"linear\"\nout = 2\n"
	relus := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "[[nodes]]\nname = \"r%d\"\nop = \"relu\"\n", i)
		}
		return b.String()
	}
	inline := func(n int) string {
		var b strings.Builder
		b.WriteString("nodes = [\n")
		for i := range n {
			fmt.Fprintf(&b, "  {name = \"r%d\", op = \"relu\"},\n", i)
		}
		b.WriteString("  {name = \"gap\", op = \"globalavgpool\"},\n  {name = \"fc\", op = \"linear\", out = 2},\n]\n")
		return b.String()
	}
	const many = 100000
	cases := []struct {
		name, text string
		want       []string
	}{
		{"100k [[nodes]]", head + relus(many) + tail, []string{"many.toml", strconv.Itoa(many+2) + " node tables", "bound of " + strconv.Itoa(MaxNodes) + " nodes (graph.MaxNodes)"}},
		{"100k inline", head + inline(many), []string{"many.toml", strconv.Itoa(many+2) + " node tables", "graph.MaxNodes"}},
		{"MaxNodes+1", head + relus(MaxNodes-1) + tail, []string{"many.toml", strconv.Itoa(MaxNodes+1) + " node tables", "graph.MaxNodes"}},
		{"many keys", head + "[[nodes]]\nname = \"r\"\nop = \"relu\"\n" + strings.Repeat("k = 1\n", MaxSpecItems) + tail,
			[]string{"many.toml", strconv.Itoa(MaxSpecItems+10) + " keys and array elements", "bound of " + strconv.Itoa(MaxSpecItems) + " (graph.MaxSpecItems"}},
		{"long array", head + "[[nodes]]\nname = \"c\"\nop = \"concat\"\ninputs = [" + strings.Repeat("\"input\", ", MaxSpecItems) + "]\n" + tail,
			[]string{"many.toml", "keys and array elements", "graph.MaxSpecItems"}},
		{"deep", head + "x = " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n" + tail,
			[]string{"many.toml", "line 4", "nested 9 deep", "bound of " + strconv.Itoa(MaxSpecDepth) + " (graph.MaxSpecDepth"}},
	}
	for _, c := range cases {
		data := []byte(c.text)
		var err error
		if n := memtest.Allocated(func() { _, err = DecodeSpec(data, "many.toml") }); n > 1<<16 {
			t.Errorf("%s: %d bytes allocated before refusing %d bytes of text; want at most %d", c.name, n, len(data), 1<<16)
		}
		wantErr(t, c.name, err, c.want)
	}
	// Strings and comments are not counted; MaxNodes nodes are accepted.
	noise := "# [[nodes]] {a = 1, b = [[[[[[[[[[2]]]]]]]]]]}\n"
	text := head + "\n" + noise + strings.Replace(relus(MaxNodes-2), "op = \"relu\"\n", "op = \"relu\"\n"+noise, 1) + tail
	text = strings.Replace(text, `name = "many"`, `name = "{{{{{{{{{{[[[[[[[[[[ ,,,, ==="`, 1)
	s, err := DecodeSpec([]byte(text), "many.toml")
	if err != nil || len(s.Nodes) != MaxNodes {
		t.Errorf("%d nodes, strings and comments holding brackets: %d nodes, %v", MaxNodes, len(s.Nodes), err)
	}
	// Text ending inside a comment or a string is scanned to its end (the
	// TOML library reports an unclosed string).
	for _, end := range []string{"# the end, no newline", `x = "unclosed`, `x = '''unclosed`, `x = """unclosed\`, `x = "\`} {
		_, err := DecodeSpec([]byte(head+tail+end), "end.toml")
		if strings.HasPrefix(end, "#") != (err == nil) {
			t.Errorf("a text ending in %q: %v", end, err)
		}
	}
}

// TestBoundsExact: a shape of exactly MaxValues values and a parameter of
// exactly MaxParams pass their own checks and are refused by the sums
// after them (the input and its nodes, the parameters and the bias); one
// more is refused by their own, which give the bound in MiB of float32.
func TestBoundsExact(t *testing.T) {
	in := func(c, l int) Spec { return Spec{Name: "exact", InChannels: c, InLen: l, Nodes: []Node{gap, fc}} }
	_, err := Compile(in(1, MaxValues))
	wantErr(t, "input of MaxValues", err, []string{`node 0 "gap"`, "a sample's values", "graph.MaxValues", strconv.Itoa(MaxValues/(1<<18)) + " MiB as float32"})
	if strings.Contains(err.Error(), "in_channels x in_len") {
		t.Errorf("input of MaxValues values refused as the input: %v", err)
	}
	_, err = Compile(in(2, MaxValues/2+1))
	wantErr(t, "input of MaxValues+2", err, []string{"the input (in_channels x in_len) of 2 x " + strconv.Itoa(MaxValues/2+1),
		strconv.Itoa(MaxValues/(1<<18)) + " MiB as float32"})

	// 1024 features into 65536: a weight of exactly 2^26 values.
	wide := func(out int) Spec {
		return Spec{Name: "exact", InChannels: 1024, InLen: 1, Nodes: []Node{
			{Name: "fc", Op: "linear", Attrs: map[string]any{"out": out}}}}
	}
	if MaxOut*1024 != MaxParams {
		t.Fatalf("MaxOut x 1024 = %d, not MaxParams %d: the case below needs another width", MaxOut*1024, MaxParams)
	}
	_, err = Compile(wide(MaxOut))
	wantErr(t, "weight of MaxParams", err, []string{`node 0 "fc"`, "the network has " + strconv.Itoa(MaxParams+MaxOut) + " parameters up to fc.bias", "graph.MaxParams", strconv.Itoa(MaxParams/(1<<18)) + " MiB as float32"})
	if p, err := paramLen("w", []int{MaxParams + 1}); err == nil || !strings.Contains(err.Error(), "w of shape ["+strconv.Itoa(MaxParams+1)+"]") || !strings.Contains(err.Error(), strconv.Itoa(MaxParams/(1<<18))+" MiB as float32") {
		t.Errorf("a parameter of MaxParams+1 values: %d, %v", p, err)
	}
	if p, err := paramLen("w", []int{1 << 32, 1 << 32}); err == nil {
		t.Errorf("a parameter of 2^64 values: %d", p)
	}
	if p, err := paramLen("w", []int{MaxParams}); err != nil || p != MaxParams {
		t.Errorf("a parameter of MaxParams values: %d, %v", p, err)
	}
}

// TestCountSpec: countSpec's tables (table headers and inline tables) and
// items (each '=', ',' and array opening outside strings and comments: an
// upper bound of the keys and array elements) of small texts, counted by
// hand.
func TestCountSpec(t *testing.T) {
	for _, c := range []struct {
		text          string
		tables, items int
	}{
		{"", 0, 0},
		{"a = 1\n", 0, 1},
		{"a = [1, 2, 3]\n", 0, 4},
		{"[[nodes]]\nname = \"x\"\n  [[nodes]] # again\nop = 'y'\n", 2, 2},
		{"nodes = [{a = 1, b = [2, 3]}, {c = 4}]\n", 2, 9},
		{"a = \"[{,=\\\"]\"\nb = '[{,=\\'\n", 0, 2},
		{"a = \"\"\"\n[[nodes]]\n{,=\\\"\"\"\"\"\nb = 1\n", 0, 2},
		{"a = '''\n[[nodes]]\n{,= ''''\n[[nodes]]\n", 1, 1},
		{"a = \"\"\"x\\\"\"\"\" [\n", 0, 2},
		{"# [[nodes]] {a = 1}\n\t[x]\r\nb = 2 # , = {\n", 1, 1},
		{"a = [\n [1],\n {b = 2},\n]\n", 1, 6},
		{"a = 1 ]]]] }}}\nb = [1]\n", 0, 3},
		{"a = 1 # c\n[x]\n", 1, 1},          // a header after a comment line
		{"a = ['x\\', 'y']\n", 0, 3},        // no escape in a literal string
		{"a = \"x\\\", y\"\nb = 1\n", 0, 2}, // an escaped quote in a basic one
		{"a = ''", 0, 1},                    // strings at the end of the text
		{"a = \"\"", 0, 1},
		{"a = '''x'''", 0, 1},
	} {
		tables, items, err := countSpec([]byte(c.text))
		if err != nil || tables != c.tables || items != c.items {
			t.Errorf("%q: %d tables, %d items, %v; want %d, %d", c.text, tables, items, err, c.tables, c.items)
		}
	}
	deep := "a = " + strings.Repeat("[", MaxSpecDepth) + strings.Repeat("]", MaxSpecDepth) + "\n"
	if _, items, err := countSpec([]byte(deep)); err != nil || items != MaxSpecDepth+1 {
		t.Errorf("nesting %d: %d items, %v", MaxSpecDepth, items, err)
	}
	if _, _, err := countSpec([]byte("\n\n" + strings.Replace(deep, "[", "[[", 1))); err == nil || !strings.Contains(err.Error(), "line 3:") {
		t.Errorf("nesting %d: %v; want an error at line 3", MaxSpecDepth+1, err)
	}
	// scanSpec's bounds: MaxSpecItems items and MaxNodes tables pass.
	items := []byte("a = [" + strings.Repeat("1,", MaxSpecItems-2) + "]\n")
	for _, c := range []struct {
		text []byte
		want string
	}{
		{items, ""},
		{append([]byte("b = 1\n"), items...), strconv.Itoa(MaxSpecItems+1) + " keys and array elements, above the bound of " + strconv.Itoa(MaxSpecItems) + " (graph.MaxSpecItems: " + strconv.Itoa(MaxSpecItems/MaxNodes) + " a node)"},
		{[]byte(strings.Repeat("[[nodes]]\n", MaxNodes)), ""},
		{[]byte(strings.Repeat("[[nodes]]\n", MaxNodes) + "x = {}\n"), strconv.Itoa(MaxNodes+1) + " node tables"},
	} {
		err := scanSpec(c.text)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q...: %v; want %q", c.text, err, c.want)
		}
	}
}

// TestCheckPath: a module path's parts are letters, digits and '_' (the
// ends of each range included); anything else is refused, naming it.
func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"Az_09", "block1.conv1", "z.Z.a.A.0.9._"} {
		if err := checkPath(ok); err != nil {
			t.Errorf("checkPath(%q): %v", ok, err)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"", "is empty"}, {"a..b", "empty part"}, {"a-b", `character '-'`}, {"a/b", `character '/'`},
		{"a@", `character '@'`}, {"a[", `character '['`}, {"a`", "character '`'"}, {"a{", `character '{'`}, {"a:", `character ':'`},
	} {
		if err := checkPath(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkPath(%q): %v, want an error with %q", c.path, err, c.want)
		}
	}
}
