package data

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testSplit returns a small split with noisy records, a noise-free record
// (SNR +Inf) and a record whose SNR is unknown (NaN).
func testSplit(t *testing.T) Split {
	t.Helper()
	s, err := MakeSplit(t.Context(), DefaultConfig(), 21, "csv", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	quiet := gen(cfg50(), Spike, 1)[0]
	quiet.Seed = 42
	s.Records = append(s.Records, quiet)
	s.Records[3].SNRdB = math.NaN()
	delete(s.Records[3].Params, "snr_db")
	return s
}

func TestCSVRoundTrip(t *testing.T) {
	s := testSplit(t)
	dir := filepath.Join(t.TempDir(), "csv")
	if err := WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "csv" {
		t.Errorf("name %q, want the directory's base name", got.Name)
	}
	sameSplit(t, "round trip", s, got)
	if !math.IsInf(got.Records[len(got.Records)-1].SNRdB, 1) || !math.IsNaN(got.Records[3].SNRdB) {
		t.Errorf("SNR +Inf / NaN not kept: %v %v", got.Records[len(got.Records)-1].SNRdB, got.Records[3].SNRdB)
	}
	// params.jsonl is plain JSON with the documented fields
	b, err := os.ReadFile(filepath.Join(dir, ParamsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != len(s.Records) {
		t.Fatalf("params.jsonl: %d lines", len(lines))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"index", "label", "class", "seed", "snr_db", "params"} {
		if _, ok := m[k]; !ok {
			t.Errorf("params.jsonl line 2 lacks %q: %s", k, lines[1])
		}
	}
	if m["class"] != "sag" || m["index"] != 1.0 {
		t.Errorf("params.jsonl line 2: %s", lines[1])
	}
	if !strings.Contains(lines[len(lines)-1], `"snr_db":null`) || strings.Contains(lines[3], "snr_db") {
		t.Errorf("snr_db of noise-free / unknown records: %s / %s", lines[len(lines)-1], lines[3])
	}
	// waveforms only: D, Event and Params absent; rewriting removes the stale files
	for _, f := range []string{DisturbanceFile, EventFile, ParamsFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	bare, err := ReadCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range bare.Records {
		if r.D != nil || r.Event != nil || r.Params != nil || !math.IsNaN(r.SNRdB) || r.Label != s.Records[i].Label {
			t.Fatalf("bare record %d: %+v", i, r)
		}
	}
	if err := WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(dir, bare); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{DisturbanceFile, EventFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("stale %s left behind", f)
		}
	}
}

// TestWriteCSVAtomic: a write that fails midway (a NaN parameter is found
// after waveforms.csv is written) leaves the earlier files intact and no
// temporary files.
func TestWriteCSVAtomic(t *testing.T) {
	s := testSplit(t)
	dir := t.TempDir()
	if err := WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		before[e.Name()], _ = os.ReadFile(filepath.Join(dir, e.Name()))
	}
	bad := Split{Name: s.Name, Records: append([]Record(nil), s.Records...)}
	bad.Records[0].X = append([]float64(nil), bad.Records[0].X...)
	bad.Records[0].X[0] = 123
	bad.Records[5].Params = map[string]float64{"a": math.NaN()}
	err := WriteCSV(dir, bad)
	if err == nil || !strings.Contains(err.Error(), "record 5") || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("NaN parameter: %v, want an error naming record 5 and key a", err)
	}
	ents, _ = os.ReadDir(dir)
	if len(ents) != len(before) {
		t.Errorf("%d files after a failed write, want %d", len(ents), len(before))
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if !bytes.Equal(b, before[e.Name()]) {
			t.Errorf("%s changed by a failed write", e.Name())
		}
	}
	// bad input is refused before anything is written
	for _, tc := range []struct {
		mod  func(r *Record)
		want string
	}{
		{func(r *Record) { r.X = append([]float64(nil), r.X...); r.X[3] = math.Inf(1) }, "record 2: waveform value 3"},
		{func(r *Record) { r.X = r.X[:10] }, "record 2: 10 waveform values, want 640"},
		{func(r *Record) { r.Label = 16 }, "label 16"},
		{func(r *Record) { r.D = nil }, "disturbance values"},
		{func(r *Record) { r.SNRdB = math.Inf(-1) }, "SNRdB"},
	} {
		b := Split{Name: "x", Records: append([]Record(nil), s.Records...)}
		tc.mod(&b.Records[2])
		if err := WriteCSV(t.TempDir(), b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
	if err := WriteCSV(t.TempDir(), Split{Name: "empty"}); err == nil {
		t.Error("empty split written")
	}
}

// TestReadCSVErrors corrupts one file of a good directory at a time; every
// error names the file, the line and what was expected.
func TestReadCSVErrors(t *testing.T) {
	good := t.TempDir()
	if err := WriteCSV(good, testSplit(t)); err != nil {
		t.Fatal(err)
	}
	read := func(f string) []string {
		b, err := os.ReadFile(filepath.Join(good, f))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	join := func(lines []string) string { return strings.Join(lines, "\n") + "\n" }
	setField := func(line string, j int, v string) string {
		f := strings.Split(line, ",")
		f[j] = v
		return strings.Join(f, ",")
	}
	dropField := func(line string) string { return line[:strings.LastIndexByte(line, ',')] }
	edit := func(f string, mod func([]string) string) func(string) {
		return func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(mod(read(f))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name   string
		break_ func(dir string)
		want   []string
	}{
		{"wrong count", edit(WaveformsFile, func(l []string) string { l[2] = dropField(l[2]); return join(l) }),
			[]string{"waveforms.csv", "line 3", "639 values, want 640"}},
		{"too many", edit(WaveformsFile, func(l []string) string { l[4] += ",0"; return join(l) }),
			[]string{"waveforms.csv", "line 5", "641 values, want 640"}},
		{"NaN", edit(WaveformsFile, func(l []string) string { l[1] = setField(l[1], 7, "NaN"); return join(l) }),
			[]string{"waveforms.csv", "line 2", "value 8", "NaN", "finite number"}},
		{"Inf", edit(WaveformsFile, func(l []string) string { l[1] = setField(l[1], 0, "+Inf"); return join(l) }),
			[]string{"waveforms.csv", "line 2", "value 1", "finite number"}},
		{"garbage", edit(WaveformsFile, func(l []string) string { l[0] = setField(l[0], 9, "0.1.2"); return join(l) }),
			[]string{"waveforms.csv", "line 1", "value 10", `"0.1.2"`}},
		{"truncated waveforms", edit(WaveformsFile, func(l []string) string {
			s := join(l)
			return s[:len(s)-len(l[len(l)-1])/2]
		}), []string{"waveforms.csv", "line 33", "values, want 640"}},
		{"empty line", edit(WaveformsFile, func(l []string) string { l[3] = ""; return join(l) }),
			[]string{"waveforms.csv", "line 4", "empty line"}},
		{"bad label", edit(LabelsFile, func(l []string) string { l[3] = "16"; return join(l) }),
			[]string{"labels.csv", "line 4", `label "16"`, "0..15"}},
		{"label not a number", edit(LabelsFile, func(l []string) string { l[0] = "sag"; return join(l) }),
			[]string{"labels.csv", "line 1", "integer 0..15"}},
		{"truncated labels", edit(LabelsFile, func(l []string) string { return join(l[:30]) }),
			[]string{"labels.csv", "30 labels, want 33"}},
		{"extra labels", edit(LabelsFile, func(l []string) string { return join(append(l, "1")) }),
			[]string{"labels.csv", "line 34", "more labels"}},
		{"beyond float32", edit(WaveformsFile, func(l []string) string { l[2] = setField(l[2], 9, "-1e39"); return join(l) }),
			[]string{"waveforms.csv", "line 3", "value 10", `"-1e39"`, "beyond the float32 range", "3.4028234663852886e+38"}},
		{"float32 limit", edit(WaveformsFile, func(l []string) string {
			l[2] = setField(l[2], 9, strconv.FormatFloat(math.MaxFloat32, 'g', -1, 64))
			l[3] = setField(l[3], 0, "3.4028236e38") // above MaxFloat32, rounds up to +Inf as a float32
			return join(l)
		}),
			[]string{"waveforms.csv", "line 4", "value 1", "beyond the float32 range"}},
		{"disturbance beyond float32 is fine, NaN is not", edit(DisturbanceFile, func(l []string) string {
			l[5] = setField(l[5], 3, "1e39")
			l[6] = setField(l[6], 100, "nan")
			return join(l)
		}),
			[]string{"disturbance.csv", "line 7", "value 101", "finite number"}},
		{"disturbance NaN", edit(DisturbanceFile, func(l []string) string { l[6] = setField(l[6], 100, "nan"); return join(l) }),
			[]string{"disturbance.csv", "line 7", "value 101", "finite number"}},
		{"disturbance short", edit(DisturbanceFile, func(l []string) string { return join(l[:32]) }),
			[]string{"disturbance.csv", "32 rows, want 33"}},
		{"event value", edit(EventFile, func(l []string) string { l[8] = setField(l[8], 5, "2"); return join(l) }),
			[]string{"event.csv", "line 9", "value 6", "0 or 1"}},
		{"event count", edit(EventFile, func(l []string) string { l[8] = dropField(l[8]); return join(l) }),
			[]string{"event.csv", "line 9", "639 values, want 640"}},
		{"params label", edit(ParamsFile, func(l []string) string {
			l[2] = strings.Replace(l[2], `"label":2`, `"label":3`, 1)
			return join(l)
		}), []string{"params.jsonl", "line 3", "label 3, want 2"}},
		{"params truncated", edit(ParamsFile, func(l []string) string { l[4] = l[4][:len(l[4])/2]; return join(l) }),
			[]string{"params.jsonl", "line 5", "JSON"}},
		{"params index", edit(ParamsFile, func(l []string) string {
			l[5] = strings.Replace(l[5], `"index":5`, `"index":6`, 1)
			return join(l)
		}), []string{"params.jsonl", "line 6", "index 6, want 5"}},
		{"missing waveforms", func(dir string) { os.Remove(filepath.Join(dir, WaveformsFile)) }, []string{"waveforms.csv"}},
		{"missing labels", func(dir string) { os.Remove(filepath.Join(dir, LabelsFile)) }, []string{"labels.csv"}},
		{"empty waveforms", edit(WaveformsFile, func([]string) string { return "" }), []string{"waveforms.csv", "no records"}},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		for _, f := range []string{WaveformsFile, LabelsFile, DisturbanceFile, EventFile, ParamsFile} {
			b, err := os.ReadFile(filepath.Join(good, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tc.break_(dir)
		_, err := ReadCSV(dir)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
}

func TestReadWaveforms(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.csv")
	if err := os.WriteFile(p, []byte("1,2,3\r\n-0.5, 1e-3 ,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadWaveforms(p, 3)
	if err != nil || len(rows) != 2 || rows[1][1] != 1e-3 || rows[0][2] != 3 {
		t.Fatalf("ReadWaveforms = %v, %v", rows, err)
	}
	if _, err := ReadWaveforms(p, 640); err == nil || !strings.Contains(err.Error(), "w.csv: line 1 (record 0): 3 values, want 640") {
		t.Errorf("n = 640: %v", err)
	}
}

// TestReadLabels: one class a line, CRLF and blanks around the number
// allowed; a value out of range, not an integer, an empty line or an
// empty file is an error naming the file and the line.
func TestReadLabels(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := ReadLabels(write("ok.csv", "3\r\n 0\n15\n"), 16)
	if err != nil || !slices.Equal(got, []int{3, 0, 15}) {
		t.Fatalf("ReadLabels = %v, %v", got, err)
	}
	for _, c := range []struct{ body, want string }{
		{"1\n16\n", `bad.csv: line 2 (record 1): label "16", want an integer 0..15`},
		{"1\n-1\n", `line 2 (record 1): label "-1"`},
		{"2.5\n", `line 1 (record 0): label "2.5"`},
		{"0.1," + strings.Repeat("9", 37) + "\n", `label "0.1,` + strings.Repeat("9", 36) + `...", want`},
		{"0.1," + strings.Repeat("9", 36) + "\n", `label "0.1,` + strings.Repeat("9", 36) + `", want`},
		{"1\n\n2\n", "line 2 (record 1): empty line"},
		{"", "bad.csv: no labels"},
	} {
		if _, err := ReadLabels(write("bad.csv", c.body), 16); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
	if _, err := ReadLabels(write("three.csv", "3\n"), 3); err == nil || !strings.Contains(err.Error(), "want an integer 0..2") {
		t.Errorf("3 of 3 classes: %v", err)
	}
	if _, err := ReadLabels(filepath.Join(dir, "none.csv"), 16); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("a missing file: %v", err)
	}
}
