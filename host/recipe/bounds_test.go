package recipe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/internal/memtest"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestKeyLinesLinear: the line scanner's memory grows linearly with the
// depth of a nested value: doubling the depth at most doubles the bytes
// allocated (with some slack for map growth), where a path copied or
// joined at each level would quadruple them. The depth here is far beyond
// what Parse lets through (MaxDepth); scanKeyLines is tested on its own.
func TestKeyLinesLinear(t *testing.T) {
	for _, c := range []struct {
		name string
		gen  func(n int) string
	}{
		{"array", func(n int) string { return "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" }},
		{"inline", func(n int) string { return "x = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n" }},
		{"dotted", func(n int) string { return "x" + strings.Repeat(".a", n) + " = 1\n" }},
		{"header", func(n int) string { return "[x" + strings.Repeat(".a", n) + "]\ny = 1\n" }},
	} {
		const n = 3000
		var kl *keyLines
		small := memtest.Allocated(func() { kl = scanKeyLines(c.gen(n)) })
		// The deepest key is found, at line 1 (2 for the header's key).
		path := []string{"x"}
		for range n {
			if c.name == "array" {
				path = append(path, "0")
			} else {
				path = append(path, "a")
			}
		}
		if c.name == "array" {
			path = path[:len(path)-1] // the innermost array is empty
		}
		if c.name == "header" {
			path = append(path, "y")
		}
		if got := kl.get(path...); got < 1 {
			t.Errorf("%s: the deepest key has no line", c.name)
		}
		big := memtest.Allocated(func() { scanKeyLines(c.gen(4 * n)) })
		t.Logf("%s: depth %d: %d bytes; depth %d: %d bytes", c.name, n, small, 4*n, big)
		if ratio := float64(big) / float64(small); ratio > 6 {
			t.Errorf("%s: depth %d allocates %d bytes, depth %d %d: %.1f times for 4 times the depth (linear: about 4, quadratic: 16)", c.name, n, small, 4*n, big, ratio)
		}
	}
}

// treeHeight is the nesting of a decoded TOML value as checkText counts
// it: a key adds one level, an array one level (an empty one too), an
// inline table or table none beyond its keys. checkText counts an array
// of tables as its header's parts, one less than this; so its depth is at
// most treeHeight and equal to it without arrays of tables.
func treeHeight(v any) int {
	h := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			h = max(h, 1+treeHeight(e))
		}
	case []map[string]any:
		h = 1
		for _, e := range x {
			h = max(h, 1+treeHeight(e))
		}
	case []any:
		h = 1
		for _, e := range x {
			h = max(h, 1+treeHeight(e))
		}
	}
	return h
}

// nested makes a top-level key whose value nests to tree height n.
var nested = []struct {
	name string
	gen  func(n int) string
}{
	{"array", func(n int) string { return "x = " + strings.Repeat("[", n-1) + "1" + strings.Repeat("]", n-1) + "\n" }},
	{"empty array", func(n int) string { return "x = " + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "\n" }},
	{"inline table", func(n int) string { return "x = " + strings.Repeat("{a=", n-1) + "1" + strings.Repeat("}", n-1) + "\n" }},
	{"dotted key", func(n int) string { return "x" + strings.Repeat(".a", n-1) + " = 1\n" }},
	{"table header", func(n int) string { return "[x" + strings.Repeat(".a", n-2) + "]\ny = 1\n" }},
	{"arrays of inline tables", func(n int) string {
		// x = [{a = [{a = ... 1 ...}]}]: each [{a= adds two levels
		k := (n - 1) / 2
		s := "x = " + strings.Repeat("[{a=", k)
		if (n-1)%2 == 1 {
			s += "[1]"
		} else {
			s += "1"
		}
		return s + strings.Repeat("}]", k) + "\n"
	}},
	{"multi-line array with comments and strings", func(n int) string {
		return "x = [ # [[[[ not nesting\n" + strings.Repeat("'[', \"{\", [\n", n-2) + "\"\"\"]]\n]]\"\"\"" + strings.Repeat("]\n", n-2) + "]\n"
	}},
}

// TestNestingBound: checkText accepts a text nested MaxDepth deep and
// refuses one level more, for every way of nesting, with the depth the
// TOML library's own decoding gives (treeHeight).
func TestNestingBound(t *testing.T) {
	for _, c := range nested {
		for _, n := range []int{MaxDepth - 1, MaxDepth, MaxDepth + 1} {
			text := c.gen(n)
			var raw map[string]any
			if _, err := toml.Decode(text, &raw); err != nil {
				t.Fatalf("%s %d: the test's text is not TOML: %v\n%s", c.name, n, err, text)
			}
			if h := treeHeight(raw); h != n {
				t.Fatalf("%s %d: the test's text nests %d deep", c.name, n, h)
			}
			err := checkText("n.toml", []byte(text))
			if (err == nil) != (n <= MaxDepth) {
				t.Errorf("%s nested %d deep (bound %d): %v", c.name, n, MaxDepth, err)
			}
		}
	}
}

