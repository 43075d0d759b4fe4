package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
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
