package record

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
)

// readPhases reads the voltage channels of phases from the recording at
// path.
func readPhases(t *testing.T, path string, phases ...string) ([]string, []*Recording) {
	t.Helper()
	sels, err := PhaseChannels(path, Options{}, phases)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadChannels(path, Options{}, sels)
	if err != nil {
		t.Fatal(err)
	}
	return sels, recs
}

// TestThreePhaseWindows: --phases A,B,C on the shipped three-phase
// recording (its cfg lists VB, IA, VC, VA) picks VA, VB, VC in that order,
// skipping the current IA of phase A; every kept window is 3 x 640 values
// channel-major whose channel c is the closed form ThreePhase of phase c
// divided by sqrt(2) x 230 (away from the filter's reach of the sag's
// edges and the recording's ends), and exactly the one-channel import of
// that channel. WriteDir writes the same windows to waveforms.csv (3 x 640
// values a line) and waveforms.npy (float32, shape (N, 3, 640)), and
// import.json lists the channels.
func TestThreePhaseWindows(t *testing.T) {
	path := filepath.Join(recordingsDir(t), "three-phase.cfg")
	sels, recs := readPhases(t, path, "A", "B", "C")
	if want := []string{"A4", "A1", "A3"}; !slices.Equal(sels, want) {
		t.Fatalf("phases A,B,C picked %q, want %q (VA, VB, VC in the cfg's order VB, IA, VC, VA)", sels, want)
	}
	for c, id := range []string{"VA", "VB", "VC"} {
		if recs[c].Channel != id || recs[c].Phase != string("ABC"[c]) {
			t.Fatalf("channel %d is %s phase %q, want %s", c, recs[c].Channel, recs[c].Phase, id)
		}
	}
	imp, err := ImportChannels(context.Background(), recs, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := imp.Kept()
	const T = DefaultWindow
	if wantN := ThreeSamples / 2 / T; len(kept) != wantN {
		t.Fatalf("%d windows, want %d (%d samples at 6400 Hz make %d at 3200)", len(kept), wantN, ThreeSamples, ThreeSamples/2)
	}
	// Output sample j is at t = j/3200 s, source sample 2j. The filter
	// (up 1, down 2) reaches HalfLen source samples either side: output
	// samples within reach of a sag edge or an end differ from the closed
	// form by the edge's ringing and are not compared.
	rs := NewResampler(1, 2)
	reach := rs.HalfLen/2 + 1
	near := func(j int) bool {
		for _, e := range []int{0, int(ThreeSagStart * DefaultRate), int(ThreeSagEnd * DefaultRate), ThreeSamples / 2} {
			if abs(j-e) <= reach {
				return true
			}
		}
		return false
	}
	divisor := math.Sqrt2 * SynthNominal
	worst, compared := 0.0, 0
	for k, row := range kept {
		if len(row) != 3*T {
			t.Fatalf("window %d has %d values, want 3 x %d", k, len(row), T)
		}
		for c := range 3 {
			for j := range T {
				s := imp.Windows[k].Start + j
				if near(s) {
					continue
				}
				v, _ := ThreePhase(2 * s)
				worst = math.Max(worst, math.Abs(row[c*T+j]-v[c]/divisor))
				compared++
			}
		}
	}
	// The Kaiser(5.0) filter's passband ripple bounds the deviation (as
	// in TestImportSine), plus the file's 0.01 V quantisation.
	if tol := 2e-3 + 0.005/divisor; worst > tol || compared < 3*len(kept)*T/2 {
		t.Errorf("max |window - closed form| = %g over %d samples, want <= %g", worst, compared, tol)
	}
	t.Logf("max |window - closed form| = %.3g over %d samples", worst, compared)
	// The sag: phase B's RMS in the sag's middle is half of phase A's.
	rms := func(c, lo, hi int) float64 {
		s := 0.0
		for j := lo; j < hi; j++ {
			s += imp.Channels[c].Signal[j] * imp.Channels[c].Signal[j]
		}
		return math.Sqrt(s / float64(hi-lo))
	}
	if a, b := rms(0, 832, 1088), rms(1, 832, 1088); math.Abs(b/a-ThreeSagDepth) > 1e-3 {
		t.Errorf("phase B / phase A RMS in the sag = %g, want %g", b/a, ThreeSagDepth)
	}
	for c, rec := range recs {
		one, err := Import(context.Background(), rec, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range one.Kept() {
			if !slices.Equal(kept[k][c*T:(c+1)*T], w) {
				t.Fatalf("channel %d window %d differs from the one-channel import of %s", c, k, rec.Channel)
			}
		}
	}

	dir := t.TempDir()
	if err := WriteDir(dir, imp); err != nil {
		t.Fatal(err)
	}
	rows, err := data.ReadWaveforms(filepath.Join(dir, data.WaveformsFile), 3*T)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(rows, kept, slices.Equal) {
		t.Errorf("waveforms.csv differs from the kept windows")
	}
	a, err := npy.ReadFile(filepath.Join(dir, NPYFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Shape, []int{len(kept), 3, T}) || a.Dtype != "<f4" {
		t.Fatalf("waveforms.npy: shape %v dtype %s, want (%d, 3, %d) <f4", a.Shape, a.Dtype, len(kept), T)
	}
	for i, v := range a.Float {
		if want := float64(float32(kept[i/(3*T)][i%(3*T)])); v != want {
			t.Fatalf("waveforms.npy value %d = %v, want float32 %v", i, v, want)
		}
	}
	var meta struct {
		Channel  string `json:"channel"`
		Channels []struct {
			Name   string  `json:"name"`
			Number int     `json:"number"`
			Phase  string  `json:"phase"`
			Unit   string  `json:"unit"`
			Scale  float64 `json:"scale"`
		} `json:"channels"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ImportFile))
	if err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("import.json: %v %s", err, b)
	}
	if meta.Channel != "VA,VB,VC" || len(meta.Channels) != 3 {
		t.Fatalf("import.json channel %q, %d channels", meta.Channel, len(meta.Channels))
	}
	for c, ch := range meta.Channels {
		if ch.Name != recs[c].Channel || ch.Number != recs[c].Index || ch.Phase != string("ABC"[c]) || ch.Unit != "V" || ch.Scale != 1/divisor {
			t.Errorf("import.json channel %d: %+v, want %s A%d phase %c V scale %g", c, ch, recs[c].Channel, recs[c].Index, "ABC"[c], 1/divisor)
		}
	}
}

// TestImportChannelsNominals: without --nominal each channel is divided by
// its own (the current IA by its 100 A rating); with --nominal all by the
// same. The channels keep the order given.
func TestImportChannelsNominals(t *testing.T) {
	path := filepath.Join(recordingsDir(t), "three-phase.cfg")
	recs, err := ReadChannels(path, Options{}, []string{"IA", "VA"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		nominal float64
		want    [2]float64
	}{{0, [2]float64{ThreeIRating, SynthNominal}}, {50, [2]float64{50, 50}}} {
		imp, err := ImportChannels(context.Background(), recs, ImportOptions{Nominal: c.nominal})
		if err != nil {
			t.Fatal(err)
		}
		for k, ch := range imp.Channels {
			if ch.Nominal != c.want[k] {
				t.Errorf("--nominal %g: channel %s nominal %g, want %g", c.nominal, ch.Recording.Channel, ch.Nominal, c.want[k])
			}
		}
		// Away from the ends, IA is sqrt(2)*80*sin(w t - 0.5) / (sqrt(2)*nominal).
		j := 333
		want := ThreeCurrent * math.Sin(2*math.Pi*50*float64(j)/DefaultRate-0.5) / c.want[0]
		if got := imp.Kept()[0][j]; math.Abs(got-want) > 2e-3 {
			t.Errorf("--nominal %g: IA sample %d = %g, want %g", c.nominal, j, got, want)
		}
	}
	if _, err := ReadChannels(path, Options{}, []string{"VA", "A4"}); err == nil || !strings.Contains(err.Error(), `channels "VA" and "A4" are the same channel 4`) || !strings.Contains(err.Error(), "three-phase.cfg") {
		t.Errorf("VA twice: %v", err)
	}
	if _, err := ReadChannels(path, Options{}, []string{"VA", "VZ"}); err == nil || !strings.Contains(err.Error(), `no analog channel "VZ"`) {
		t.Errorf("VZ: %v", err)
	}
}

// TestImportChannelsGaps: a gap in one channel drops the window for all,
// says which channel, and the kept windows are the channels' samples
// channel-major.
func TestImportChannelsGaps(t *testing.T) {
	a, b := constRec(3200, 3200, 1), constRec(3200, 3200, 2)
	a.Channel, b.Channel = "X", "Y"
	b.Samples[1000] = math.NaN() // window 1 (640..1279)
	a.finish()
	b.finish()
	imp, err := ImportChannels(context.Background(), []*Recording{a, b}, ImportOptions{Nominal: 1})
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range imp.Windows {
		if (w.Dropped != "") != (k == 1) {
			t.Errorf("window %d dropped %q, want only window 1 dropped", k, w.Dropped)
		}
	}
	if !strings.Contains(imp.Windows[1].Dropped, "channel Y: missing value") {
		t.Errorf("dropped %q, want the channel named", imp.Windows[1].Dropped)
	}
	kept := imp.Kept()
	if len(kept) != 4 {
		t.Fatalf("%d windows kept, want 4", len(kept))
	}
	for _, row := range kept {
		for j, v := range row {
			want := 1 / math.Sqrt2
			if j >= 640 {
				want = 2 / math.Sqrt2
			}
			if math.Abs(v-want) > 1e-12 {
				t.Fatalf("value %d = %g, want %g (channel %d)", j, v, want, j/640)
			}
		}
	}
	short := constRec(3000, 3200, 1)
	if _, err := ImportChannels(context.Background(), []*Recording{a, short}, ImportOptions{Nominal: 1}); err == nil || !strings.Contains(err.Error(), "share their time base") {
		t.Errorf("different lengths: %v", err)
	}
	b.Samples[1000] = 2
	b.finish()
	b.Nominal = 0
	a.Nominal, a.NominalSource = 1, "test"
	if _, err := ImportChannels(context.Background(), []*Recording{a, b}, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "channel Y: the file states no nominal value; give --nominal") {
		t.Errorf("no nominal on Y: %v", err)
	}
}

// writeCOMTRADE writes a recording of 0.2 s at 3200 Hz with the analog
// channels (id, phase, unit) to dir/name.cfg and returns its path.
func writeCOMTRADE(t *testing.T, dir, name string, chans [][3]string) string {
	t.Helper()
	n := 640
	w := &COMTRADE{Rev: 1999, FileType: ASCII, Station: "t", Device: name, LineFreq: 50,
		Segments: []Segment{{Start: 0, End: n, Rate: 3200}}, Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	for k, c := range chans {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(k + 1)
		}
		w.Analogs = append(w.Analogs, Channel{ID: c[0], Phase: c[1], Unit: c[2], A: 0.01, Primary: 230, Secondary: 230, PS: "P", Samples: x})
	}
	p := filepath.Join(dir, name+".cfg")
	if err := w.WriteFiles(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPhaseChannels: phases are matched by the cfg's ph field whatever
// the order of the channels, R,S,T / L1,L2,L3 / 1,2,3 name A,B,C, only
// voltage channels count, and what cannot be chosen is an error naming
// the file, the phase, the accepted names and the cfg's channels.
func TestPhaseChannels(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		chans  [][3]string
		phases []string
		want   []string
	}{
		{"rst", [][3]string{{"UT", "T", "kV"}, {"US", "S", "kV"}, {"UR", "R", "kV"}}, []string{"A", "B", "C"}, []string{"A3", "A2", "A1"}},
		{"l123", [][3]string{{"I1", "L1", "A"}, {"U2", "L2", "V"}, {"U1", "L1", "V"}, {"U3", "L3", "V"}}, []string{"A", "B", "C"}, []string{"A3", "A2", "A4"}},
		{"num", [][3]string{{"V3", "3", "V"}, {"V1", "1", "V"}, {"V2", "2", "V"}}, []string{"a", "b", "c"}, []string{"A2", "A3", "A1"}},
		{"abc-as-rst", [][3]string{{"VC", "c", "v"}, {"VB", "b", "V"}, {"VA", "a", "V"}}, []string{"R", "S", "T"}, []string{"A3", "A2", "A1"}},
		{"reverse", [][3]string{{"VA", "A", "V"}, {"VB", "B", "V"}, {"VC", "C", "V"}}, []string{"C", "B", "A"}, []string{"A3", "A2", "A1"}},
		{"own", [][3]string{{"VAN", "AN", "V"}, {"VBN", "BN", "V"}}, []string{"BN", "AN"}, []string{"A2", "A1"}},
	} {
		path := writeCOMTRADE(t, dir, c.name, c.chans)
		got, err := PhaseChannels(path, Options{}, c.phases)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: phases %q picked %q (%v), want %q", c.name, c.phases, got, err, c.want)
			continue
		}
		recs, err := ReadChannels(path, Options{}, got)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range recs {
			if want := c.chans[r.Index-1][0]; r.Channel != want || r.Samples[0] != float64(r.Index) {
				t.Errorf("%s: channel %d read %s = %g", c.name, k, r.Channel, r.Samples[0])
			}
		}
	}

	// The same as a .cff: the CFG section's phases.
	w := &COMTRADE{Rev: 2013, FileType: Binary, Station: "t", Device: "cff", LineFreq: 50, Segments: []Segment{{Start: 0, End: 10, Rate: 3200}},
		Analogs: []Channel{{ID: "VC", Phase: "C", Unit: "V", A: 1, Samples: make([]float64, 10)}, {ID: "VA", Phase: "A", Unit: "V", A: 1, Samples: make([]float64, 10)}}}
	b, err := w.EncodeCFF()
	if err != nil {
		t.Fatal(err)
	}
	cff := filepath.Join(dir, "x.cff")
	if err := os.WriteFile(cff, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := PhaseChannels(cff, Options{}, []string{"A", "C"}); err != nil || !slices.Equal(got, []string{"A2", "A1"}) {
		t.Errorf("cff: %q %v, want A2, A1", got, err)
	}

	noB := writeCOMTRADE(t, dir, "nob", [][3]string{{"VA", "A", "V"}, {"IB", "B", "A"}, {"VC", "C", "V"}})
	twoA := writeCOMTRADE(t, dir, "twoa", [][3]string{{"VA1", "A", "V"}, {"VA2", "A", "kV"}, {"VB", "B", "V"}})
	wav := filepath.Join(dir, "x.wav")
	wb, err := EncodeWAV(make([]float64, 100), 3200, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wav, wb, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		phases []string
		want   []string
	}{
		{noB, []string{"A", "B", "C"}, []string{"nob.cfg", `no voltage channel of phase "B"`, "accepted phase names: A,B,C; 1,2,3; R,S,T; L1,L2,L3",
			`the cfg's voltage channels are A1 "VA" phase "A" (V), A3 "VC" phase "C" (V)`, "--channel"}},
		{twoA, []string{"A", "B"}, []string{"twoa.cfg", `phase "A" names 2 voltage channels (A1 "VA1", A2 "VA2")`, "--channel"}},
		{noB, []string{"A", "a"}, []string{"nob.cfg", `phases "A" and "a" are both channel A1 "VA"`}},
		{noB, []string{"X"}, []string{"nob.cfg", `no voltage channel of phase "X"`}},
		{noB, nil, []string{"nob.cfg", "no phase given"}},
		{wav, []string{"A", "B", "C"}, []string{"x.wav", "not a COMTRADE .cfg or .cff", "--channel"}},
	} {
		_, err := PhaseChannels(c.path, Options{}, c.phases)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s phases %q: %v; want an error with %q", filepath.Base(c.path), c.phases, err, w)
			}
		}
	}
}

// TestOneChannelBytes: a one-channel import writes exactly what the code
// wrote before several channels were accepted: the SHA-256 of the files
// of `uaxai data import demo.cff` (run in testdata/recordings, so that
// import.json's source is "demo.cff") by the previous commit's binary; no
// waveforms.npy (a stale one is removed) and no channel list.
func TestOneChannelBytes(t *testing.T) {
	rec, err := Read(filepath.Join(recordingsDir(t), "demo.cff"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Path = "demo.cff"
	imp, err := Import(context.Background(), rec, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, NPYFile), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, imp); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		data.WaveformsFile: "960de5e1ccf6f3c1e8b3a62756dd91cc8a51715b258f06eac284b9fa8ba848e3",
		WindowsFile:        "547f4e5b7fcdc6fdfe80b114b2a76348618875a264bc104e1d778a993ea9fa27",
		ImportFile:         "90bbc88bd6c72018493feeec1a473be002c2fecee2386d59e749d3a1c838f305",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != want {
			t.Errorf("%s: SHA-256 %x, want %s (the one-channel output changed)", name, h, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, NPYFile)); !os.IsNotExist(err) {
		t.Errorf("waveforms.npy after a one-channel import: %v", err)
	}
}

// TestChannelSummary: the three-phase recording's voltage channels in the
// cfg's order with their RMS values (230 V on A and C; on B, sagged to
// half for 0.1 s of 0.6 s, 230 sqrt((0.5 + 0.1/4)/0.6) V), and the
// phases that import all three; a WAV has no summary.
func TestChannelSummary(t *testing.T) {
	dir := recordingsDir(t)
	chans, suggest, err := ChannelSummary(filepath.Join(dir, "three-phase.cfg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sagged := SynthNominal * math.Sqrt((0.5+0.1*ThreeSagDepth*ThreeSagDepth)/0.6)
	want := []struct {
		index int
		id    string
		rms   float64
	}{{1, "VB", sagged}, {3, "VC", SynthNominal}, {4, "VA", SynthNominal}}
	if len(chans) != len(want) {
		t.Fatalf("channels %+v, want the three voltages", chans)
	}
	for i, w := range want {
		if c := chans[i]; c.Index != w.index || c.ID != w.id || c.Unit != "V" || math.Abs(c.RMS-w.rms) > 0.05 {
			t.Errorf("channel %d: %+v, want A%d %s %.4g V", i, c, w.index, w.id, w.rms)
		}
	}
	if suggest != "A,B,C" {
		t.Errorf("suggestion %q, want A,B,C", suggest)
	}
	line := FormatChannelSummary(chans, suggest)
	for _, s := range []string{`A1 "VB" (phase B) 215.1 V rms`, `A4 "VA" (phase A) 230 V rms`, "--phases A,B,C imports the three phases"} {
		if !strings.Contains(line, s) {
			t.Errorf("summary %q lacks %q", line, s)
		}
	}
	if chans, suggest, err := ChannelSummary(filepath.Join(dir, "demo.wav"), Options{}); chans != nil || suggest != "" || err != nil {
		t.Errorf("a WAV: %v, %q, %v", chans, suggest, err)
	}
	if _, _, err := ChannelSummary(filepath.Join(dir, "nothing.cfg"), Options{}); err == nil {
		t.Error("a missing cfg: no error")
	}
}