// TestDeepRecipe: a recipe nested 20,000 deep (40 to 80 KB) is refused
// before the TOML library reads it, with an error naming the file, the line
// where the nesting passes the bound and the bound, and allocating little
// more than the text: the old code took gigabytes (1.2 GB at 5,000 deep
// inline tables).
func TestDeepRecipe(t *testing.T) {
	const n = 20000
	head := "name = \"deep\"\n# a comment with [[[ brackets\n"
	for _, c := range nested {
		body := c.gen(n)
		text := head + body
		var err error
		bytes := memtest.Allocated(func() { _, err = Parse("deep.toml", []byte(text), "") })
		// The line where depth MaxDepth+1 is reached: the key line for
		// all but the multi-line array, whose bracket of that depth opens
		// on its line MaxDepth.
		line := strings.Count(head, "\n") + 1
		if c.name == "multi-line array with comments and strings" {
			line += MaxDepth - 1
		}
		wantErr(t, err, line, "recipe deep.toml: line", fmt.Sprintf("above the bound of %d", MaxDepth))
		if limit := uint64(4*len(text)) + 256<<10; bytes > limit {
			t.Errorf("%s: refusing %d bytes of text allocated %d bytes (more than %d)", c.name, len(text), bytes, limit)
		}
	}
}

// TestKeyPathBound: a key path of MaxKeyPath bytes is accepted, one more
// is refused, whether the bytes are in the header, the key or an inline
// table's key; a file beyond MaxRecipeSize is refused by Parse and Load.
func TestKeyPathBound(t *testing.T) {
	name := func(n int) string { return strings.Repeat("k", n) }
	for _, gen := range []func(n int) string{
		func(n int) string { return "[" + name(n-2) + ".a]\nb = 1\n" },         // header n-2 + 1, key 1
		func(n int) string { return name(n-1) + ".b = 1\n" },                   // dotted key
		func(n int) string { return "[t]\nx = {" + name(n-2) + " = 1}\n" },     // t + x + the inline key
		func(n int) string { return "[t]\nx = [{" + name(n-2) + " = [1]}]\n" }, // arrays add no bytes
	} {
		for _, n := range []int{MaxKeyPath, MaxKeyPath + 1} {
			text := gen(n)
			err := checkText("k.toml", []byte(text))
			if (err == nil) != (n <= MaxKeyPath) {
				t.Errorf("key path of %d bytes (bound %d): %v\n%.80s", n, MaxKeyPath, err, text)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", n)) {
				t.Errorf("error does not give the key path's %d bytes: %v", n, err)
			}
		}
	}

	big := minimal + "# " + strings.Repeat("x", MaxRecipeSize) + "\n"
	_, err := Parse("big.toml", []byte(big), "")
	wantErr(t, err, 0, "recipe big.toml", fmt.Sprintf("the file is %d bytes, above the bound of %d", len(big), MaxRecipeSize))
	p := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(p)
	wantErr(t, err, 0, p, fmt.Sprintf("%d bytes, more than the %d accepted", len(big), MaxRecipeSize))
	// At the bound: accepted (the comment pads a valid recipe).
	atBound := minimal + "# " + strings.Repeat("x", MaxRecipeSize-len(minimal)-3) + "\n"
	if len(atBound) != MaxRecipeSize {
		t.Fatalf("padding: %d bytes", len(atBound))
	}
	if _, err := Parse("max.toml", []byte(atBound), ""); err != nil {
		t.Errorf("a recipe of exactly %d bytes: %v", MaxRecipeSize, err)
	}
}

