package data

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/memtest"
)

// TestScanWaveformsPieces: lines several times the reader's buffer, with
// values of every length and spaces around them cut anywhere by the
// buffer's edges, read back to the values a whole-file split and
// strconv.ParseFloat give, in order, with the lines and the values a
// line.
func TestScanWaveformsPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const lines, cols = 3, 30000
	var b strings.Builder
	var want []float64
	for range lines {
		for j := range cols {
			if j > 0 {
				b.WriteString(strings.Repeat(" ", r.IntN(3)) + ",")
			}
			v := r.NormFloat64() * float64(r.IntN(1000))
			if j%7 == 0 {
				v = float64(r.IntN(10))
			}
			b.WriteString(strings.Repeat(" ", r.IntN(3)) + strconv.FormatFloat(v, 'g', -1, 64))
			want = append(want, v)
		}
		b.WriteString("\r\n")
	}
	if b.Len() < 4*waveBuffer {
		t.Fatalf("the file is %d bytes, not several buffers", b.Len())
	}
	p := filepath.Join(t.TempDir(), "w.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []float64
	var starts int
	n, c, err := ScanWaveforms(p, 0, WaveformBound{Max: cols, Why: "test"}, func(i int, v float64) {
		if i == 0 {
			starts++
		}
		if i != len(got)%cols {
			t.Fatalf("value %d given as index %d", len(got), i)
		}
		got = append(got, v)
	})
	if err != nil || n != lines || c != cols || starts != lines {
		t.Fatalf("ScanWaveforms = %d lines, %d values, %d starts, %v", n, c, starts, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestScanWaveformsBound: a line of 5,000,000 values against a bound of
// 65536 is refused naming the file, the line, the count and the bound
// with what raises it, and the reader allocates far less than the line
// (its buffer, not the line's text or values); a later line above the
// first's count is refused with the count the first set; a value longer
// than MaxValueBytes is refused at its bytes.
func TestScanWaveformsBound(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := bytes.Repeat([]byte("0.5,"), 5000000)
	long[len(long)-1] = '\n'
	p := write("long.csv", long)
	var err error
	alloc := memtest.Allocated(func() {
		_, _, err = ScanWaveforms(p, 0, WaveformBound{Max: 65536, Why: "--max-in-len raises it"}, func(int, float64) {})
	})
	want := p + ": line 1 (record 0): 5000000 values, above the bound of 65536 (--max-in-len raises it)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if alloc > 1<<20 {
		t.Errorf("refusing a line of %d bytes allocated %d bytes", len(long), alloc)
	}
	for _, c := range []struct {
		body  string
		bound int
		want  string
	}{
		{"1,2\n1,2,3,4\n", 3, "line 2 (record 1): 4 values, above the bound of 3 (why)"},
		{"1,2\n1,2,3\n", 3, "line 2 (record 1): 3 values, want 2"},
		{"1,2\n1\n", 3, "line 2 (record 1): 1 values, want 2"},
		{"1," + strings.Repeat("0", MaxValueBytes+1) + "\n", 0, "line 1 (record 0): value 2 is longer than 1024 bytes"},
		{"1,2\n\r\n", 0, "line 2 (record 1): empty line"},
		{"1,x\n", 0, `line 1 (record 0): value 2 is "x", want a finite number`},
		{"1,1e39\n", 0, `value 2 is "1e39", beyond the float32 range`},
		{"", 0, "no records"},
	} {
		p := write("bad.csv", []byte(c.body))
		if _, _, err := ScanWaveforms(p, 0, WaveformBound{Max: c.bound, Why: "why"}, func(int, float64) {}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: %v, want %q", c.body, err, c.want)
		}
	}
	// A value of MaxValueBytes bytes is a value; a line of exactly the
	// bound's values is accepted.
	if _, c, err := ScanWaveforms(write("edge.csv", []byte("1,"+strings.Repeat("0", MaxValueBytes-1)+"2\n")), 0, WaveformBound{Max: 2}, func(int, float64) {}); err != nil || c != 2 {
		t.Errorf("a value of %d bytes, a line at the bound: %d values, %v", MaxValueBytes, c, err)
	}
	// No bound: a line of many buffers is read whole.
	some := append([]byte(nil), long[:4*100000]...)
	some[len(some)-1] = '\n'
	rows, err := ReadWaveforms(write("some.csv", some), 0)
	if err != nil || len(rows) != 1 || len(rows[0]) != 100000 || rows[0][99999] != 0.5 {
		t.Fatalf("ReadWaveforms of 100000 values: %d rows, %v", len(rows), err)
	}
}
