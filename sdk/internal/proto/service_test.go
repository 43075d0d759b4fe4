package proto

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestPythonKitHasTheServiceBounds: the Python kit splits its requests by
// the same bounds as the host enforces (its model.py states them again).
func TestPythonKitHasTheServiceBounds(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "python", "uaxai_plugin", "model.py"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"INPUTS": MaxServiceInputs, "VALUES": MaxServiceValues, "STARTS": MaxServiceStarts,
		"WINDOWS": MaxServiceWindows, "PERTURBATIONS": MaxServicePerturbations, "PAIRS": MaxServicePairs,
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^MAX_SERVICE_(\w+) = 1 << (\d+)$`).FindAllStringSubmatch(string(src), -1) {
		e, _ := strconv.Atoi(m[2])
		got[m[1]] = 1 << e
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("model.py MAX_SERVICE_%s = %d; the host's bound is %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("model.py states %d bounds %v; want the %d of service.go", len(got), got, len(want))
	}
}

// TestMaxServiceBatch: x of MaxServiceBatch(n) inputs fits the values
// bound, and one more input would not (or the inputs bound binds).
func TestMaxServiceBatch(t *testing.T) {
	for _, n := range []int{1, 31, 32, 33, 640, 3 * 640, MaxServiceValues, MaxServiceValues + 1} {
		b := MaxServiceBatch(n)
		if b*n > MaxServiceValues || b > MaxServiceInputs {
			t.Errorf("n %d: %d inputs are %d values; past the bounds", n, b, b*n)
		}
		if b < MaxServiceInputs && (b+1)*n <= MaxServiceValues {
			t.Errorf("n %d: %d inputs; %d would fit", n, b, b+1)
		}
	}
}
