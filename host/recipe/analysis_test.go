package recipe

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const analysisTables = `
[paper]
tables = ["tab:sensitivity", "tab:calibration"]

[sensitivity]
distortions = ["noise 30", "amplitude 0.95", "shift -4"]

[calibration]
levels = [0.5, 0.9]
build = 10

[agreement]
etas = [0.5, 1]
deltas = [0, 0.1]

[bound]
delta = 0.1

[total_variance]
repeats = 3

[figures]
qualitative = ["sag", "swell"]
perclass = true

[output]
maps = true
`

func TestAnalysisTables(t *testing.T) {
	r, err := Parse("a.toml", []byte(minimal+analysisTables), "")
	if err != nil {
		t.Fatal(err)
	}
	a := r.Analysis
	want := Analysis{
		Paper:         []string{"tab:sensitivity", "tab:calibration"},
		Sensitivity:   &Sensitivity{Records: "correct", Distortions: []Distortion{{DistortNoise, 30}, {DistortAmplitude, 0.95}, {DistortShift, -4}}},
		Calibration:   &Calibration{Levels: []float64{0.5, 0.9}, Build: 10, Partitions: 100},
		Agreement:     &Agreement{Etas: []float64{0.5, 1}, Deltas: []float64{0, 0.1}},
		Bound:         &Bound{Delta: 0.1},
		TotalVariance: &TotalVariance{Repeats: 3},
		Figures:       &Figures{Qualitative: []string{"sag", "swell"}, PerClass: true},
		Output:        Output{Maps: true},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("decoded %+v\nwant %+v", a, want)
	}
	if a.Empty() {
		t.Error("Empty() of a full analysis")
	}
	c := checkCanonical(t, r, "")
	if !strings.Contains(string(c), `distortions = ["noise 30", "amplitude 0.95", "shift -4"]`) {
		t.Errorf("canonical form:\n%s", c)
	}
	m, err := Parse("m.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Analysis.Empty() {
		t.Errorf("a recipe without analysis tables: %+v", m.Analysis)
	}
	if m.Hash() == r.Hash() || m.Hash(FitParts...) != r.Hash(FitParts...) {
		t.Error("the analysis tables must change the result hash and not the fit hash")
	}
}

func TestAnalysisErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"[paper]\ntables = [\"tab:nope\"]", `: element 0 of key "tables" in [paper]: unknown table "tab:nope" (accepted: tab:bnn_results`},
		{"[paper]\ntables = [\"tab:calibration\", \"tab:calibration\"]", "listed twice"},
		{"[sensitivity]\ndistortions = [\"blur 3\"]", `unknown distortion "blur"`},
		{"[sensitivity]\ndistortions = [\"noise\"]", `is not a distortion (accepted: "noise <SNR dB>"`},
		{"[sensitivity]\ndistortions = [\"shift 0.5\"]", "whole number of samples"},
		{"[sensitivity]\ndistortions = [\"shift 0\"]", "not 0"},
		{"[sensitivity]\ndistortions = [\"noise -3\"]", "> 0 dB"},
		{"[sensitivity]\ndistortions = [\"amplitude x\"]", `"x" is not a number`},
		{"[sensitivity]\ndistortions = [\"noise 20\", \"noise 20\"]", "listed twice"},
		{"[sensitivity]\ndistortions = []", "distortions is missing or empty"},
		{"[sensitivity]\ndistortions = [\"noise 20\"]\nrecords = \"some\"", `records" in [sensitivity]: "some" (accepted: "correct"`},
		{"[calibration]\nlevels = [1.0]", "is not a band level (accepted: 0 < level < 1)"},
		{"[calibration]\nlevels = []", "is empty"},
		{"[calibration]\nbuild = 1", "cannot build a band"},
		{"[calibration]\npartitions = 0", "(accepted: >= 1)"},
		{"[calibration]\nlevel = [0.5]", `unknown key "level" in [calibration]`},
		{"[agreement]\netas = [1.5]", "(accepted: 0 <= eta <= 1)"},
		{"[agreement]\ndeltas = []", "must not be empty"},
		{"[bound]\ndelta = 1", "(accepted: 0 < delta < 1"},
		{"[total_variance]\nrepeats = 1", "(accepted: 2..1000"},
		{"[figures]\nperclass = 1", "want true or false"},
		{"[output]\nmaps = \"yes\"", "want true or false"},
		{"[[output]]\nmaps = true", "output must be a table"},
	} {
		src := minimal + "\n" + c.src + "\n"
		_, err := Parse("a.toml", []byte(src), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.src, err, c.want)
			continue
		}
		// The error names the line of the table's last key.
		line := strings.Count(minimal, "\n") + 1 + strings.Count(c.src, "\n") + 1
		if !strings.Contains(err.Error(), fmt.Sprintf("line %d:", line)) && !strings.Contains(err.Error(), fmt.Sprintf("line %d:", line-1)) {
			t.Errorf("%q: error %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

func TestRecordingTable(t *testing.T) {
	src := minimal + "\n[recording]\nfile = \"rec/demo.cfg\"\nchannel = \"Va\"\nnominal = 230.0\n\n[figures]\nqualitative = [\"all\"]\n"
	r, err := Parse("r.toml", []byte(src), "/data")
	if err != nil {
		t.Fatal(err)
	}
	want := &Recording{File: "/data/rec/demo.cfg", Channel: "Va", Nominal: 230}
	if !reflect.DeepEqual(r.Recording, want) {
		t.Errorf("recording %+v, want %+v", r.Recording, want)
	}
	c := checkCanonical(t, r, "/data")
	if !strings.Contains(string(c), `file = "/data/rec/demo.cfg"`) {
		t.Errorf("canonical:\n%s", c)
	}
	for _, c := range []struct{ src, want string }{
		{"[recording]\nchannel = \"1\"", `missing key "file"`},
		{"[recording]\nfile = \"a.wav\"\nnominal = -1", "(accepted: the nominal RMS value > 0"},
		{"[recording]\nfile = \"a.wav\"\nhop = -1", "(accepted: samples > 0"},
		{"[recording]\nfile = \"a.wav\"\nrate = -3", "(accepted: a rate in Hz > 0"},
		{"[recording]\nfile = \"a.wav\"\n[sensitivity]\ndistortions = [\"noise 30\"]", "[sensitivity] needs labelled records with masks"},
		{"[recording]\nfile = \"a.wav\"\n[figures]\nqualitative = [\"sag\"]", "a recording has no classes"},
		{"[recording]\nfile = \"a.wav\"\nchanel = \"1\"", `unknown key "chanel" in [recording]`},
	} {
		if _, err := Parse("r.toml", []byte(minimal+"\n"+c.src+"\n"), ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
