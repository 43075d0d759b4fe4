package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
)

// TestScoredGroups: the one-phase PQD's classes are scored in the paper's
// groups; other data's classes are every class but normal, in group
// "all", and disc-7 is left out of the default groups and refused when a
// recipe names it.
func TestScoredGroups(t *testing.T) {
	parse := func(extra string) *recipe.Recipe {
		t.Helper()
		r, err := recipe.Parse("g.toml", []byte("name = \"g\"\n[[posterior]]\nuse = \"deterministic\"\n[[explainer]]\nuse = \"occlusion\"\n[[summary]]\nuse = \"mean\"\n"+extra), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	paper := eval.PaperGroups()
	for _, names := range [][]string{nil, data.ClassNames[:]} {
		classes, groups, err := scoredGroups(parse(""), names)
		if err != nil || !reflect.DeepEqual(classes, paper["all"]) || !reflect.DeepEqual(groups, paper) {
			t.Errorf("PQD names %v: classes %v groups %v (%v), want the paper's %v", names != nil, classes, groups, err, paper)
		}
	}
	three := data.PQD3{}.Classes()
	classes, groups, err := scoredGroups(parse(""), three)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for c, n := range three {
		if n != "normal" {
			want = append(want, c)
		}
	}
	if !reflect.DeepEqual(classes, want) || len(groups) != 1 || !reflect.DeepEqual(groups["all"], want) {
		t.Errorf("three-phase: classes %v groups %v, want %v in group all only", classes, groups, want)
	}
	r := parse("[evaluate]\ngroups = [\"all\", \"disc-7\"]\n")
	if _, _, err := scoredGroups(r, three); err == nil || !strings.Contains(err.Error(), `group "disc-7"`) || !strings.Contains(err.Error(), "line ") {
		t.Errorf("disc-7 asked of three-phase data: %v, want an error naming the group and its line", err)
	}
	if _, _, err := scoredGroups(parse(""), []string{"normal"}); err == nil {
		t.Error("data of the normal class only: no error")
	}
}
