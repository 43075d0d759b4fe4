package recipe

import (
	"os"
	"testing"
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
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("fuzz.toml", data, dir)
		if err != nil {
			return
		}
		checkCanonical(t, r, dir)
	})
}
