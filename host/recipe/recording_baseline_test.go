package recipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordingBaseline: in a [recording] recipe an occlusion table
// without `baseline` gets baseline = "fundamental" with the windows'
// period (samples a cycle: fs/f0 of generated data, in_len/10 of a
// model read from files), said to come from [recording] and written in
// the canonical recipe; a table that sets baseline keeps it, so does one
// that sets period; without [recording] nothing changes; other
// explainers are left alone.
func TestRecordingBaseline(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rec.cfg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := "[recording]\nfile = \"rec.cfg\"\nnominal = 230.0\n"
	two := strings.Replace(minimal, "[[summary]]", "[[explainer]]\nuse = \"occlusion\"\nlabel = \"zero\"\nbaseline = 0.0\n[[explainer]]\nuse = \"saliency\"\n[[summary]]", 1)
	r, err := Parse("r.toml", []byte(two+rec), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Explainers) != 3 {
		t.Fatalf("%d explainers", len(r.Explainers))
	}
	e := r.Explainers[0]
	if e.Config["baseline"] != "fundamental" || e.Config["period"] != 3200.0/50 || len(e.From["baseline"]) != 1 || e.From["baseline"][0] != "recording" {
		t.Errorf("occlusion without baseline: config %v from %v, want baseline fundamental, period 64, from [recording]", e.Config, e.From)
	}
	if v, ok := r.Explainers[1].Config["baseline"]; !ok || v != 0.0 || r.Explainers[1].From != nil {
		t.Errorf("occlusion with baseline = 0.0: config %v, from %v; want it kept", r.Explainers[1].Config, r.Explainers[1].From)
	}
	if len(r.Explainers[2].Config) != 0 {
		t.Errorf("saliency: config %v, want none", r.Explainers[2].Config)
	}
	canon := string(checkCanonical(t, r, dir))
	if !strings.Contains(canon, `baseline = "fundamental"`) || !strings.Contains(canon, "period = 64.0") {
		t.Errorf("canonical recipe does not record the baseline:\n%s", canon)
	}

	// A 60 Hz generator at 3840 Hz: 64 samples a cycle; files and a
	// model of 600 samples: 60.
	r, err = Parse("r.toml", []byte(minimal+"[data]\nf0 = 60.0\nfs = 3840.0\n"+rec), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Explainers[0].Config["period"]; p != 64.0 {
		t.Errorf("60 Hz at 3840 Hz: period %v, want 64", p)
	}
	for _, sub := range []string{"train", "test"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
		for _, f := range []string{"waveforms.csv", "labels.csv"} {
			os.WriteFile(filepath.Join(dir, sub, f), nil, 0o644)
		}
	}
	files := strings.Replace(threeModel(1), "in_len = 640", "in_len = 600", 1)
	r, err = Parse("r.toml", []byte(minimal+files+rec), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Explainers[0].Config["period"]; p != 60.0 {
		t.Errorf("in_len 600 from files: period %v, want 60", p)
	}

	// A period set, and no [recording]: kept, and nothing added.
	r, err = Parse("r.toml", []byte(strings.Replace(minimal, "use = \"occlusion\"", "use = \"occlusion\"\nperiod = 80.0", 1)+rec), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Explainers[0].Config; c["baseline"] != "fundamental" || c["period"] != 80.0 || r.Explainers[0].From["period"] != nil {
		t.Errorf("period = 80.0 set: config %v from %v, want it kept", c, r.Explainers[0].From)
	}
	r, err = Parse("r.toml", []byte(minimal), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Explainers[0].Config["baseline"]; ok {
		t.Errorf("without [recording]: config %v, want no baseline added", r.Explainers[0].Config)
	}
}
