package record

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// column reads a file of one float64 a line.
func column(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// maxRelErr returns max |got - want| / max |want|.
func maxRelErr(got, want []float64) float64 {
	scale, e := 0.0, 0.0
	for i := range want {
		scale = math.Max(scale, math.Abs(want[i]))
		e = math.Max(e, math.Abs(got[i]-want[i]))
	}
	return e / scale
}

// TestResampleGolden checks the taps and the output against scipy's
// resample_poly (testdata/golden/signal/README.md).
func TestResampleGolden(t *testing.T) {
	for _, c := range []struct {
		dir      string
		up, down int
	}{{"resample_poly_4_25", 4, 25}, {"resample_poly_8_25", 8, 25}} {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join(golden.Dir(t, "signal"), c.dir)
			x := column(t, filepath.Join(dir, "input.csv"))
			want := column(t, filepath.Join(dir, "output.csv"))
			taps := column(t, filepath.Join(dir, "taps.csv"))
			r := NewResampler(c.up, c.down)
			if len(r.Taps) != len(taps) {
				t.Fatalf("%d taps, want %d", len(r.Taps), len(taps))
			}
			if e := maxRelErr(r.Taps, taps); e > 1e-13 {
				t.Errorf("taps: max relative error %.3g, want <= 1e-13", e)
			} else {
				t.Logf("taps: max relative error %.3g", e)
			}
			if r.Len(len(x)) != len(want) {
				t.Fatalf("output length %d, want %d", r.Len(len(x)), len(want))
			}
			y := make([]float64, r.Len(len(x)))
			r.Apply(y, x)
			if e := maxRelErr(y, want); e > 1e-12 {
				t.Errorf("output: max relative error %.3g, want <= 1e-12", e)
			} else {
				t.Logf("output: max relative error %.3g", e)
			}
		})
	}
}
