package recipe

import (
	"os"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse: no recipe text panics the decoder; every recipe it accepts
// has a deterministic canonical form that parses back to the same recipe
// and is a fixed point (checkCanonical).
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../../recipes/quickstart.toml", "../../recipes/quick/every_plugin.toml", "../../recipes/paper/bnn_results.toml", "../../recipes/paper/sensitivity.toml", "../../recipes/paper/uarao_results.toml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name = \"x\"\n[[posterior]]\nuse = \"ensemble\"\ndraws = 5\n"))
	f.Add([]byte("name = \"\\u0000\"\nseed = -1\n[data]\ndir = \"../x\"\n"))
	f.Add([]byte("[[explainer]]\nuse = \"occlusion\"\nwindow = 1e400\n"))
	f.Add([]byte("[[summary]]\nuse = \"quantile\"\nalpha = [0.1, {a = 1}]\n"))
	// Deep nesting and long key paths (checkText refuses them before the
	// TOML library reads them), and bounded counts.
	for _, c := range nested {
		f.Add([]byte("name = \"x\"\n" + c.gen(MaxDepth+1)))
		f.Add([]byte("name = \"x\"\n" + c.gen(MaxDepth)))
	}
	f.Add([]byte("[" + strings.Repeat("k", MaxKeyPath) + "]\nb = 1\n"))
	f.Add([]byte("x = \"\\\n[[[[\"\ny = '''\n{{{{'''\n"))
	f.Add([]byte("name = \"x\"\n[[posterior]]\nuse = \"ensemble\"\ndraws = 1000000000\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// checkText refuses no nesting that the TOML library does not
		// decode deeper than MaxDepth (its count is at most treeHeight).
		if err := checkText("fuzz.toml", data); err != nil && strings.Contains(err.Error(), "levels deep") {
			var raw map[string]any
			if _, derr := toml.Decode(string(data), &raw); derr == nil && treeHeight(raw) <= MaxDepth {
				t.Fatalf("refused a text that nests %d deep (bound %d): %v", treeHeight(raw), MaxDepth, err)
			}
		}
		r, err := Parse("fuzz.toml", data, dir)
		if err != nil {
			return
		}
		checkCanonical(t, r, dir)
	})
}
