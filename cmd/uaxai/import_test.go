package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/host/record"
)

func TestDataImport(t *testing.T) {
	rec := filepath.Join("..", "..", "testdata", "recordings")
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"data", "import", filepath.Join(rec, "demo.cff"), filepath.Join(rec, "demo.csv"), "--nominal", "230", "--label", "1", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "5 windows kept, 0 dropped") || !strings.Contains(lines[1], "(4/25)") {
		t.Errorf("summary %q, want one line a recording", lines)
	}
	for _, sub := range []string{"demo_cff", "demo_csv"} {
		s, err := data.ReadCSV(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Records) != 5 || len(s.Records[0].X) != 640 || s.Records[0].Label != 1 {
			t.Errorf("%s: %d records of %d, label %d", sub, len(s.Records), len(s.Records[0].X), s.Records[0].Label)
		}
	}
	raw := filepath.Join(dir, "raw.csv")
	out.Reset()
	if code := run([]string{"data", "import", filepath.Join(rec, "demo.cfg"), "--raw", "--out", raw}, &out, &errb); code != 0 {
		t.Fatalf("raw: exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(raw)
	if err != nil || !strings.HasPrefix(string(b), "time,VA (V)\n0,-1.01\n") || strings.Count(string(b), "\n") != 20001 {
		t.Errorf("raw.csv: %v %q", err, string(b[:min(len(b), 40)]))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "import", filepath.Join(rec, "demo.csv"), "--out", dir}, "--nominal"},
		{[]string{"data", "import", "--out", dir}, "a recording and --out are required"},
		{[]string{"data", "import", filepath.Join(rec, "demo.cfg"), "--channel", "VZ", "--out", dir}, `no analog channel "VZ"`},
		{[]string{"data", "import", filepath.Join(rec, "demo.cfg"), filepath.Join(rec, "demo.cfg"), "--out", dir}, "two recordings named demo.cfg"},
		{[]string{"data", "import", filepath.Join(rec, "demo.cfg"), "--label", "16", "--out", dir}, "--label 16"},
	} {
		errb.Reset()
		if code := run(c.args, &bytes.Buffer{}, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestDataImportChannel: --channel names a COMTRADE analog channel by
// ch_id, number or An, as its help says: on demo.cfg VA, 1, A1 and a1
// import the same windows as the default; A2 (there is none) and D1 (a
// digital channel) are refused with the accepted forms and the file's
// channels. On a copy of demo with a second channel VB = 2*VA and a
// digital channel, A2 imports VB: exactly twice VA's windows.
func TestDataImportChannel(t *testing.T) {
	demo := filepath.Join("..", "..", "testdata", "recordings", "demo.cfg")
	imp := func(t *testing.T, cfg, channel string) (string, error) {
		t.Helper()
		dir := t.TempDir()
		args := []string{"data", "import", cfg, "--nominal", "230", "--out", dir}
		if channel != "" {
			args = append(args, "--channel", channel)
		}
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			return "", fmt.Errorf("exit %d: %s", code, errb.String())
		}
		return dir, nil
	}
	read := func(t *testing.T, dir string) [][]float64 {
		t.Helper()
		w, err := data.ReadWaveforms(filepath.Join(dir, data.WaveformsFile), 640)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	def, err := imp(t, demo, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(def, data.WaveformsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"VA", "va", "1", "A1", "a1"} {
		dir, err := imp(t, demo, sel)
		if err != nil {
			t.Errorf("--channel %s: %v", sel, err)
			continue
		}
		if got, _ := os.ReadFile(filepath.Join(dir, data.WaveformsFile)); !bytes.Equal(got, want) {
			t.Errorf("--channel %s: windows differ from the default channel's", sel)
		}
	}
	accepted := `accepted: an analog channel's ch_id, its number n or An`
	for _, c := range []struct{ sel, want string }{
		{"A2", `no analog channel "A2"`},
		{"2", `no analog channel "2"`},
		{"VB", `no analog channel "VB"`},
		{"D1", `channel "D1": a digital (status) channel is not a waveform`},
	} {
		_, err := imp(t, demo, c.sel)
		for _, w := range []string{"demo.cfg", c.want, accepted, `analog (An ch_id) A1 "VA"; no digital`} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("--channel %s on demo.cfg: %v; want an error with %q", c.sel, err, w)
			}
		}
	}

	rec, err := record.Read(demo, record.Options{})
	if err != nil {
		t.Fatal(err)
	}
	va := rec.Samples
	vb := make([]float64, len(va))
	trip := make([]bool, len(va))
	for i, v := range va {
		vb[i], trip[i] = 2*v, i > len(va)/2
	}
	two := filepath.Join(t.TempDir(), "two.cfg")
	w := record.COMTRADE{Rev: 1999, FileType: record.ASCII, Station: "test", Device: "two", LineFreq: 50,
		Segments: []record.Segment{{Start: 0, End: len(va), Rate: rec.Segments[0].Rate}}, Start: rec.Start, Trigger: rec.Trigger,
		Analogs: []record.Channel{
			{ID: "VA", Phase: "A", Unit: "V", A: 0.01, Primary: 230, Secondary: 230, PS: "P", Samples: va},
			{ID: "VB", Phase: "B", Unit: "V", A: 0.01, Primary: 230, Secondary: 230, PS: "P", Samples: vb},
		},
		Digitals: []record.DigitalChannel{{ID: "TRIP", States: trip}},
	}
	if err := w.WriteFiles(two); err != nil {
		t.Fatal(err)
	}
	a1, err := imp(t, two, "A1")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, a1); !slices.EqualFunc(got, read(t, def), slices.Equal) {
		t.Errorf("--channel A1 of two.cfg: windows differ from demo.cfg's")
	}
	a2, err := imp(t, two, "A2")
	if err != nil {
		t.Fatal(err)
	}
	wa, wb := read(t, a1), read(t, a2)
	if len(wa) != len(wb) || len(wa) == 0 {
		t.Fatalf("A1: %d windows, A2: %d", len(wa), len(wb))
	}
	for i := range wa {
		for j := range wa[i] {
			if d := math.Abs(wb[i][j] - 2*wa[i][j]); d > 1e-12*math.Max(1, math.Abs(wa[i][j])) {
				t.Fatalf("window %d sample %d: A2 %v, want 2 x A1 = %v", i, j, wb[i][j], 2*wa[i][j])
			}
		}
	}
	var meta struct {
		Channel string `json:"channel"`
		Number  int    `json:"channel_number"`
	}
	if b, err := os.ReadFile(filepath.Join(a2, "import.json")); err != nil || json.Unmarshal(b, &meta) != nil || meta.Channel != "VB" || meta.Number != 2 {
		t.Errorf("import.json of --channel A2: %+v (%v), want channel VB, number 2", meta, err)
	}
	for _, sel := range []string{"D1", "TRIP", "d2"} {
		_, err := imp(t, two, sel)
		for _, w := range []string{"two.cfg", "a digital (status) channel is not a waveform", accepted, `A1 "VA", A2 "VB"; digital (Dn ch_id) D1 "TRIP"`} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("--channel %s on two.cfg: %v; want an error with %q", sel, err, w)
			}
		}
	}
}

