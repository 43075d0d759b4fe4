package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
)

// TestCheckTrial: `recipe check` runs every explainer on one input and
// every summary on the recipe's numbers of draws, so tables that only
// fail on the data's shape fail at check time, at their line, before any
// fit; a sound recipe passes and writes nothing.
func TestCheckTrial(t *testing.T) {
	dir := t.TempDir()
	m := inProcess(t)
	for _, c := range []struct {
		name, extra, marker string
		atKey               bool // the error is at the marker's line, else at its table's
		want                []string
	}{
		{"window longer than the input", "\n[[explainer]]\nuse = \"occlusion\"\nlabel = \"w641\"\nwindow = 641\n", "window = 641", true,
			[]string{"[[explainer]] #2 (explainer.occlusion): trial on one input of 640 samples", "window 641 is longer than the input (640 samples)"}},
		{"band above the draws", "\n[[summary]]\nuse = \"band\"\nk = 1\nl = 3\n", "use = \"band\"", false,
			[]string{"[[summary]] #3 (summary.band): trial on 2 draws of maps of 640 values", `"l" = 3`, "S = 2"}},
		{"Grad-CAM on a layer after the pool", "\n[[explainer]]\nuse = \"gradcam\"\nlayer = \"fc1\"\n", "use = \"gradcam\"", false,
			[]string{"(explainer.gradcam): trial on one input", "fc1"}},
		{"sound", "", "", false, nil},
	} {
		text := tinyRecipe(filepath.Join(dir, "runs"), c.extra)
		r, err := recipe.Parse("tiny.toml", []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(context.Background(), r, m)
		// The recipe names built-ins only: CheckStatic starts them all,
		// and so finds what Check finds, word for word.
		skipped, serr := CheckStatic(context.Background(), r, m)
		if fmt.Sprint(serr) != fmt.Sprint(err) || len(skipped) != 0 {
			t.Errorf("%s: CheckStatic: %v, not started %v; Check: %v", c.name, serr, skipped, err)
		}
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		line := 0
		for i, l := range strings.Split(text, "\n") {
			if strings.Contains(l, c.marker) {
				line = i
			}
		}
		// A key's own line when the error names the key, else the table's:
		// the [[...]] header above the marker.
		lines := strings.Split(text, "\n")
		for line > 0 && !strings.HasPrefix(lines[line], "[[") && !c.atKey {
			line--
		}
		if err == nil {
			t.Errorf("%s: recipe check passed", c.name)
			continue
		}
		for _, w := range append(c.want, "line "+strconv.Itoa(line+1)+":") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "runs")); len(ents) != 0 {
		t.Errorf("recipe check wrote %d run directories", len(ents))
	}
}
