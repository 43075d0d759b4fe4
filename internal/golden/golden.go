package golden

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// RepoRoot returns the directory holding go.mod above the working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// Root returns testdata/golden under the repository root. The golden files
// are part of the repository, so a missing folder fails the test instead of
// skipping it.
func Root(t testing.TB) string {
	t.Helper()
	return mustDir(t, filepath.Join(RepoRoot(t), "testdata", "golden"))
}

// Dir returns testdata/golden/<set> under the repository root, failing the
// test if it is missing.
func Dir(t testing.TB, set string) string {
	t.Helper()
	return mustDir(t, filepath.Join(Root(t), set))
}

func mustDir(t testing.TB, dir string) string {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("golden folder %s is missing: %v", dir, err)
	}
	if !fi.IsDir() {
		t.Fatalf("golden folder %s is not a directory", dir)
	}
	return dir
}

// File returns the path of testdata/golden/<set>/<name> under the
// repository root, failing the test if the file is missing.
func File(t testing.TB, set, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t, set), filepath.FromSlash(name))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("golden file %s is missing: %v", p, err)
	}
	return p
}

// CSV32 reads a headerless CSV of float32 values (parsed as float32, which
// gives the exact bits of values written with %.9g).
func CSV32(t testing.TB, path string) [][]float32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]float32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var row []float32
		for _, s := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(s, 32)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			row = append(row, float32(v))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// Flat concatenates rows.
func Flat(rows [][]float32) []float32 {
	var out []float32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// Inputs returns the 16 golden waveforms (flat) and their labels.
func Inputs(t testing.TB, dir string) ([]float32, []int) {
	x := Flat(CSV32(t, filepath.Join(dir, "waveforms.csv")))
	var y []int
	for _, r := range CSV32(t, filepath.Join(dir, "labels.csv")) {
		y = append(y, int(r[0]))
	}
	return x, y
}