// TestCountBounds: every count that sizes an allocation has an upper
// bound: the largest accepted value decodes, one more is an error naming
// the key, its line and the bound. Where a product is bounded (draws times
// the input, samples of the data, parameters, a batch's activations) the
// largest accepted value is computed from the bound and the other factors.
func TestCountBounds(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"train", "test"} {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
		for _, f := range []string{"waveforms.csv", "labels.csv"} {
			os.WriteFile(filepath.Join(dir, sub, f), nil, 0o644)
		}
	}
	withPosterior := func(extra string) string {
		return strings.Replace(minimal, "use = \"ensemble\"\n", "use = \"ensemble\"\n"+extra, 1)
	}
	list := func(n int, el func(i int) string) string {
		els := make([]string, n)
		for i := range els {
			els[i] = el(i)
		}
		return "[" + strings.Join(els, ", ") + "]"
	}
	files := "[data]\nsource = \"files\"\ntrain = \"train\"\ntest = [\"test\"]\n"
	inline := func(inC, inLen int, layers string) string {
		return fmt.Sprintf("[model]\narch = \"m\"\nin_channels = %d\nin_len = %d\n%s", inC, inLen, layers)
	}
	head := "[[model.layers]]\nkind = \"globalmaxpool\"\n"
	dense := func(name string, out int) string {
		return fmt.Sprintf("[[model.layers]]\nkind = \"dense\"\nname = %q\nout = %d\n", name, out)
	}
	logits := head + dense("fc", NumClasses)
	// The paper network's activations a sample: input and every layer.
	paper, _ := nn.LookupArch(nn.PaperArchName)
	shapes, err := paper.OutputShapes()
	if err != nil {
		t.Fatal(err)
	}
	acts := paper.InChannels * paper.InLen
	for _, s := range shapes {
		acts += s.C * s.T
	}
	const wide = 65536 // a dense layer of MaxLayerOut units
	// Parameters of globalmaxpool, dense(wide), dense(n), dense(16) on one
	// channel: 2*wide + n*(wide+1) + 16*(n+1).
	maxParamsN := (MaxParams - 2*wide - NumClasses) / (wide + 1 + NumClasses)

	for _, c := range []struct {
		key   string // the key named in the error
		bound int
		gen   func(n int) string
		says  string // what the error says of the bound; "": "above the bound <bound>"
	}{
		{"workers", MaxWorkers, func(n int) string { return fmt.Sprintf("workers = %d\n", n) + minimal }, ""},
		{"draws", MaxDraws, func(n int) string { return withPosterior(fmt.Sprintf("draws = %d\n", n)) }, ""},
		{"draws", MaxDrawValues / 64000, func(n int) string { // a network of 64,000 inputs
			return withPosterior(fmt.Sprintf("draws = %d\n", n)) + "[data]\ncycles = 1000\n" + inline(1, 64000, logits)
		}, ""},
		{"explainer", MaxPluginTables, func(n int) string {
			s := minimal
			for i := 1; i < n; i++ {
				s += fmt.Sprintf("[[explainer]]\nuse = \"occlusion\"\nlabel = \"e%d\"\n", i)
			}
			return s
		}, ""},
		{"train_per_class", MaxPerClass, func(n int) string { return minimal + fmt.Sprintf("[data]\ntrain_per_class = %d\n", n) }, ""},
		{"train_per_class", MaxDataSamples / (NumClasses * 64000), func(n int) string {
			return minimal + fmt.Sprintf("[data]\ncycles = 1000\ntrain_per_class = %d\n", n) + inline(1, 64000, logits)
		}, ""},
		{"test_splits", MaxTestSplits, func(n int) string { return minimal + fmt.Sprintf("[data]\ntest_splits = %d\n", n) }, ""},
		{"test_per_class", MaxPerClass, func(n int) string { return minimal + fmt.Sprintf("[data]\ntest_splits = 1\ntest_per_class = %d\n", n) }, ""},
		{"test_per_class", MaxDataSamples / (2 * NumClasses * 64000), func(n int) string {
			return minimal + fmt.Sprintf("[data]\ncycles = 1000\ntest_splits = 2\ntest_per_class = %d\n", n) + inline(1, 64000, logits)
		}, ""},
		{"cycles", MaxWaveLen, func(n int) string { // fs = f0: the waveform is cycles samples
			return minimal + fmt.Sprintf("[data]\nf0 = 50.0\nfs = 50.0\ncycles = %d\n", n) + inline(1, min(n, MaxWaveLen), logits)
		}, ""},
		{"cycles", MaxWaveLen / 64, func(n int) string { // 64 samples a cycle
			return minimal + fmt.Sprintf("[data]\ncycles = %d\n", n) + inline(1, min(64*n, MaxWaveLen), logits)
		}, fmt.Sprintf("%d samples a waveform, above the bound %d", 64*(MaxWaveLen/64+1), MaxWaveLen)},
		{"classes", NumClasses, func(n int) string {
			return minimal + "[data]\nclasses = " + list(n, func(i int) string { return fmt.Sprint(i) }) + "\n"
		}, ""},
		{"test", MaxTestSplits, func(n int) string {
			return minimal + "[data]\nsource = \"files\"\ntrain = \"train\"\ntest = " + list(n, func(int) string { return `"test"` }) + "\n"
		}, ""},
		{"in_channels", MaxInChannels, func(n int) string { return minimal + files + inline(n, 640, logits) }, ""},
		{"in_len", MaxWaveLen, func(n int) string { return minimal + files + inline(1, n, logits) }, ""},
		{"layers", MaxLayers, func(n int) string {
			return minimal + inline(1, 640, strings.Repeat("[[model.layers]]\nkind = \"relu\"\n", n-2)+logits)
		}, ""},
		{"out", MaxLayerOut, func(n int) string { return minimal + inline(1, 640, head+dense("a", n)+dense("fc", NumClasses)) }, ""},
		{"kernel", MaxWaveLen, func(n int) string {
			return minimal + files + inline(1, MaxWaveLen, fmt.Sprintf("[[model.layers]]\nkind = \"maxpool1d\"\nkernel = %d\n[[model.layers]]\nkind = \"flatten\"\n", n)+dense("fc", NumClasses))
		}, ""},
		{"out", maxParamsN, func(n int) string { // the parameters' bound
			return minimal + inline(1, 640, head+dense("a", wide)+dense("b", n)+dense("fc", NumClasses))
		}, fmt.Sprintf("layer 2 (dense): the network has %d parameters up to b.bias of shape [%d], above the bound of %d", 2*wide+(maxParamsN+1)*(wide+1), maxParamsN+1, MaxParams)},
		{"batch", MaxBatch, func(n int) string { return minimal + fmt.Sprintf("[train]\nbatch = %d\n", n) + inline(1, 640, logits) }, ""},
		{"batch", min(MaxBatch, MaxBatchValues/acts), func(n int) string { return minimal + fmt.Sprintf("[train]\nbatch = %d\n", n) }, ""},
		{"build", MaxDraws / 2, func(n int) string { return minimal + fmt.Sprintf("[calibration]\nbuild = %d\n", n) }, ""},
		{"partitions", MaxPartitions, func(n int) string { return minimal + fmt.Sprintf("[calibration]\npartitions = %d\n", n) }, ""},
		{"levels", MaxList, func(n int) string {
			return minimal + "[calibration]\nlevels = " + list(n, func(int) string { return "0.5" }) + "\n"
		}, ""},
		{"etas", MaxList, func(n int) string {
			return minimal + "[agreement]\netas = " + list(n, func(int) string { return "0.5" }) + "\n"
		}, ""},
		{"deltas", MaxList, func(n int) string {
			return minimal + "[agreement]\ndeltas = " + list(n, func(int) string { return "0.5" }) + "\n"
		}, ""},
		{"distortions", MaxList, func(n int) string {
			return minimal + "[sensitivity]\ndistortions = " + list(n, func(i int) string { return fmt.Sprintf(`"noise %d"`, i+1) }) + "\n"
		}, ""},
		{"qualitative", MaxList, func(n int) string {
			return minimal + "[figures]\nqualitative = " + list(n, func(int) string { return `"normal"` }) + "\n"
		}, ""},
		{"plugin_dirs", MaxList, func(n int) string {
			return "plugin_dirs = " + list(n, func(int) string { return `"."` }) + "\n" + minimal
		}, ""},
		{"repeats", 1000, func(n int) string { return minimal + fmt.Sprintf("[total_variance]\nrepeats = %d\n", n) }, "accepted: 2..1000"},
		{"shards", MaxShards, func(n int) string { return minimal + fmt.Sprintf("[slurm]\nshards = %d\n", n) }, ""},
		{"cpus_per_task", MaxWorkers, func(n int) string { return minimal + fmt.Sprintf("[slurm]\ncpus_per_task = %d\n", n) }, ""},
	} {
		if _, err := Parse("max.toml", []byte(c.gen(c.bound)), dir); err != nil {
			t.Errorf("%s = %d, the bound: %v", c.key, c.bound, err)
		}
		text := c.gen(c.bound + 1)
		_, err := Parse("big.toml", []byte(text), dir)
		if err == nil {
			t.Errorf("%s = %d, above the bound %d: no error", c.key, c.bound+1, c.bound)
			continue
		}
		// The error's line: the key's, or for a list's elements and the
		// plugin tables, the element's or the table's one past the bound.
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("%q", c.key)) && !strings.Contains(msg, "[["+c.key+"]]") && !strings.Contains(msg, "[[model."+c.key+"]]") {
			t.Errorf("%s = %d: the error does not name the key: %v", c.key, c.bound+1, err)
		}
		says := c.says
		if says == "" {
			says = fmt.Sprintf("above the bound %d", c.bound)
			if c.key == "classes" {
				says = fmt.Sprintf("above the %d the benchmark has", c.bound)
			}
		}
		if !strings.Contains(msg, says) {
			t.Errorf("%s = %d: the error does not say %q: %v", c.key, c.bound+1, says, err)
		}
		if !strings.Contains(msg, "recipe big.toml: line ") {
			t.Errorf("%s = %d: the error gives no line: %v", c.key, c.bound+1, err)
		}
	}
}
