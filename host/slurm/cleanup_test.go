package slurm

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
)

// tree lists every file under dir with its contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSubmitLeavesNothingWhenItSubmitsNothing: a Submit that is to copy
// the binary into the run directory and then fails at its first sbatch,
// or refuses the run directory (submitted before; a setting sbatch
// cannot take), leaves the directory as it found it: no copy of the
// binary, no scripts, no folders it made. One submitted before keeps its
// binary and scripts untouched. A Submit that succeeds installs the
// binary and the scripts run it.
func TestSubmitLeavesNothingWhenItSubmitsNothing(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	dir, _ := runDir(t, parent, 2, 4)
	src := filepath.Join(parent, "uaxai-src")
	big := bytes.Repeat([]byte("binary "), 1<<16)
	if err := os.WriteFile(src, big, 0o755); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	cfg := Config{Dir: dir, Install: src}
	if _, err := Submit(ctx, &fake{failAt: 1}, cfg, 2, 4, false, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "Invalid partition") {
		t.Fatalf("first sbatch failing: %v", err)
	}
	if after := tree(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("a Submit that submitted nothing left %v (before: %v)", keys(after), keys(before))
	}
	bad := cfg
	bad.Sbatch = recipe.Slurm{Time: "soon"}
	if _, err := Submit(ctx, &fake{}, bad, 2, 4, false, &bytes.Buffer{}); err == nil {
		t.Fatal("a bad time accepted")
	}
	if after := tree(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("a refused Submit left %v", keys(after))
	}
	// Submitted: the binary is installed, the scripts run it.
	f := &fake{next: 3}
	s, err := Submit(ctx, f, cfg, 2, 4, false, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(dir, "bin", "uaxai")
	if b, err := os.ReadFile(inst); err != nil || !bytes.Equal(b, big) || s.Bin != inst {
		t.Errorf("installed binary: %d bytes, %v; state names %s", len(b), err, s.Bin)
	}
	if sc, _ := os.ReadFile(ScriptFile(dir, KindFit)); !strings.Contains(string(sc), "exec "+Quote(inst)+" run") {
		t.Errorf("fit.sbatch does not run the installed binary:\n%s", sc)
	}
	// Submitted before: refused, and the binary and scripts the jobs use
	// are the same bytes.
	submitted := tree(t, dir)
	if err := os.WriteFile(src, []byte("a newer build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Submit(ctx, &fake{}, cfg, 2, 4, false, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "submitted before") {
		t.Fatalf("a second Submit: %v", err)
	}
	if after := tree(t, dir); !reflect.DeepEqual(after, submitted) {
		t.Error("a refused second Submit changed the run directory of the first")
	}
	// A dry run copies no binary.
	dir2, _ := runDir(t, t.TempDir(), 1, 1)
	if _, err := Submit(ctx, &fake{}, Config{Dir: dir2, Install: src}, 1, 1, true, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir2, "bin")); err == nil {
		t.Error("a dry run copied the binary")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// expandOutput expands an sbatch --output pattern as sbatch does (man
// sbatch, "filename pattern"): %% is %, %x the job name, %A the array's
// job ID, %a the task, %j the job ID (of an array task: its own, here
// the array's for the merge job, which is no array); a backslash anywhere
// turns expansion off.
func expandOutput(pattern, name, jobID, task string) string {
	if strings.Contains(pattern, `\`) {
		return pattern
	}
	return regexp.MustCompile(`%.`).ReplaceAllStringFunc(pattern, func(m string) string {
		switch m[1] {
		case '%':
			return "%"
		case 'x':
			return name
		case 'A', 'j':
			return jobID
		case 'a':
			return task
		}
		return "<" + m + " expanded by sbatch>"
	})
}

// TestOutputPatternEscapesPercent: a run directory with % in its path
// (%j, %A, %%) has its --output patterns written so that sbatch's
// expansion gives the files OutputFile names (where status looks); a
// run directory with a backslash, which turns the expansion off, is
// refused with an error naming it, before anything is written.
func TestOutputPatternEscapesPercent(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "runs %j %A 100%% %x")
	dir, bin := runDir(t, parent, 1, 2)
	if _, err := Submit(context.Background(), &fake{next: 40}, Config{Dir: dir, Bin: bin}, 1, 2, false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^#SBATCH --output="?([^"\n]*)"?$`)
	for _, c := range []struct {
		kind, id string
		task     int
	}{{KindFit, "40", 0}, {KindExplain, "41", 1}, {KindMerge, "42", -1}} {
		b, err := os.ReadFile(ScriptFile(dir, c.kind))
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s.sbatch has no --output line:\n%s", c.kind, b)
		}
		task := ""
		if c.task >= 0 {
			task = strconv.Itoa(c.task)
		}
		got := expandOutput(string(m[1]), JobName("quick", c.kind), c.id, task)
		if want := OutputFile(dir, "quick", c.kind, c.id, c.task); got != want {
			t.Errorf("%s: sbatch writes the output to\n%s\nstatus looks for\n%s", c.kind, got, want)
		}
	}
	dir2, bin2 := runDir(t, filepath.Join(t.TempDir(), `back\slash`), 1, 1)
	before := tree(t, dir2)
	_, err := Submit(context.Background(), &fake{}, Config{Dir: dir2, Bin: bin2}, 1, 1, false, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), dir2) || !strings.Contains(err.Error(), "backslash") {
		t.Errorf("a run directory with a backslash: %v", err)
	}
	if after := tree(t, dir2); !reflect.DeepEqual(after, before) {
		t.Errorf("the refused Submit wrote %v", keys(after))
	}
}