// TestDataImportPhases: --phases A,B,C on the three-phase recording writes
// windows of 3 x 640 values (waveforms.csv and waveforms.npy); --channel
// repeated in another order permutes the channels of every window the
// same way; the one-channel import of VB is channel 1 of the three-phase
// windows; conflicting or impossible choices are errors naming the file,
// the flag and what is accepted.
func TestDataImportPhases(t *testing.T) {
	three := filepath.Join("..", "..", "testdata", "recordings", "three-phase.cfg")
	imp := func(t *testing.T, args ...string) (string, string, error) {
		t.Helper()
		dir := t.TempDir()
		var out, errb bytes.Buffer
		if code := run(append([]string{"data", "import", "--out", dir}, args...), &out, &errb); code != 0 {
			return "", "", fmt.Errorf("exit %d: %s", code, errb.String())
		}
		return dir, out.String(), nil
	}
	const T = 640
	abc, out, err := imp(t, three, "--phases", "A,B,C")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "3 channels VA,VB,VC") {
		t.Errorf("summary %q, want the three channels named", out)
	}
	rows, err := data.ReadWaveforms(filepath.Join(abc, data.WaveformsFile), 3*T)
	if err != nil {
		t.Fatal(err)
	}
	a, err := npy.ReadFile(filepath.Join(abc, "waveforms.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !slices.Equal(a.Shape, []int{len(rows), 3, T}) {
		t.Fatalf("%d windows, npy shape %v, want 3 and (3, 3, %d)", len(rows), a.Shape, T)
	}
	for i, v := range a.Float {
		if v != float64(float32(rows[i/(3*T)][i%(3*T)])) {
			t.Fatalf("waveforms.npy value %d = %v, waveforms.csv %v", i, v, rows[i/(3*T)][i%(3*T)])
		}
	}
	cab, _, err := imp(t, three, "--channel", "VC", "--channel", "A4", "--channel", "1")
	if err != nil {
		t.Fatal(err)
	}
	perm, err := data.ReadWaveforms(filepath.Join(cab, data.WaveformsFile), 3*T)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		for k, c := range []int{2, 0, 1} { // VC, VA, VB
			if !slices.Equal(perm[i][k*T:(k+1)*T], rows[i][c*T:(c+1)*T]) {
				t.Fatalf("window %d: channel %d of --channel VC,A4,1 is not channel %d of --phases A,B,C", i, k, c)
			}
		}
	}
	vb, _, err := imp(t, three, "--channel", "VB")
	if err != nil {
		t.Fatal(err)
	}
	one, err := data.ReadWaveforms(filepath.Join(vb, data.WaveformsFile), T)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if !slices.Equal(one[i], rows[i][T:2*T]) {
			t.Fatalf("window %d: --channel VB differs from channel 1 of --phases A,B,C", i)
		}
	}
	if _, err := os.Stat(filepath.Join(vb, "waveforms.npy")); !os.IsNotExist(err) {
		t.Errorf("a one-channel import wrote waveforms.npy: %v", err)
	}

	demo := filepath.Join("..", "..", "testdata", "recordings", "demo.wav")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{three, "--phases", "A,B", "--channel", "VA"}, []string{"--phases A,B and --channel VA both choose the channels"}},
		{[]string{three, "--phases", "A,,C"}, []string{`--phases "A,,C": an empty phase`}},
		{[]string{three, "--phases", "A,B,N"}, []string{"three-phase.cfg", `no voltage channel of phase "N"`, "accepted phase names", `A4 "VA" phase "A" (V)`, "--channel"}},
		{[]string{demo, "--phases", "A,B,C", "--nominal", "230"}, []string{"demo.wav", "not a COMTRADE .cfg or .cff", "--channel"}},
		{[]string{three, "--raw", "--channel", "VA", "--channel", "VB"}, []string{"--raw writes one channel"}},
		{[]string{three, "--channel", "VA", "--channel", "va"}, []string{"three-phase.cfg", `channels "VA" and "va" are the same channel 4`}},
	} {
		_, _, err := imp(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v; want an error with %q", c.args, err, w)
			}
		}
	}
}
