package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestQuickstartSameBytesOnEveryKernelPath runs recipes/quickstart.toml,
// shrunk (16 training waveforms a class, 3 epochs, 4 test records a
// class, occlusion stride 20) but otherwise as shipped, once on each
// kernel path (UAXAI_KERNELS=avx2 where the CPU has it, and portable):
// its training, occlusion maps, summaries and scores give the same
// results.json, records.csv and tables.md bytes.
func TestQuickstartSameBytesOnEveryKernelPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("one kernel path on this CPU: no AVX2+FMA")
	}
	t.Parallel()
	exe := buildUaxai(t)
	dir := t.TempDir()
	body := string(must(os.ReadFile("../../recipes/quickstart.toml")))
	for _, r := range [][2]string{
		{"train_per_class = 400", "train_per_class = 16"},
		{"test_per_class = 20", "test_per_class = 4"},
		{"epochs = 30", "epochs = 3"},
		{"stride = 1\n", "stride = 20\n"},
	} {
		if !strings.Contains(body, r[0]) {
			t.Fatalf("recipes/quickstart.toml has no %q to shrink", r[0])
		}
		body = strings.Replace(body, r[0], r[1], 1)
	}
	rec := filepath.Join(dir, "quickstart.toml")
	if err := os.WriteFile(rec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{}
	for _, k := range []string{"avx2", "portable"} {
		runs[k] = filepath.Join(dir, k)
		uaxaiEnv(t, exe, []string{"UAXAI_KERNELS=" + k}, "run", rec, "--run-dir", runs[k], "--no-cache")
		man := string(must(os.ReadFile(filepath.Join(runs[k], "manifest.json"))))
		if !strings.Contains(man, `"kernels": "`+k+`"`) {
			t.Fatalf("the %s run's manifest.json does not name its kernels", k)
		}
	}
	sameResults(t, "the quickstart on the portable kernels", runs["portable"], runs["avx2"])
}
