package golden

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Quantiles reads testdata/golden/signal/quantiles.csv (see its README):
// the samples, one per line of S values, and, by column name ("lin_0.05",
// "os_0.95", ...), the reference value of each line.
func Quantiles(t testing.TB) (samples [][]float64, cols map[string][]float64) {
	t.Helper()
	recs := Records(t, File(t, "signal", "quantiles.csv"))
	if len(recs) != 31 {
		t.Fatalf("quantiles.csv: %d lines, want a header and 30", len(recs))
	}
	cols = map[string][]float64{}
	for _, rec := range recs[1:] {
		var x []float64
		for j, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			if name := recs[0][j]; strings.HasPrefix(name, "x") {
				x = append(x, v)
			} else {
				cols[name] = append(cols[name], v)
			}
		}
		samples = append(samples, x)
	}
	return samples, cols
}

// SameBits fails the test unless got holds the bits of want, value by
// value (line n+1 of a golden column is want[n]).
func SameBits(t testing.TB, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for n := range want {
		if math.Float64bits(got[n]) != math.Float64bits(want[n]) {
			t.Errorf("%s line %d: %v, want %v", what, n+1, got[n], want[n])
		}
	}
}

// Transpose turns samples (one per coordinate n, S values each) into the
// draws r[s][n] a summary takes.
func Transpose(samples [][]float64) [][]float64 {
	r := make([][]float64, len(samples[0]))
	for s := range r {
		r[s] = make([]float64, len(samples))
		for n := range samples {
			r[s][n] = samples[n][s]
		}
	}
	return r
}

// Records reads a CSV file's records (a missing or malformed file fails
// the test).
func Records(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}
