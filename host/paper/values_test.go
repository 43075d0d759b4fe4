package paper

import (
	"math"
	"strings"
	"testing"
)

// Every table of the paper's Section 5 is there, each row complete.
func TestEveryTableParses(t *testing.T) {
	want := map[string][2]int{ // rows, columns
		"tab:bnn_results": {4, 6}, "tab:xai_results": {3, 5}, "tab:uarao_results": {8, 5},
		"tab:perclass_bnn": {15, 5}, "tab:perclass_xai": {15, 4}, "tab:perclass_uarao": {15, 9},
		"tab:sensitivity": {12, 6}, "tab:calibration": {7, 5},
	}
	if got := IDs(); len(got) != len(want) {
		t.Fatalf("tables %v, want %d", got, len(want))
	}
	for id, rc := range want {
		tb, err := Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(tb.Rows) != rc[0] || len(tb.Header) != rc[1] {
			t.Errorf("%s: %d rows x %d columns, want %d x %d", id, len(tb.Rows), len(tb.Header), rc[0], rc[1])
		}
	}
	if _, err := Lookup("tab:nope"); err == nil || !strings.Contains(err.Error(), "tab:bnn_results") {
		t.Errorf("unknown table: %v", err)
	}
}

// The paper's own cross-references hold in the transcription: the
// ensemble-occlusion-mean configuration is the same row of tab:bnn_results
// and tab:uarao_results, the same column of both per-class tables, and
// its disc-7 IoU is the mean of its seven per-class IoUs.
func TestTheTranscriptionAgreesWithItself(t *testing.T) {
	bnn, _ := Lookup("tab:bnn_results")
	uarao, _ := Lookup("tab:uarao_results")
	for _, col := range []string{"RMA", "IoU", "RMA (disc-7)", "IoU (disc-7)"} {
		a, ok1 := bnn.Cell([]string{"posterior.ensemble"}, col)
		b, ok2 := uarao.Cell([]string{"summary.mean"}, col)
		if !ok1 || !ok2 || a != b {
			t.Errorf("%s: bnn ensemble %v (%v), uarao mean %v (%v)", col, a, ok1, b, ok2)
		}
	}
	pb, _ := Lookup("tab:perclass_bnn")
	pu, _ := Lookup("tab:perclass_uarao")
	disc7 := []string{"impulsive_transient", "interruption", "notch", "oscillatory_transient", "sag", "spike", "swell"}
	sum := 0.0
	for _, c := range disc7 {
		a, ok1 := pb.Cell([]string{c}, "Deep ensemble")
		b, ok2 := pu.Cell([]string{c}, "Mean")
		if !ok1 || !ok2 {
			t.Fatalf("%s: missing (%v %v)", c, ok1, ok2)
		}
		if a.Mean != b.Mean {
			t.Errorf("%s: per-class ensemble %v, per-class mean summary %v", c, a, b)
		}
		sum += a.Mean
	}
	d7, _ := bnn.Cell([]string{"Deep ens."}, "IoU (disc-7)")
	if got := sum / 7; math.Abs(got-d7.Mean) > 0.001 { // per-class cells have 3 decimals
		t.Errorf("macro of the per-class disc-7 IoU %.4f, table %.4f", got, d7.Mean)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Deterministic baseline", "deterministic"}, {"Det.", "deterministic"}, {"posterior.deterministic", "deterministic"},
		{"Deep ens.", "ensemble"}, {"Deep ensemble (LOO min-max)", "ensemble"}, {"MC Drop.", "mcdropout"}, {"MC Dropout", "mcdropout"},
		{"Grad-CAM", "gradcam"}, {"explainer.lime", "lime"}, {"Coeff. var.", "cv"}, {"Coeff. variation", "cv"},
		{"5% quantile", "q05"}, {"95%", "q95"}, {"50% quantile", "q50"}, {"q05", "q05"}, {"q5", ""}, {"qab", ""}, {"Noise 30 dB", ""}, {"0.50", ""}, {"150%", ""},
	} {
		if got := Method(c.in); got != c.want {
			t.Errorf("Method(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for a, want := range map[float64]string{0.05: "q05", 0.25: "q25", 0.5: "q50", 0.95: "q95", 0.125: "", 1: "", 0: ""} {
		if got := QuantileKey(a); got != want {
			t.Errorf("QuantileKey(%v) = %q, want %q", a, got, want)
		}
	}
	if Class("Imp. trans.") != "impulsive_transient" || Class("sag_harmonics") != "sag_harmonics" || Class("Sag+Harm.") != "sag_harmonics" || Class("normal") != "" {
		t.Error("Class")
	}
}

func TestCellLookup(t *testing.T) {
	s, _ := Lookup("tab:sensitivity")
	v, ok := s.Cell([]string{"Shift -4 samples", "disc-7"}, "Top-L stability")
	if !ok || v.Mean != 0.729 || v.SD != 0.010 || !v.HasSD {
		t.Errorf("sensitivity cell %+v %v", v, ok)
	}
	c, _ := Lookup("tab:calibration")
	v, ok = c.Cell([]string{"MC Dropout", "0.80"}, "Reference")
	if !ok || v.Mean != 0.730 || v.HasSD {
		t.Errorf("calibration cell %+v %v", v, ok)
	}
	if _, ok := c.Cell([]string{"MC Dropout"}, "Reference"); ok {
		t.Error("a key of the wrong length matched")
	}
	if _, ok := c.Cell([]string{"MC Dropout", "0.80"}, "Band level"); ok {
		t.Error("a key column is not a value")
	}
	for _, bad := range []string{"", "x", "1 ± ", "1 ± -2", "NaN"} {
		if _, err := ParseValue(bad); err == nil {
			t.Errorf("ParseValue(%q) accepted", bad)
		}
	}
	if _, _, err := parse("== a\nh | i\nr | 1 | 2\n"); err == nil || !strings.Contains(err.Error(), "line 3: 3 cells") {
		t.Errorf("short row: %v", err)
	}
	if _, _, err := parse("r | 1\n"); err == nil {
		t.Error("a row before a table")
	}
	if _, _, err := parse("== a\nh | i\n== a\n"); err == nil {
		t.Error("a table twice")
	}
}

func TestLoadError(t *testing.T) {
	if _, err := load(); err != nil {
		t.Fatal(err)
	}
}

// Boundaries of the names (mutants that lived).
func TestNameBoundaries(t *testing.T) {
	for in, want := range map[string]string{"q25": "q25", "q99": "q99", "q01": "q01", "q00": "", "1%": "q01", "99%": "q99", "0%": "", "100%": "", "25 % quantile": "q25"} {
		if got := Method(in); got != want {
			t.Errorf("Method(%q) = %q, want %q", in, got, want)
		}
	}
	for a, want := range map[float64]string{0.01: "q01", 0.99: "q99", 0.05 + 5e-12: "q05", 0.05 + 5e-10: "", 0.004: "", 0.996: ""} {
		if got := QuantileKey(a); got != want {
			t.Errorf("QuantileKey(%v) = %q, want %q", a, got, want)
		}
	}
	// norm keeps a-z, 0-9, '+', '-', '.', and what is not ASCII.
	if got := norm("Az09+-.é/:@[`{~_ "); got != "az09+-.é" {
		t.Errorf("norm = %q", got)
	}
	bnn, _ := Lookup("tab:bnn_results")
	if _, ok := bnn.Cell([]string{"Deep ensemble"}, "No such column"); ok {
		t.Error("an unknown column matched")
	}
	if _, _, err := parse("== a\nh | i\n== a\n"); err == nil || !strings.Contains(err.Error(), "line 3: table a twice") {
		t.Errorf("a table twice: %v", err)
	}
	if _, _, err := parse("# c\nr | 1\n"); err == nil || !strings.Contains(err.Error(), "line 2: a row before") {
		t.Errorf("a row before a table: %v", err)
	}
}
